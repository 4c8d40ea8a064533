import FileKeyring
import Foundation
import SecretService
import Testing
import Waiting
@testable import PingStorage

/// The two stores behind the one backend seam (``KeyringStore``), each with a way to put items in
/// as another tool would and to see what it holds afterwards, without going through the store.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case secretService, fileKeyring

    var testDescription: String { rawValue }
}

/// One store under test and the backend behind it.
struct StoreUnderTest {
    struct Seen: Equatable {
        var label: String
        var attributes: [String: String]
        var secret: String
        /// When the item was created (Unix seconds): which of duplicates a save kept. Not compared.
        var created: UInt64 = 0

        static func == (a: Seen, b: Seen) -> Bool { (a.label, a.attributes, a.secret) == (b.label, b.attributes, b.secret) }
    }

    let store: any KeyringStore
    let rules: AccountRules
    /// Adds an item as another tool would, with times in Unix seconds.
    let seed: (_ label: String, _ attributes: [String: String], _ secret: String, _ created: UInt64, _ modified: UInt64) async throws -> Void
    /// Every item the backend holds.
    let contents: () async throws -> [Seen]
    let cleanUp: () -> Void

    static let deadline = Deadline(timeout: .seconds(120))

    init(_ kind: StoreKind, account: String = "acct") throws {
        let configuration: KeychainConfiguration
        switch kind {
        case .secretService:
            configuration = KeychainConfiguration()
            let fake = FakeSecretService()
            let base: UInt64 = 1_700_000_000
            store = SecretServiceStore(fake, collection: configuration.collection)
            seed = { label, attributes, secret, created, modified in
                fake.seed(attributes: attributes, secret: secret, label: label, modifiedOffset: TimeInterval(modified) - TimeInterval(base),
                          createdOffset: TimeInterval(created) - TimeInterval(base))
            }
            contents = {
                fake.items.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                    Seen(label: $0.value.label, attributes: $0.value.attributes, secret: String(decoding: $0.value.secret.bytes, as: UTF8.self),
                         created: UInt64($0.value.created.timeIntervalSince1970))
                }
            }
            cleanUp = {}
        case .fileKeyring:
            let file = try TestFileKeyring()
            configuration = file.configuration
            store = FileKeyringStore(keychain: .wrapping(file.keyring), app: AppIdentity.current.id, boundKeys: BoundKeys())
            seed = { label, attributes, secret, created, modified in
                let item = FileKeyringItem(label: label, attributes: attributes, secret: FileKeyringSecret(copying: Data(secret.utf8)),
                                           created: created, modified: modified)
                try await file.keyring.modify(by: Self.deadline.instant) { items throws(FileKeyringError) in items.append(item) }
            }
            contents = {
                try await file.keyring.items(by: Self.deadline.instant).map {
                    Seen(label: $0.label, attributes: $0.attributes, secret: String(decoding: $0.secret.copiedData(), as: UTF8.self),
                         created: $0.created)
                }
            }
            cleanUp = { file.remove() }
        }
        rules = AccountRules(account: account, configuration: configuration)
    }

    func read() async throws -> String? {
        try await store.read(rules, by: Self.deadline).map { String(decoding: $0.bytes, as: UTF8.self) }
    }

    @discardableResult
    func write(_ value: String) async throws -> Bool {
        try await store.write(StoredSecret(bytes: Data(value.utf8)), holds: { $0 == Data(value.utf8) }, for: rules, by: Self.deadline)
    }

    func ofAccount() async throws -> [Seen] { try await contents().filter { rules.belongsToAccount($0.attributes) } }
}

/// The Keychain rules, written once (``AccountRules``) and applied by each store: the same
/// behaviour, checked once, against the Secret Service store (an in-memory service) and the file
/// keyring store (a real file).
@Suite("One backend seam: the Keychain rules on both stores")
struct KeyringStoreRulesTests {
    static let service = KeychainConfiguration.defaultService
    static let theirs = ["service": service, "username": "acct", "application": "python-keyring"]
    static let ours = ["service": service, "account": "acct", "username": "acct", "xdg:schema": "com.pingidentity.PingStorage",
                       AppIdentity.attribute: AppIdentity.current.id]

    @Test(arguments: StoreKind.allCases)
    func anAccountWithoutItemsReadsNilAndTheFirstSaveCreatesOneCompleteItem(_ kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        defer { subject.cleanUp() }
        #expect(try await subject.read() == nil)
        #expect(try await subject.store.info(subject.rules, by: StoreUnderTest.deadline) == nil)
        try await subject.store.delete(subject.rules, by: StoreUnderTest.deadline)
        #expect(try await subject.write("first"))
        #expect(try await subject.ofAccount() == [.init(label: "acct (\(Self.service))", attributes: Self.ours, secret: "first")])
        #expect(try await subject.read() == "first")
    }

    @Test(arguments: StoreKind.allCases)
    func aSaveOfTheValueAlreadyThereWritesNothing(_ kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        defer { subject.cleanUp() }
        try await subject.write("same")
        let before = try await subject.contents()
        #expect(try await subject.write("same") == false)
        #expect(try await subject.contents() == before)
        #expect(try await subject.write("changed"))
        #expect(try await subject.read() == "changed")
    }

