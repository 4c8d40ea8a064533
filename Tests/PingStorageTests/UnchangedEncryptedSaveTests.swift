import FileKeyring
import Foundation
import PingStorageCrypto
import SecretService
import Testing
@testable import PingStorage

/// An unchanged save writes nothing with SecuredKeyEncryptor too: the stored envelope is opened and
/// its plaintext compared (every envelope differs: GCM's nonce is random); anything else is written.
@Suite("Unchanged encrypted saves")
struct UnchangedEncryptedSaveTests {
    /// The app's own item of the account (a save writes only into the app's own).
    private let attributes = ["service": "com.pingidentity.keychainService", "account": "acct",
                              AppIdentity.attribute: AppIdentity.current.id]

    @Test func onTheSecretServiceAnUnchangedValueIsNotWrittenAndAChangedOneIs() async throws {
        let fake = FakeSecretService()
        let encryptor = try #require(SecuredKeyEncryptor(vault: KeyVault.on(fake)))
        let storage = KeychainStorage<String>(account: "acct", encryptor: encryptor, cacheStrategy: .NO_CACHE,
                                             configuration: KeychainConfiguration(), backend: fake)
        try await storage.save(item: "token")
        let writes = fake.writes.count
        try await storage.save(item: "token")
        #expect(fake.writes.count == writes, "nothing written: \(fake.writes.suffix(2))")
        try await storage.save(item: "other")
        #expect(fake.writes.count == writes + 1)
        #expect(try await storage.get() == "other")
    }

    @Test func anEnvelopeOfTheSameValueForAnotherItemIsWrittenOver() async throws {
        let fake = FakeSecretService()
        let vault = KeyVault.on(fake)
        let encryptor = try #require(SecuredKeyEncryptor(vault: vault))
        // The same plaintext, sealed for another account (bound to it), copied into this one.
        let foreign = try await encryptor.encrypt(data: Data(#""token""#.utf8),
                                                  context: EncryptionContext(service: attributes["service"]!, account: "else"))
        let path = fake.seed(attributes: attributes, secret: "")
        fake.state.withLock { $0.items[path]!.secret = SecretValue(bytes: foreign) }
        let storage = KeychainStorage<String>(account: "acct", encryptor: encryptor, cacheStrategy: .NO_CACHE,
                                             configuration: KeychainConfiguration(), backend: fake)
        try await storage.save(item: "token")
        #expect(fake.items[path]?.secret.bytes != foreign, "rewritten: the copy did not decrypt for this item")
        #expect(try await storage.get() == "token")
    }

    @Test func inTheFileKeyringAnUnchangedValueLeavesTheFileAsItIs() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let encryptor = try #require(file.encryptor(binding: KeychainConfiguration.KeyBinding.none))
        let storage = file.storage(String.self, encryptor: encryptor)
        try await storage.save(item: "token")
        let before = try Data(contentsOf: URL(fileURLWithPath: file.path))
        try await storage.save(item: "token")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file.path)) == before, "the file was not rewritten")
        try await storage.save(item: "changed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file.path)) != before)
        #expect(try await storage.get() == "changed")
    }
}
