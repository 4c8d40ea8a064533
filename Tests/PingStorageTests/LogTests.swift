import FileKeyring
import Foundation
import Locking
import SecretService
import Testing
@testable import PingStorage

/// Collects every message PingStorage logs while it is installed.
private final class LogRecorder: Sendable {
    let lines = Locked<[String]>([])
    let id = Locked<Int?>(nil)
    func install() { id.withLock { $0 = Log.addObserver { [lines] line in lines.withLock { $0.append(line) } } } }
    func uninstall() { id.withLock { $0 }.map(Log.removeObserver) }
    var all: [String] { lines.withLock { $0 } }
}

/// The forms a secret could take in a message.
private func forms(_ bytes: Data) -> [String] {
    [String(decoding: bytes, as: UTF8.self), bytes.base64EncodedString(), bytes.map { String(format: "%02x", $0) }.joined(),
     bytes.map { String(format: "%02X", $0) }.joined()].filter { $0.count >= 8 }
}

@Suite("The log: what a support engineer needs, never a secret", .serialized)
struct LogTests {
    @Test func operationsDuplicatesAdoptionAndFailuresAreLoggedWithoutTheirSecrets() async throws {
        let recorder = LogRecorder()
        recorder.install()
        defer { recorder.uninstall() }
        let marker = "s3cret-\(UUID().uuidString)"
        let fake = FakeSecretService()
        let account = "log-\(UUID().uuidString.prefix(8))"
        let service = KeychainConfiguration.defaultService
        // Another tool's item, and two items of the app's own without our label and attributes (a
        // crashed process's duplicates), all holding the secret.
        let own = ["service": service, "account": account, AppIdentity.attribute: AppIdentity.current.id]
        fake.seed(attributes: ["service": service, "username": account], secret: "\"\(marker)-old\"", label: "python")
        fake.seed(attributes: own, secret: "\"\(marker)-dup\"", label: "dup", modifiedOffset: -5)
        fake.seed(attributes: own, secret: "\"\(marker)-dup2\"", label: "dup2", modifiedOffset: -8, createdOffset: -8)
        let storage = KeychainStorage<String>(account: account, encryptor: NoEncryptor(), cacheStrategy: .NO_CACHE,
                                              configuration: KeychainConfiguration(), backend: fake)
        #expect(try await storage.get()?.hasPrefix(marker) == true)
        try await storage.save(item: marker)
        #expect(try await storage.get() == marker)
        // A failure: the keyring locked, and no prompt.
        fake.state.withLock { $0.collectionLocked = true; $0.promptsUnlock = false }
        _ = try? await storage.get()
        fake.state.withLock { $0.collectionLocked = false }
        try await storage.delete()

        let lines = recorder.all.filter { $0.contains(account) }
        #expect(lines.contains { $0.contains("giving the app's item") && $0.contains("PingStorage's label") }, "\(lines)")
        #expect(lines.contains { $0.contains("removing the duplicate item") })
        #expect(lines.contains { $0.contains("read of account '\(account)'") && $0.hasSuffix(" ms") })
        // The logger appends the error's description, now its iOS name alone: what it says is in
        // the message itself.
        #expect(lines.contains { $0.contains("failed: locked: ") && $0.lowercased().contains("locked") && $0.count > 120 },
                "what the error says is in the line: \(lines)")
        for line in recorder.all {
            for form in forms(Data(marker.utf8)) { #expect(!line.contains(form), "a secret in the log: \(line)") }
        }
    }

    @Test func theFileKeyringAndItsEncryptionKeyAreLoggedWithoutTheirSecrets() async throws {
        let recorder = LogRecorder()
        recorder.install()
        defer { recorder.uninstall() }
        let file = try TestFileKeyring()
        defer { file.remove() }
        let marker = "s3cret-\(UUID().uuidString)"
        let encryptor = try #require(file.encryptor())
        let storage = file.storage(String.self, account: "filelog", encryptor: encryptor)
        try await storage.save(item: marker)
        #expect(try await storage.get() == marker)
        let key = try #require(try file.keyring.items().first { $0.attributes["xdg:schema"] == KeyVault.schema })
        let keyBytes = key.secret.withBytes { span in Data((0..<span.count).map { span[$0] }) }
        let lines = recorder.all
        #expect(lines.contains { $0.contains("kept in the file keyring \(file.path)") }, "\(lines)")
        #expect(lines.contains { $0.contains("creating key \(key.attributes["key-id"]!)") })
        for line in lines {
            for form in forms(Data(marker.utf8)) + forms(keyBytes) { #expect(!line.contains(form), "a secret in the log: \(line)") }
        }
    }
}