    /// A read takes the item modified last; a save keeps the one created last, writes into it and
    /// removes the others.
    @Test(arguments: StoreKind.allCases)
    func duplicatesAreReadByModificationAndCollapsedOntoTheNewestCreated(_ kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        defer { subject.cleanUp() }
        try await subject.seed("older, modified last", Self.ours, "modified-last", 1_700_000_010, 1_700_000_050)
        try await subject.seed("created last", Self.ours, "created-last", 1_700_000_020, 1_700_000_030)
        #expect(try await subject.read() == "modified-last")
        #expect(try await subject.write("saved"))
        let left = try await subject.ofAccount()
        #expect(left.count == 1 && left.first?.secret == "saved", "\(left)")
        #expect(left.first?.created == 1_700_000_020, "the item created last was kept")
        #expect(try await subject.read() == "saved")
    }

    /// Python keyring's and go-keyring's items (service and username, no account) are the
    /// account's items no app owns: read while the app has none; a save creates the app's own item
    /// and leaves theirs exactly as it was (never written into or adopted), and from then on the
    /// app's own is read; a delete removes both.
    @Test(arguments: StoreKind.allCases)
    func anItemNoAppOwnsIsReadUntilTheAppHasItsOwnAndNeverWrittenInto(_ kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        defer { subject.cleanUp() }
        let python = StoreUnderTest.Seen(label: "Password for 'acct'", attributes: Self.theirs, secret: "theirs")
        try await subject.seed(python.label, python.attributes, python.secret, 1_700_000_010, 1_700_000_010)
        #expect(try await subject.read() == "theirs")
        #expect(try await subject.write("ours"))
        let left = try await subject.ofAccount()
        #expect(Set(left.map(\.secret)) == ["theirs", "ours"] && left.count == 2, "\(left)")
        #expect(left.contains(python), "theirs as it was: \(left)")
        #expect(left.contains(.init(label: "acct (\(Self.service))", attributes: Self.ours, secret: "ours")), "\(left)")
        #expect(try await subject.read() == "ours")
        #expect(try await subject.write("ours again"))
        #expect(try await subject.ofAccount().contains(python))
        try await subject.store.delete(subject.rules, by: StoreUnderTest.deadline)
        #expect(try await subject.ofAccount().isEmpty, "the app's own and the item no app owns")
        #expect(try await subject.read() == nil)
    }

    /// After the app has saved, an item no app owns that is newer (`secret-tool store` of the same
    /// service and account, a 1.x app still installed) is not what it reads, nor what its next save
    /// writes into; bytes that are not the app's JSON there change nothing for it.
    @Test(arguments: StoreKind.allCases)
    func theAppsOwnItemBeatsANewerItemNoAppOwns(_ kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        defer { subject.cleanUp() }
        try await subject.write("ours")
        let stray = StoreUnderTest.Seen(label: "stray", attributes: ["service": Self.service, "account": "acct"], secret: "not json at all")
        try await subject.seed(stray.label, stray.attributes, stray.secret, 4_000_000_000, 4_000_000_000)
        #expect(try await subject.read() == "ours")
        #expect(try await subject.write("newer"))
        #expect(try await subject.read() == "newer")
        let left = try await subject.ofAccount()
        #expect(left.count == 2 && left.contains(stray), "the stray item as it was: \(left)")
        #expect(left.filter { $0.attributes[AppIdentity.attribute] == AppIdentity.current.id }.map(\.secret) == ["newer"])
    }

    /// An item whose `account` is another's is never taken, whatever its `username`; another
    /// service's or another app's item (the newest, here) is never read or touched; a delete
    /// removes exactly the account's items.
    @Test(arguments: StoreKind.allCases)
    func onlyTheAccountsItemsAreReadWrittenOrDeleted(_ kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        defer { subject.cleanUp() }
        let otherAccount = ["service": Self.service, "account": "other", "username": "acct"]
        let otherService = ["service": "elsewhere", "account": "acct"]
        let otherApp = Self.ours.merging([AppIdentity.attribute: "com.example.Other"]) { $1 }
        try await subject.seed("other account", otherAccount, "not-ours", 1_700_000_010, 1_700_000_010)
        try await subject.seed("other service", otherService, "not-ours-either", 1_700_000_010, 1_700_000_010)
        try await subject.seed("other app", otherApp, "another-apps", 1_700_000_090, 1_700_000_090)
        #expect(try await subject.read() == nil)
        try await subject.write("ours")
        try await subject.seed("Password for 'acct'", Self.theirs, "adopted", 1_700_000_005, 1_700_000_005)
        try await subject.store.delete(subject.rules, by: StoreUnderTest.deadline)
        #expect(try await subject.read() == nil)
        let left = try await subject.contents().map(\.secret).sorted()
        #expect(left == ["another-apps", "not-ours", "not-ours-either"], "\(left)")
    }

    /// Another app's item of the same account carries `account` and `username`, so both of the
    /// searches that look past the app's own find it: its attributes are read once per search of
    /// the account, not once per search that found it.
    @Test func anotherAppsItemFoundByBothSearchesIsReadOnce() async throws {
        let fake = FakeSecretService()
        let configuration = KeychainConfiguration()
        let rules = AccountRules(account: "acct", configuration: configuration)
        fake.seed(attributes: Self.ours.merging([AppIdentity.attribute: "com.example.Other"]) { $1 }, secret: "theirs")
        let store = SecretServiceStore(fake, collection: configuration.collection)
        #expect(try await store.read(rules, by: StoreUnderTest.deadline) == nil)
        #expect(fake.infoReads == 1, "one itemInfo for the other app's item, found by both searches")
    }
}
