// The README's main job: store a realistic OIDC token set in the keyring with KeychainStorage,
// read it back, show where it lives (never the secret), and delete it.
import Foundation
import PingStorage

/// What an OIDC client keeps after a login: the SDK stores this under ACCESS_TOKEN_STORAGE.
struct TokenSet: Codable, Sendable, Equatable {
    var accessToken: String
    var refreshToken: String
    var idToken: String
    var tokenType: String
    var scope: String
    var expiresIn: Int
    var expiresAt: Date
}

/// A JWT-shaped string of about `length` characters (random, signs nothing).
func fakeJWT(subject: String, length: Int) -> String {
    func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
    let header = base64url(Data(#"{"alg":"RS256","kid":"demo"}"#.utf8))
    let claims = base64url(Data(#"{"sub":"\#(subject)","iss":"https://auth.example.com/as","aud":"demo-app"}"#.utf8))
    let signature = base64url(Data((0..<max(16, length / 2)).map { _ in UInt8.random(in: 0...255) }))
    return String("\(header).\(claims).\(signature)".prefix(length))
}

@main
struct Demo {
    static func main() async {
        // The app's identity, set at start-up as a bundle identifier is: its items are its own.
        try? AppIdentity.set("com.pingidentity.PingStorage.demo")
        // A service of its own, so the demo never touches a real app's ACCESS_TOKEN_STORAGE item.
        let configuration = KeychainConfiguration(service: "com.pingidentity.PingStorage.demo")
        let storage = KeychainStorage<TokenSet>(account: "ACCESS_TOKEN_STORAGE", configuration: configuration)
        let tokens = TokenSet(
            accessToken: fakeJWT(subject: "demo-user", length: 1100),
            refreshToken: UUID().uuidString + UUID().uuidString,
            idToken: fakeJWT(subject: "demo-user", length: 900),
            tokenType: "Bearer", scope: "openid profile email offline_access", expiresIn: 3600,
            expiresAt: Date(timeIntervalSinceNow: 3600).roundedToSeconds)

        do {
            print("PingStorage demo: KeychainStorage<TokenSet>(account: \"ACCESS_TOKEN_STORAGE\")")
            print("  service attribute: \(configuration.service), app: \(configuration.appIdentity), collection: \(configuration.collection)")

            try await storage.save(item: tokens)
            print("1. saved an OIDC token set (access, refresh and ID token, expiry)")

            guard let readBack = try await storage.get() else {
                fail("the item just saved was not found")
            }
            guard readBack == tokens else { fail("the token set read back differs from the one saved") }
            print("2. read it back: identical (\(readBack.tokenType) token, expires \(readBack.expiresAt))")

            if let info = try await storage.itemInfo() {
                print("3. where it lives in the Secret Service:")
                print("     collection: \(info.collection)")
                print("     item:       \(info.location)")
                print("     label:      \(info.label)")
                for (name, value) in info.attributes.sorted(by: { $0.key < $1.key }) {
                    print("     attribute   \(name) = \(value)")
                }
                print("     created:    \(info.created), modified: \(info.modified)")
                print("     secret:     not shown (the token set's JSON, stored as text/plain)")
            }

            try await storage.delete()
            let afterDelete = try await storage.get()
            guard afterDelete == nil else { fail("the item is still there after delete") }
            print("4. deleted it; get() now returns nil")
        } catch let error as KeychainError {
            fail("\(error.kind): \(error.errorMessage)")
        } catch {
            fail("\(error)")
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("pingstorage-demo: \(message)\n".utf8))
        exit(1)
    }
}

extension Date {
    var roundedToSeconds: Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded()) }
}
