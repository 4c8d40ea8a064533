import Foundation
import Locking
@testable import PingStorage
import SecretService
import Testing

extension Integration {
    @Suite("The log against the provider")
    struct Logging {
        @Test func providerEventsReachTheLogAndSecretsNever() async throws {
            let lines = Locked<[String]>([])
            let observer = Log.addObserver { line in lines.withLock { $0.append(line) } }
            defer { Log.removeObserver(observer) }
            let marker = "s3cret-\(UUID().uuidString)"
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account, encryptor: SecuredKeyEncryptor() ?? NoEncryptor())
            try await storage.save(item: marker)
            #expect(try await storage.get() == marker)
            try await storage.delete()
            let logged = lines.withLock { $0 }
            // SecretService's own events (each call's duration) are forwarded.
            #expect(logged.contains { $0.hasPrefix("PingStorage: read secret: ") && $0.hasSuffix(" ms") }, "\(logged)")
            #expect(logged.contains { $0.contains("save of account '\(account)'") })
            let forms = [marker, Data(marker.utf8).base64EncodedString(), Data(marker.utf8).map { String(format: "%02x", $0) }.joined()]
            for line in logged {
                for form in forms { #expect(!line.contains(form), "a secret in the log: \(line)") }
            }
        }
    }
}
