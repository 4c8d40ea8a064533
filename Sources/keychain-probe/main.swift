// keychain-probe: a second process for the integration tests. It uses KeychainStorage<String>
// exactly as an app would, so tests can check what another process sees and does.
//
//   keychain-probe get ACCOUNT              prints the stored string; exit 1 when there is none
//   keychain-probe save ACCOUNT VALUE
//   keychain-probe delete ACCOUNT
//   keychain-probe hammer ACCOUNT PREFIX N  N saves of PREFIX-0 … PREFIX-(N-1), in order
// Options (before the command): --service S, --collection C, --timeout-ms N, --no-prompt, --encrypt
// (SecuredKeyEncryptor).
// Errors: exit 3, stderr "error: KIND: message" (KIND is KeychainError.kind).
import Foundation
import PingStorage

@main
struct Probe {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var configuration = KeychainConfiguration()
        var encrypt = false
        while let option = arguments.first, option.hasPrefix("--") {
            arguments.removeFirst()
            switch option {
            case "--service": configuration.service = take(&arguments)
            case "--collection":
                let name = take(&arguments)
                configuration.collection = name.hasPrefix("/") ? .path(name) : name == "default" ? .default
                    : name == "session" ? .session : .alias(name)
            case "--timeout-ms": configuration.timeout = .milliseconds(Int(take(&arguments)) ?? 25_000)
            case "--no-prompt": configuration.allowsPrompts = false
            case "--encrypt": encrypt = true
            default: usage()
            }
        }
        guard arguments.count >= 2 else { usage() }
        let encryptor: any Encryptor = encrypt ? SecuredKeyEncryptor(configuration: configuration)! : NoEncryptor()
        let storage = KeychainStorage<String>(account: arguments[1], encryptor: encryptor, configuration: configuration)
        do {
            switch (arguments[0], arguments.count) {
            case ("get", 2):
                guard let value = try await storage.get() else { exit(1) }
                print(value)
            case ("save", 3):
                try await storage.save(item: arguments[2])
            case ("delete", 2):
                try await storage.delete()
            case ("hammer", 4):
                for index in 0..<(Int(arguments[3]) ?? 0) {
                    try await storage.save(item: "\(arguments[2])-\(index)")
                }
            default:
                usage()
            }
        } catch let error as KeychainError {
            FileHandle.standardError.write(Data("error: \(error.kind): \(error.errorMessage)\n".utf8))
            exit(3)
        } catch let error as EncryptorError {
            FileHandle.standardError.write(Data("error: encryptor: \(error.errorMessage)\n".utf8))
            exit(4)
        } catch {
            FileHandle.standardError.write(Data("error: other: \(error)\n".utf8))
            exit(3)
        }
    }

    static func take(_ arguments: inout [String]) -> String {
        guard !arguments.isEmpty else { usage() }
        return arguments.removeFirst()
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("usage: keychain-probe [--service S] [--collection C] [--timeout-ms N] [--no-prompt] [--encrypt] get|save|delete|hammer ACCOUNT [VALUE | PREFIX N]\n".utf8))
        exit(2)
    }
}
