import Foundation
import SecretService
import Testing
@testable import PingStorage

private func makeStorage<T>(_ type: T.Type = T.self, _ fake: FakeSecretService, account: String = "acct",
                            encryptor: Encryptor = NoEncryptor(), cache: CacheStrategy = .NO_CACHE) -> KeychainStorage<T> {
    KeychainStorage<T>(account: account, encryptor: encryptor, cacheStrategy: cache,
                       configuration: KeychainConfiguration(), backend: fake)
}

private let ours = ["service": "com.pingidentity.keychainService", "account": "acct", "username": "acct",
                    "xdg:schema": "com.pingidentity.PingStorage", AppIdentity.attribute: AppIdentity.current.id]
private let lookupAttributes = ["service": "com.pingidentity.keychainService", "account": "acct"]
/// An item of the app's own with the lookup attributes alone (its duplicates, as a crashed process left them).
private let ownLookup = lookupAttributes.merging([AppIdentity.attribute: AppIdentity.current.id]) { $1 }

private func kind(_ body: () async throws -> Void) async -> String? {
    do { try await body(); return nil } catch let error as KeychainError { return error.kind } catch { return "\(type(of: error))" }
}

@Suite("KeychainStorage rules (in-memory Secret Service)")
struct KeychainStorageTests {
    @Test func firstSaveCreatesOneItemWithTheDocumentedAttributesLabelAndTextType() async throws {
        let fake = FakeSecretService()
        try await makeStorage(Dog.self, fake).save(item: lucky)
        let items = fake.items
        #expect(items.count == 1)
        let item = try #require(items.values.first)
        #expect(item.attributes == ours)
        #expect(item.label == "acct (com.pingidentity.keychainService)")
        #expect(item.secret.contentType == "text/plain")
        #expect(try JSONDecoder().decode(Dog.self, from: item.secret.bytes) == lucky)
    }

    @Test func binaryEncryptorOutputIsStoredAsOctetStream() async throws {
        struct Binary: Encryptor {
            func encrypt(data: Data) async throws -> Data { Data([0, 0xFF]) + data }
            func decrypt(data: Data) async throws -> Data { data.dropFirst(2) }
        }
        let fake = FakeSecretService()
        let storage = makeStorage(Dog.self, fake, encryptor: Binary())
        try await storage.save(item: lucky)
        #expect(fake.items.values.first?.secret.contentType == "application/octet-stream")
        #expect(fake.items.values.first?.secret.bytes.prefix(2) == Data([0, 0xFF]))
        #expect(try await storage.get() == lucky)
    }

    @Test func saveOverAnExistingItemWritesItsSecretInPlace() async throws {
        let fake = FakeSecretService()
        let storage = makeStorage(Dog.self, fake)
        try await storage.save(item: lucky)
        let path = try #require(fake.items.keys.first)
        try await storage.save(item: rex)
        #expect(fake.items.keys.sorted() == [path])
        #expect(fake.writes == ["create \(path)", "setSecret \(path)"], "one write per save, no delete-then-create")
        #expect(try await storage.get() == rex)
    }

