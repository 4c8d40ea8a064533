import Foundation
import SecretService
import Testing
@testable import PingStorage

private let lookupAttributes = ["service": "com.pingidentity.keychainService", "account": "acct"]
/// An item of the app's own with the lookup attributes alone (what another process of the app, or
/// a crashed one, may leave).
private let ownLookup = lookupAttributes.merging([AppIdentity.attribute: AppIdentity.current.id]) { $1 }
/// What KeychainStorage itself writes: an item like this is written through without a search.
private let ourAttributes = lookupAttributes.merging(["username": "acct", "xdg:schema": "com.pingidentity.PingStorage"]) { $1 }
private let ourLabel = "acct (com.pingidentity.keychainService)"

private func storage(_ fake: FakeSecretService) -> KeychainStorage<String> {
    KeychainStorage<String>(account: "acct", encryptor: NoEncryptor(), cacheStrategy: .NO_CACHE,
                            configuration: KeychainConfiguration(allowsPrompts: false), backend: fake)
}

private func kind(_ body: () async throws -> Void) async -> String? {
    do {
        try await body()
        return nil
    } catch let error as KeychainError {
        return error.kind
    } catch {
        return "\(error)"
    }
}

/// What the Keychain rules do about providers' ways (the client's own quirks, such as KWallet's
/// empty answer when locked, are tested against the fake service in IntegrationTests).
@Suite("Provider quirks handled by the item rules")
struct ProviderQuirkTests {
    /// KeePassXC 2.7.4 hangs on CreateItem(replace: true) over another client's item.
    @Test func itemsAreCreatedWithoutReplace() async throws {
        let fake = FakeSecretService()
        try await storage(fake).save(item: "new")
        #expect(fake.state.withLock { $0.createReplacing } == [false])
        #expect(fake.items.count == 1)
    }

    /// A concurrent creator's duplicate (another process of the app: the generation moved by more
    /// than our own creation) is collapsed right after creating, onto the item every process
    /// picks: the newest.
    @Test func aDuplicateFromAConcurrentCreatorIsCollapsedAtOnce() async throws {
        let fake = FakeSecretService()
        fake.state.withLock { $0.concurrentCreator = ownLookup }
        let keychain = storage(fake)
        try await keychain.save(item: "ours")
        #expect(fake.items.count == 1, "one item right after the save")
        #expect(fake.items.values.first?.label == "theirs", "the newest one is kept, as the other process decides too")
        #expect(fake.writes.contains { $0.hasPrefix("delete ") })
    }

    /// Another process creates the account between our search (nothing there) and our CreateItem:
    /// the generation moved by two since the search, so the duplicate is collapsed at once.
    @Test func anItemCreatedBetweenOurSearchAndOurCreateIsCollapsed() async throws {
        let fake = FakeSecretService()
        fake.state.withLock { $0.creatorAfterSearch = ownLookup }
        try await storage(fake).save(item: "ours")
        #expect(fake.items.count == 1, "one item right after the save")
    }

    /// An item no app owns, or another app's, created at the same moment is not the app's
    /// duplicate: it is neither deleted nor written into, and the app's own item is what it reads.
    @Test(arguments: [[:], [AppIdentity.attribute: "com.example.Other"]])
    func anotherOwnersItemCreatedAtTheSameMomentIsLeftAlone(_ owner: [String: String]) async throws {
        let fake = FakeSecretService()
        fake.state.withLock { $0.creatorAfterSearch = lookupAttributes.merging(owner) { $1 } }
        let keychain = storage(fake)
        try await keychain.save(item: "ours")
        #expect(fake.items.count == 2, "the app's own item and the other one")
        #expect(!fake.writes.contains { $0.hasPrefix("delete ") || $0.hasPrefix("setSecret ") }, "\(fake.writes)")
        #expect(try await keychain.get() == "ours")
    }

    /// A provider that refuses the attribute write altogether (the client has already left out
    /// what KeePassXC computes itself): the app's item that lacked some of our attributes still
    /// gets our label and the value, and stays the account's item.
    @Test func refusedAttributesStillLeaveTheLabelAndTheValue() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: ownLookup.merging(["Uuid": "0123", "Path": "/x"]) { $1 }, secret: #""old""#,
                      label: "another label")
        fake.state.withLock { $0.refusedAttributes = ["Uuid", "Path", "TOTP"] }
        try await storage(fake).save(item: "ours")
        let item = try #require(fake.items.values.first)
        #expect(item.attributes["Uuid"] == "0123", "the provider kept what it had")
        #expect(item.label == "acct (com.pingidentity.keychainService)")
        #expect(item.secret.bytes == Data(#""ours""#.utf8))
    }

    /// The search for the app's own items misses one that the wider searches (service and
    /// account, service and username) find, and all three answers carry the same token: they are
    /// not of one moment, whatever the token says. The read takes the app's own item, and the item
    /// no app owns is not remembered as the account's (every later read would have returned it).
    @Test func anItemOfTheAppsOwnFoundOnlyByTheWiderSearchesIsTheAppsOwn() async throws {
        let fake = FakeSecretService()
        fake.seed(attributes: lookupAttributes, secret: #""no app's""#)
        let own = fake.seed(attributes: ownLookup.merging(["username": "acct"]) { $1 }, secret: #""the app's own""#)
        fake.state.withLock { $0.missedByTheNextSearchOfTheApp = [own] }
        let keychain = storage(fake)
        #expect(try await keychain.get() == "the app's own")
        #expect(try await keychain.get() == "the app's own")
    }
}
