// TokenVault: save, show and delete an OAuth token with KeychainStorage and SecuredKeyEncryptor.
//
//     TokenVault save ACCESS_TOKEN REFRESH_TOKEN [SECONDS]   store a token that expires in SECONDS (3600)
//     TokenVault show                                        say whether a token is stored, and until when
//     TokenVault delete                                      delete it (succeeds when there is none)
//
// Exit status: 0 done, 1 no token stored (show), 2 usage, 3 the keyring refused.
import Foundation
import PingStorage

/// What an app keeps after a login.
struct Token: Codable, Sendable {
    var accessToken: String
    var refreshToken: String
    var expiresAt: Date
}

@main
struct TokenVault {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let storage = makeStorage()
        do {
            switch arguments.first {
            case "save" where arguments.count == 3 || arguments.count == 4:
                let seconds = arguments.count == 4 ? TimeInterval(arguments[3]) : 3600
                guard let seconds, seconds > 0 else { usage("SECONDS must be a positive number") }
                let token = Token(accessToken: arguments[1], refreshToken: arguments[2],
                                  expiresAt: Date(timeIntervalSinceNow: seconds))
                try await storage.save(item: token)
                print("Saved a token that expires at \(token.expiresAt).")
            case "show" where arguments.count == 1:
                guard let token = try await storage.get() else {
                    print("No token stored.")
                    exit(1)
                }
                let state = token.expiresAt > Date() ? "valid until" : "expired at"
                print("A token is stored, \(state) \(token.expiresAt) (access token: \(token.accessToken.count) characters).")
            case "delete" where arguments.count == 1:
                try await storage.delete()
                print("Deleted (or there was no token).")
            default:
                usage(nil)
            }
        } catch {
            FileHandle.standardError.write(Data("TokenVault: \(explain(error))\n".utf8))
            exit(3)
        }
    }

    /// The token's storage: encrypted, and with a cache so that reads after a save stay in memory.
    static func makeStorage() -> KeychainStorage<Token> {
        #if os(Linux)
        // Linux only: a `service` attribute of the app's own, and a locked keyring reported at
        // once instead of an unlock prompt (a command-line tool may have no one to answer it).
        // The encryption key lives in the same collection as the item.
        let configuration = KeychainConfiguration(service: "com.example.TokenVault", allowsPrompts: false)
        return KeychainStorage<Token>(account: "ACCESS_TOKEN_STORAGE",
                                      encryptor: SecuredKeyEncryptor(configuration: configuration) ?? NoEncryptor(),
                                      cacheStrategy: .CACHE, configuration: configuration)
        #else
        return KeychainStorage<Token>(account: "ACCESS_TOKEN_STORAGE",
                                      encryptor: SecuredKeyEncryptor() ?? NoEncryptor(), cacheable: true)
        #endif
    }

    /// What to tell the user about `error`.
    static func explain(_ error: any Error) -> String {
        switch error {
        case let error as KeychainError:
            #if os(Linux)
            // The iOS case says which operation failed; on Linux its reason says why.
            switch error.reason {
            case .locked, .promptDismissed:
                return "the keyring is locked. Unlock it (log in to the desktop, or open Seahorse or KeePassXC) and run again."
            case .noSessionBus, .noSecretService, .collectionNotFound:
                return "no usable keyring: \(error.errorMessage)"
            case .timedOut:
                return "the keyring did not answer in time: \(error.errorMessage)"
            case .corruptItem:
                return "the stored token is damaged; 'TokenVault delete' removes it."
            default:
                return "keyring error (\(error.kind)): \(error.errorMessage)"
            }
            #else
            return error.errorMessage
            #endif
        case let error as EncryptorError:
            return "the token cannot be decrypted: \(error.errorMessage)"
        default:
            return "\(error)"
        }
    }

    static func usage(_ problem: String?) -> Never {
        if let problem { FileHandle.standardError.write(Data("TokenVault: \(problem)\n".utf8)) }
        FileHandle.standardError.write(Data("usage: TokenVault save ACCESS_TOKEN REFRESH_TOKEN [SECONDS] | show | delete\n".utf8))
        exit(2)
    }
}