    @Test func duplicatesReadTheNewestAndSaveLeavesOne() async throws {
        let fake = FakeSecretService()
        let old = fake.seed(attributes: ownLookup, secret: #"{"name":"Old","breed":"x"}"#, modifiedOffset: -100)
        let newest = fake.seed(attributes: ownLookup.merging(["extra": "1"]) { $1 },
                               secret: #"{"name":"New","breed":"y"}"#, modifiedOffset: -10)
        let middle = fake.seed(attributes: ownLookup, secret: #"{"name":"Mid","breed":"z"}"#, modifiedOffset: -50)
        let storage = makeStorage(Dog.self, fake)
        #expect(try await storage.get()?.name == "New")
        #expect(fake.writes.isEmpty, "reads never write")
        try await storage.save(item: lucky)
        #expect(fake.items.keys.sorted() == [newest])
        #expect(fake.writes.contains("delete \(old)") && fake.writes.contains("delete \(middle)"))
        let item = try #require(fake.items[newest])
        #expect(item.attributes == ours.merging(["extra": "1"]) { $1 }, "our attributes added, theirs kept")
        #expect(item.label == "acct (com.pingidentity.keychainService)")
    }

    /// Two processes saving while a third writes one of the duplicates read the modification
    /// times before and after that write. Had a save kept the most recently modified item, each
    /// would keep one and delete the other's, leaving the account with no item at all. A save
    /// keeps the most recently created one, which no write changes, so both keep the same.
    @Test func saveKeepsTheDuplicateCreatedLastWhateverWasWrittenSince() async throws {
        // What the first process sees: `older` created and written first.
        let before = FakeSecretService()
        let olderBefore = before.seed(attributes: ownLookup, secret: #""older""#, modifiedOffset: -100)
        let newerBefore = before.seed(attributes: ownLookup, secret: #""newer""#, modifiedOffset: -50)
        // What the second sees a moment later: a third process has just written `older`.
        let after = FakeSecretService()
        let olderAfter = after.seed(attributes: ownLookup, secret: #""third""#, modifiedOffset: -10, createdOffset: -100)
        let newerAfter = after.seed(attributes: ownLookup, secret: #""newer""#, modifiedOffset: -50)

        try await makeStorage(String.self, before).save(item: "one")
        try await makeStorage(String.self, after).save(item: "two")
        #expect(before.items.keys.sorted() == [newerBefore])
        #expect(after.items.keys.sorted() == [newerAfter], "the same item as the first process kept, so one survives")
        #expect(before.writes.contains("delete \(olderBefore)") && after.writes.contains("delete \(olderAfter)"))
        #expect(try await makeStorage(String.self, after).get() == "two")
    }

    @Test func aReadTakesTheDuplicateWrittenLast() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #""written last""#, modifiedOffset: -10, createdOffset: -100)
        _ = fake.seed(attributes: lookupAttributes, secret: #""created last""#, modifiedOffset: -50)
        #expect(try await makeStorage(String.self, fake).get() == "written last")
        #expect(fake.writes.isEmpty, "reads never write")
    }

    @Test func equalTimestampsAreBrokenByItemNumber() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #""first""#)
        _ = fake.seed(attributes: lookupAttributes, secret: #""second""#)
        #expect(try await makeStorage(String.self, fake).get() == "second")
    }

    @Test func missingItemIsNilAndDeleteOfMissingSucceeds() async throws {
        let fake = FakeSecretService()
        let storage = makeStorage(Dog.self, fake)
        #expect(try await storage.get() == nil)
        try await storage.delete()
        #expect(fake.writes.isEmpty)
    }

    @Test func deleteRemovesEveryItemOfTheAccountAndNothingElse() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: "1")
        _ = fake.seed(attributes: lookupAttributes, secret: "2")
        let other = fake.seed(attributes: ["service": "com.pingidentity.keychainService", "account": "other"], secret: "3")
        try await makeStorage(Dog.self, fake).delete()
        #expect(fake.items.keys.sorted() == [other])
    }

    @Test func lockedCollectionIsLockedNeverNilAndNothingIsWritten() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #""kept""#)
        fake.state.withLock { $0.collectionLocked = true; $0.promptsUnlock = false }
        let storage = makeStorage(String.self, fake)
        #expect(await kind { _ = try await storage.get() } == "locked")
        #expect(await kind { try await storage.save(item: "new") } == "locked")
        #expect(await kind { try await storage.delete() } == "locked")
        // An account with no item in a locked collection: locked, not "not found".
        let other = makeStorage(String.self, fake, account: "nobody")
        #expect(await kind { _ = try await other.get() } == "locked")
        #expect(fake.writes.isEmpty)
        #expect(fake.items.values.first?.secret.bytes == Data(#""kept""#.utf8))
    }

    @Test func lockedCollectionIsUnlockedThroughThePromptWhenAllowed() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #""kept""#)
        fake.state.withLock { $0.collectionLocked = true }
        #expect(try await makeStorage(String.self, fake).get() == "kept")
    }

    @Test func corruptItemIsAnErrorAndStaysUntouched() async throws {
        let fake = FakeSecretService()
        let secretLooking = "definitely-not-json-SECRET-9f8e7d"
        _ = fake.seed(attributes: lookupAttributes, secret: secretLooking)
        let storage = makeStorage(Dog.self, fake)
        do {
            _ = try await storage.get()
            Issue.record("expected corruptItem")
        } catch let error as KeychainError {
            #expect(error.kind == "corruptItem")
            #expect(!error.errorMessage.contains("SECRET"), "never quotes the stored bytes")
            #expect(!error.localizedDescription.contains("9f8e7d"))
            #expect(error.errorMessage.contains("acct"))
        }
        #expect(fake.writes.isEmpty)
        #expect(fake.items.values.first?.secret.bytes == Data(secretLooking.utf8))
    }

    @Test func wrongJSONShapeIsCorruptWithAPathButNoValues() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #"{"name":"hidden-value","breed":42}"#)
        do {
            _ = try await makeStorage(Dog.self, fake).get()
            Issue.record("expected corruptItem")
        } catch let error as KeychainError {
            #expect(error.kind == "corruptItem")
            #expect(error.errorMessage.contains("breed"))
            #expect(!error.errorMessage.contains("hidden-value"))
        }
    }

    @Test func decryptionFailuresPropagateUnchanged() async throws {
        struct Failing: Encryptor {
            func encrypt(data: Data) async throws -> Data { data }
            func decrypt(data: Data) async throws -> Data { throw EncryptorError.failedToDecrypt }
        }
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: "x")
        await #expect(throws: EncryptorError.failedToDecrypt) { try await makeStorage(Dog.self, fake, encryptor: Failing()).get() }
        #expect(fake.items.count == 1)
    }

    @Test func invalidAccountsAreRejectedBeforeAnyCall() async throws {
        let fake = FakeSecretService()
        #expect(await kind { try await makeStorage(Dog.self, fake, account: "").save(item: lucky) } == "invalidArgument")
        #expect(await kind { _ = try await makeStorage(Dog.self, fake, account: "a\u{0}b").get() } == "invalidArgument")
        #expect(fake.items.isEmpty)
    }

    @Test func anItemDeletedBetweenSearchAndWriteIsRetriedOnce() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #""old""#)
        fake.state.withLock { $0.failNext["setSecret"] = SecretServiceError(.itemNotFound, operation: "write secret", message: "gone") }
        let storage = makeStorage(String.self, fake)
        try await storage.save(item: "new")
        #expect(try await storage.get() == "new")
    }

