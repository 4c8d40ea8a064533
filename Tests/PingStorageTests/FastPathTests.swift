import Foundation
import SecretService
import Testing
@testable import PingStorage

private func storage(_ fake: FakeSecretService, account: String = "acct") -> KeychainStorage<String> {
    KeychainStorage<String>(account: account, encryptor: NoEncryptor(), cacheStrategy: .NO_CACHE,
                            configuration: KeychainConfiguration(), backend: fake)
}
private let lookupAttributes = ["service": "com.pingidentity.keychainService", "account": "acct"]
private let ownLookup = lookupAttributes.merging([AppIdentity.attribute: AppIdentity.current.id]) { $1 }

@Suite("Fast paths: remembered item, skipped writes")
struct FastPathTests {
    @Test func aSecondGetReadsTheRememberedItemWithoutSearching() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: ownLookup, secret: #""v""#)
        let keychain = storage(fake)
        #expect(try await keychain.get() == "v")
        let searches = fake.searches
        #expect(try await keychain.get() == "v")
        #expect(try await storage(fake).get() == "v", "another instance for the same account shares it")
        #expect(fake.searches == searches, "no search once the item is known")
    }

    /// An item no app owns is never remembered: the app's own item may appear through an attribute
    /// change a provider does not announce (KWallet), and from then on the other must not be read.
    @Test func anItemNoAppOwnsIsLookedForAgainOnEveryGet() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #""no app's""#)
        let keychain = storage(fake)
        #expect(try await keychain.get() == "no app's")
        let searches = fake.searches
        #expect(try await keychain.get() == "no app's")
        #expect(fake.searches > searches, "searched again")
    }

    @Test func anItemCreatedByAnotherClientIsSeenAtOnce() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: lookupAttributes, secret: #""old""#, modifiedOffset: -10)
        let keychain = storage(fake)
        #expect(try await keychain.get() == "old")
        // Another client adds a newer duplicate (ItemCreated advances the generation).
        _ = fake.seed(attributes: lookupAttributes.merging(["by": "other"]) { $1 }, secret: #""newer""#, modifiedOffset: 10)
        #expect(try await keychain.get() == "newer")
    }

    @Test func anItemReplacedAtANewPathIsFoundAgain() async throws {
        let fake = FakeSecretService()
        let first = fake.seed(attributes: lookupAttributes, secret: #""first""#)
        let keychain = storage(fake)
        #expect(try await keychain.get() == "first")
        _ = try await fake.deleteItem(first)
        _ = fake.seed(attributes: lookupAttributes, secret: #""second""#)
        #expect(try await keychain.get() == "second")
    }

    @Test func aDeletedItemIsNeverReturned() async throws {
        let fake = FakeSecretService()
        let path = fake.seed(attributes: lookupAttributes, secret: #""gone soon""#)
        let keychain = storage(fake)
        #expect(try await keychain.get() == "gone soon")
        _ = try await fake.deleteItem(path)
        #expect(try await keychain.get() == nil)
    }

    @Test func savingTheStoredValueWritesNothing() async throws {
        let fake = FakeSecretService()
        let keychain = storage(fake)
        try await keychain.save(item: "same")
        let writes = fake.writes
        try await keychain.save(item: "same")     // through the remembered item? not yet known: searches
        try await keychain.save(item: "same")     // now remembered
        #expect(fake.writes == writes, "no keyring write for an unchanged value")
        #expect(try await keychain.get() == "same")
        try await keychain.save(item: "changed")
        #expect(fake.writes.count == writes.count + 1)
        #expect(try await keychain.get() == "changed")
    }

    @Test func anUnchangedBinaryValueIsNotRewrittenWhenTheProviderReportsItAsText() async throws {
        // gnome-keyring keeps no content types and reports every secret as text/plain.
        struct Binary: Encryptor {
            func encrypt(data: Data) async throws -> Data { Data([0, 0xFF]) + data }
            func decrypt(data: Data) async throws -> Data { data.dropFirst(2) }
        }
        let fake = FakeSecretService()
        let keychain = KeychainStorage<String>(account: "acct", encryptor: Binary(), cacheStrategy: .NO_CACHE,
                                               configuration: KeychainConfiguration(), backend: fake)
        try await keychain.save(item: "same")
        fake.state.withLock { state in
            for path in state.items.keys { state.items[path]!.secret.contentType = "text/plain" }
        }
        let writes = fake.writes
        try await keychain.save(item: "same")
        try await keychain.save(item: "same")
        #expect(fake.writes == writes, "the same bytes are not written again")
        #expect(try await keychain.get() == "same")
    }

    @Test func savingTheStoredValueStillCollapsesDuplicates() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: ownLookup, secret: #""same""#, modifiedOffset: -5)
        let newest = fake.seed(attributes: ownLookup.merging(["by": "other"]) { $1 }, secret: #""same""#)
        try await storage(fake).save(item: "same")
        #expect(fake.items.keys.sorted() == [newest])
        #expect(!fake.writes.contains { $0.hasPrefix("setSecret") }, "the value was already there")
    }

    @Test func deleteOfTheRememberedItemNeedsNoSearchAndDuplicatesStillGo() async throws {
        let fake = FakeSecretService()
        let keychain = storage(fake)
        try await keychain.save(item: "x")
        _ = try await keychain.get()
        let searches = fake.searches
        try await keychain.delete()
        #expect(fake.searches == searches, "the remembered item is deleted directly")
        #expect(fake.items.isEmpty)
        // With a duplicate created by someone else, the generation changed: a search finds both.
        try await keychain.save(item: "y")
        _ = try await keychain.get()
        _ = fake.seed(attributes: lookupAttributes.merging(["by": "other"]) { $1 }, secret: #""dup""#)
        try await keychain.delete()
        #expect(fake.items.isEmpty)
    }

    @Test func anItemWeCreatedIsRememberedOnlyWhenNothingElseChanged() async throws {
        let fake = FakeSecretService()
        let keychain = storage(fake)
        try await keychain.save(item: "created")
        let searches = fake.searches
        #expect(try await keychain.get() == "created")
        #expect(fake.searches == searches, "our own creation is remembered")
    }

    @Test func deleteForgetsTheRememberedItem() async throws {
        let fake = FakeSecretService()
        let keychain = storage(fake)
        try await keychain.save(item: "x")
        _ = try await keychain.get()
        try await keychain.delete()
        #expect(fake.items.isEmpty)
        #expect(try await keychain.get() == nil)
    }
}
