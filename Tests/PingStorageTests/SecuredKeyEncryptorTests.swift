import Foundation
import PingStorageCrypto
import SecretService
import Testing
@testable import PingStorage

private func encryptedStorage(_ fake: FakeSecretService, vault: KeyVault, account: String = "acct") -> KeychainStorage<Token> {
    KeychainStorage<Token>(account: account, encryptor: SecuredKeyEncryptor(vault: vault)!, cacheStrategy: .NO_CACHE,
                           configuration: KeychainConfiguration(), backend: fake)
}

struct Token: Codable, Sendable, Equatable {
    var accessToken: String
    var refreshToken: String
}

private let token = Token(accessToken: "eyJhbGciOiJSUzI1NiJ9.PLAINTEXT-ACCESS-TOKEN", refreshToken: "PLAINTEXT-REFRESH")
private let keySchema = ["xdg:schema": "com.pingidentity.PingStorage.SecuredKey"]

private func keyItems(_ fake: FakeSecretService) -> [ItemPath: FakeSecretService.Item] {
    fake.items.filter { $0.value.attributes["xdg:schema"] == "com.pingidentity.PingStorage.SecuredKey" }
}

@Suite("SecuredKeyEncryptor (in-memory Secret Service)")
struct SecuredKeyEncryptorTests {
    @Test func theIOSLineCompilesAndGivesARealEncryptor() {
        let storage = KeychainStorage<Token>(account: "ACCESS_TOKEN_STORAGE", encryptor: SecuredKeyEncryptor() ?? NoEncryptor())
        #expect(storage.account == "ACCESS_TOKEN_STORAGE")
        #expect(SecuredKeyEncryptor() != nil, "libgcrypt is available here")
    }

    @Test func roundTripStoresNoPlaintextAndCreatesOneKeyLazily() async throws {
        let fake = FakeSecretService()
        let vault = KeyVault.on(fake)
        let storage = encryptedStorage(fake, vault: vault)
        #expect(fake.items.isEmpty, "init touches nothing")
        try await storage.save(item: token)
        #expect(try await storage.get() == token)
        #expect(keyItems(fake).count == 1)
        let key = try #require(keyItems(fake).values.first)
        #expect(key.secret.bytes.count == 32)
        #expect(key.secret.contentType == "application/octet-stream")
        #expect(key.label.contains("do not delete"))
        let item = try #require(fake.items.values.first { $0.attributes["account"] == "acct" })
        #expect(item.secret.contentType == "application/octet-stream")
        #expect(Envelope.isEnvelope(item.secret.bytes))
        for stored in fake.items.values {
            #expect(stored.secret.bytes.range(of: Data("PLAINTEXT".utf8)) == nil, "no plaintext anywhere")
        }
    }