    @Test func serviceErrorsBecomeTheMatchingKeychainErrors() async throws {
        let cases: [(SecretServiceError.Code, String)] = [
            (.noSessionBus, "noSessionBus"), (.noSecretService, "noSecretService"), (.disconnected, "noSecretService"),
            (.collectionNotFound, "collectionNotFound"), (.locked, "locked"), (.promptDismissed, "promptDismissed"),
            (.timedOut, "timedOut"), (.ambiguous, "providerError"), (.invalidArgument, "invalidArgument"),
            (.insecureTransport, "insecureTransport"), (.providerError, "providerError"),
        ]
        for (code, expected) in cases {
            let fake = FakeSecretService()
            fake.state.withLock {
                $0.failNext["search"] = SecretServiceError(code, operation: "search items", message: "what to do", dbusErrorName: "x.y.Z")
            }
            let storage = makeStorage(Dog.self, fake)
            do {
                _ = try await storage.get()
                Issue.record("\(code): expected an error")
            } catch let error as KeychainError {
                #expect(error.kind == expected, "\(code)")
                #expect(error.errorMessage.contains("what to do"), "the message keeps the advice")
                #expect(error.errorDescription == error.errorMessage)
            }
        }
    }

    @Test func cachedKeychainGetIsServedWithoutTheKeyring() async throws {
        let fake = FakeSecretService()
        let storage = makeStorage(Dog.self, fake, cache: .CACHE)
        try await storage.save(item: lucky)
        fake.state.withLock { $0.failNext["search"] = SecretServiceError(.timedOut, operation: "search", message: "x") }
        #expect(try await storage.get() == lucky)
    }

    @Test func iosErrorCasesKeepTheirMessagesAndEquality() {
        #expect(KeychainError.unableToSave == .unableToSave)
        #expect(KeychainError.unableToRetrieve.errorMessage.isEmpty == false)
        #expect(KeychainError.unableToDelete.localizedDescription.contains("delete"))
        #expect(EncryptorError.failedToEncrypt.localizedDescription.contains("encrypt"))
    }
}

/// The iOS page's model type, exactly as written there (no explicit Sendable).
struct PageDog: Codable {
    let name: String
    let breed: String
}

/// The iOS page's snippets, compiled unchanged against `import PingStorage`.
@Test func theDocumentationSnippetsCompile() async throws {
    let pageStorage = KeychainStorage<PageDog>(account: "myStorageId")
    _ = pageStorage
    struct MyEncryptor: Encryptor {
        func encrypt(data: Data) async throws -> Data { data }
        func decrypt(data: Data) async throws -> Data { data }
    }
    let customStorage = KeychainStorage<Dog>(account: "myStorageId")
    let cached = KeychainStorage<Dog>(account: "myStorageId", cacheable: true)
    let encrypted = KeychainStorage<Dog>(account: "myStorageId", encryptor: MyEncryptor())
    let strategy = KeychainStorage<Dog>(account: "myStorageId", cacheStrategy: .CACHE_ON_FAILURE)
    let memory = MemoryStorage<Dog>(cacheable: true)
    #expect(customStorage.account == "myStorageId")
    #expect(cached.cacheStrategy == .CACHE)
    #expect(encrypted.configuration.service == "com.pingidentity.keychainService")
    #expect(strategy.cacheStrategy == .CACHE_ON_FAILURE)
    #expect(memory.cacheStrategy == .CACHE)
}