    @Test func bytesCopiedToAnotherAccountDoNotDecrypt() async throws {
        let fake = FakeSecretService()
        let vault = KeyVault.on(fake)
        try await encryptedStorage(fake, vault: vault).save(item: token)
        let stolen = try #require(fake.items.values.first { $0.attributes["account"] == "acct" }).secret
        _ = fake.seed(attributes: ["service": "com.pingidentity.keychainService", "account": "other"],
                      secret: String(decoding: stolen.bytes, as: UTF8.self))
        fake.state.withLock { state in
            for (path, item) in state.items where item.attributes["account"] == "other" { state.items[path]!.secret = stolen }
        }
        await #expect(throws: EncryptorError.failedToDecrypt) {
            _ = try await encryptedStorage(fake, vault: vault, account: "other").get()
        }
    }

    @Test func aDeletedKeyIsADistinctErrorTheItemStaysAndNewSavesWork() async throws {
        let fake = FakeSecretService()
        try await encryptedStorage(fake, vault: KeyVault.on(fake)).save(item: token)
        let keyPath = try #require(keyItems(fake).keys.first)
        _ = try await fake.deleteItem(keyPath)
        // A fresh vault (a new process) cannot find the key.
        let vault = KeyVault.on(fake)
        let storage = encryptedStorage(fake, vault: vault)
        do {
            _ = try await storage.get()
            Issue.record("expected keyNotFound")
        } catch let error as EncryptorError {
            guard case .keyNotFound(let message) = error.reason else { Issue.record("got \(error)"); return }
            #expect(message.contains("left unchanged"))
        }
        #expect(fake.items.values.contains { $0.attributes["account"] == "acct" }, "the item is kept")
        try await storage.save(item: Token(accessToken: "new", refreshToken: "new"))
        #expect(try await storage.get()?.accessToken == "new")
        #expect(keyItems(fake).count == 1, "a new key, not a regenerated old one")
    }

    @Test func aKeyDeletedWhileTheProcessRunsIsNotUsedForNewData() async throws {
        let fake = FakeSecretService()
        let vault = KeyVault.on(fake)
        let storage = encryptedStorage(fake, vault: vault)
        try await storage.save(item: token)
        let oldKey = try #require(keyItems(fake).keys.first)
        _ = try await fake.deleteItem(oldKey)
        try await storage.save(item: Token(accessToken: "after", refreshToken: "r"))
        // A fresh process (vault) can read the new data: it was encrypted with a key in the keyring.
        let fresh = encryptedStorage(fake, vault: KeyVault.on(fake))
        #expect(try await fresh.get()?.accessToken == "after")
        #expect(keyItems(fake).count == 1)
        #expect(keyItems(fake).keys.first != oldKey)
    }

    @Test func concurrentFirstUseInManyVaultsConvergesAndEverythingDecrypts() async throws {
        let fake = FakeSecretService()
        // Eight "processes" (vaults) racing on an empty keyring.
        let vaults = (0..<8).map { _ in KeyVault.on(fake) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, vault) in vaults.enumerated() {
                group.addTask {
                    try await encryptedStorage(fake, vault: vault, account: "acct\(index)")
                        .save(item: Token(accessToken: "a\(index)", refreshToken: "r"))
                }
            }
            try await group.waitForAll()
        }
        // Any process, including a fresh one, reads everything.
        let fresh = KeyVault.on(fake)
        for index in 0..<8 {
            for vault in [fresh, vaults[(index + 3) % 8]] {
                #expect(try await encryptedStorage(fake, vault: vault, account: "acct\(index)").get()?.accessToken == "a\(index)")
            }
        }
        // New data converges on one key (the oldest).
        let firstKeys = try await withThrowingTaskGroup(of: KeyID.self) { group in
            for vault in vaults + [fresh] { group.addTask { try await vault.currentKey().0 } }
            return try await group.reduce(into: Set<KeyID>()) { $0.insert($1) }
        }
        #expect(firstKeys.count == 1, "every process seals new data with the same key: \(firstKeys)")
        let later = KeyVault.on(fake)
        let oldest = try await later.currentKey().0
        #expect(try await KeyVault.on(fake).currentKey().0 == oldest)
    }

    @Test func unencryptedDataIsAnUnsupportedFormatNotACrash() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: ["service": "com.pingidentity.keychainService", "account": "acct"],
                      secret: #"{"accessToken":"x","refreshToken":"y"}"#)
        do {
            _ = try await encryptedStorage(fake, vault: KeyVault.on(fake)).get()
            Issue.record("expected unsupportedFormat")
        } catch let error as EncryptorError {
            guard case .unsupportedFormat = error.reason else { Issue.record("got \(error)"); return }
        }
    }

    @Test func aLockedKeyringIsAKeychainErrorNotAMissingKey() async throws {
        let fake = FakeSecretService()
        try await encryptedStorage(fake, vault: KeyVault.on(fake)).save(item: token)
        fake.state.withLock { $0.collectionLocked = true; $0.promptsUnlock = false }
        let fresh = encryptedStorage(fake, vault: KeyVault.on(fake))
        do {
            _ = try await fresh.get()
            Issue.record("expected locked")
        } catch let error as KeychainError {
            #expect(error.kind == "locked")
        }
        #expect(keyItems(fake).count == 1, "nothing regenerated")
    }

    @Test func unboundEncryptRoundTripsAndIsNotInterchangeableWithBound() async throws {
        let fake = FakeSecretService()
        let encryptor = try #require(SecuredKeyEncryptor(vault: KeyVault.on(fake)))
        let sealed = try await encryptor.encrypt(data: Data("hello".utf8))
        #expect(try await encryptor.decrypt(data: sealed) == Data("hello".utf8))
        await #expect(throws: EncryptorError.failedToDecrypt) {
            _ = try await encryptor.decrypt(data: sealed, context: EncryptionContext(service: "s", account: "a"))
        }
    }
}
