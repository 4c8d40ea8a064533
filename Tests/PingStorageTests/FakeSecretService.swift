import DBusTransport
import Foundation
import Locking
import PingStorageCrypto
import SecretService
@testable import PingStorage
import Waiting

/// An in-memory Secret Service for the unit tests of the Keychain rules: items, a lockable
/// collection, scripted failures, change tokens, and a log of every write so tests can prove what
/// did (not) change. It behaves like ``SecretServiceClient`` as PingStorage sees it: `findItems`
/// and `secret(of:)` unlock (or throw `.locked` when prompts are off), and every answer carries
/// the change token at that moment: the count of its announcements, as the client's is.
final class FakeSecretService: SecretServiceCalls {
    struct Item {
        var label: String
        var attributes: [String: String]
        var secret: SecretValue
        var created: Date
        var modified: Date
    }
    struct State {
        var items: [ItemPath: Item] = [:]
        var nextNumber = 1
        var collectionLocked = false
        var promptsUnlock = true
        var failNext: [String: SecretServiceError] = [:]
        var writes: [String] = []
        var clock = Date(timeIntervalSince1970: 1_700_000_000)
        var reads = 0
        var searches = 0
        /// Searches for key items (`xdg:schema` = ``KeyVault/schema``).
        var keySearches = 0
        /// itemInfo calls (one round trip each on a real provider).
        var infoReads = 0
        /// KeePassXC's behaviour: attribute writes containing these names fail with InvalidArgs.
        var refusedAttributes: Set<String> = []
        /// The `replacing` argument of every createItem call.
        var createReplacing: [Bool] = []
        /// What the fake announced (every create, delete and attribute change; a secret written in
        /// place when `announcesSecretChanges`; `.lost` for a lock change), one per change as the
        /// real client counts them: its count is the change token's.
        var announced: [ItemAnnouncement] = [ItemAnnouncement(kind: .lost, item: nil)]
        /// Announcements routed to the client and not yet heard (``hearAnnouncementsRoutedSoFar()``
        /// brings them), and how many times that was called.
        var onItsWay: [ItemAnnouncement] = []
        var roundTripsToTheBus = 0
        /// Whether it announces a secret written in place (GNOME Keyring does not).
        var announcesSecretChanges = true
        /// When set, the next createItem also adds an item with these attributes, newer than ours:
        /// another process creating the same account at the same moment.
        var concurrentCreator: [String: String]?
        /// When set, the next search answers as if these attributes had no item, and then another
        /// process's item with them appears (between our search and our CreateItem).
        var creatorAfterSearch: [String: String]?
        /// When set, another process writes these bytes into the item the next read reads, right
        /// after that read answered (announced when `announcesSecretChanges`).
        var writeAfterNextRead: Data?
        /// When set, the next createItem waits until the test opens it (a call in flight).
        var holdNextCreate: Hold?
        /// Items the next search that names the app (`pingstorage-app`) does not return, while the
        /// other searches do and every answer carries the same token: answers of different moments
        /// that their tokens do not tell apart (a provider that announces a creation late).
        var missedByTheNextSearchOfTheApp: Set<ItemPath> = []
    }
    let state = Locked(State())
    let collectionPath = try! ObjectPath("/org/freedesktop/secrets/collection/login")
    let rememberedItems = RememberedItems()
    static let connection: UInt64 = 0xFA4E

    @discardableResult
    func seed(attributes: [String: String], secret: String, label: String = "seeded", modifiedOffset: TimeInterval = 0,
              createdOffset: TimeInterval? = nil) -> ItemPath {
        seed(attributes: attributes, bytes: Data(secret.utf8), label: label, modifiedOffset: modifiedOffset, createdOffset: createdOffset)
    }

    /// ``seed(attributes:secret:label:modifiedOffset:createdOffset:)`` with a binary secret.
    @discardableResult
    func seed(attributes: [String: String], bytes: Data, label: String = "seeded", modifiedOffset: TimeInterval = 0,
              createdOffset: TimeInterval? = nil) -> ItemPath {
        state.withLock { state in
            let path = newPath(&state)
            let time = state.clock.addingTimeInterval(modifiedOffset)
            state.items[path] = Item(label: label, attributes: attributes, secret: SecretValue(bytes: bytes),
                                     created: createdOffset.map { state.clock.addingTimeInterval($0) } ?? time, modified: time)
            state.announced.append(ItemAnnouncement(kind: .created, item: path))
            return path
        }
    }

    /// Another process writes `secret` into the item at `path` (announced when the fake announces
    /// secrets written in place, as KWallet does; GNOME Keyring never does, KeePassXC not while it
    /// saves its database). With
    /// `announcementOnItsWay`, the announcement is heard only after
    /// ``hearAnnouncementsRoutedSoFar()``: routed by the bus, not yet read from the socket.
    func otherProcessWrites(_ secret: Data, at path: ItemPath, announcementOnItsWay: Bool = false) {
        state.withLock { state in
            state.items[path]?.secret = SecretValue(bytes: secret)
            guard state.announcesSecretChanges else { return }
            let announcement = ItemAnnouncement(kind: .changed, item: path)
            if announcementOnItsWay { state.onItsWay.append(announcement) } else { state.announced.append(announcement) }
        }
    }

    /// Another process deletes the item at `path` (announced).
    func otherProcessDeletes(_ path: ItemPath) {
        state.withLock { state in
            state.items[path] = nil
            state.announced.append(ItemAnnouncement(kind: .deleted, item: path))
        }
    }

    var items: [ItemPath: Item] { state.withLock { $0.items } }
    var reads: Int { state.withLock { $0.reads } }
    var searches: Int { state.withLock { $0.searches } }
    var keySearches: Int { state.withLock { $0.keySearches } }
    var infoReads: Int { state.withLock { $0.infoReads } }
    var writes: [String] { state.withLock { $0.writes } }

    /// Something changed that the client would hear about (a lock, another process's item).
    func announceChange() { state.withLock { $0.announced.append(ItemAnnouncement(kind: .lost, item: nil)) } }

    private func newPath(_ state: inout State) -> ItemPath {
        defer { state.nextNumber += 1 }
        return try! ItemPath("\(collectionPath)/\(state.nextNumber)")
    }

    private func token(_ state: State) -> ChangeToken { ChangeToken(connection: Self.connection, count: UInt64(state.announced.count)) }

    private func check(_ operation: String) throws(SecretServiceError) {
        if let error = state.withLock({ $0.failNext.removeValue(forKey: operation) }) { throw error }
    }

    private func tick(_ state: inout State) -> Date {
        state.clock = state.clock.addingTimeInterval(1)
        return state.clock
    }

    /// The unlock policy, as the client applies it.
    private func unlockIfLocked(_ state: inout State, _ operation: String) throws(SecretServiceError) {
        guard state.collectionLocked else { return }
        guard state.promptsUnlock else {
            throw SecretServiceError(.locked, operation: operation, message: "The keyring is locked.")
        }
        state.collectionLocked = false
        state.announced.append(ItemAnnouncement(kind: .lost, item: nil))
    }

    func ending(by deadline: Deadline) -> any SecretServiceCalls { self }
    /// The fake's prompts follow `promptsUnlock`, whatever the configuration says.
    func configured(_ configuration: KeychainConfiguration) -> any SecretServiceCalls { self }
    func collectionInfo(_ collection: CollectionReference) async throws(SecretServiceError) -> SecretCollectionInfo {
        try check("collectionInfo")
        return SecretCollectionInfo(path: collectionPath, label: "Login", isLocked: state.withLock { $0.collectionLocked })
    }
    func lock(_ paths: [ObjectPath]) async throws(SecretServiceError) {
        try check("lock")
        state.withLock { $0.collectionLocked = true; $0.announced.append(ItemAnnouncement(kind: .lost, item: nil)) }
    }
    func unlock(_ paths: [ObjectPath]) async throws(SecretServiceError) {
        try check("unlock")
        try state.withLock { state throws(SecretServiceError) in try unlockIfLocked(&state, "unlock") }
    }
    var currentChangeToken: ChangeToken? { state.withLock { token($0) } }
    var announcementMark: AnnouncementMark? {
        state.withLock { AnnouncementMark(connection: Self.connection, count: UInt64($0.announced.count)) }
    }
    func announcements(since mark: AnnouncementMark) -> [ItemAnnouncement]? {
        state.withLock { state in
            guard mark.connection == Self.connection, mark.count <= UInt64(state.announced.count) else { return nil }
            return Array(state.announced[Int(mark.count)...])
        }
    }
    func announcements(between earlier: ChangeToken, and later: ChangeToken) -> [ItemAnnouncement]? {
        guard let count = later.changes(since: earlier) else { return nil }
        return state.withLock { state in
            guard later.count <= UInt64(state.announced.count) else { return nil }
            return Array(state.announced[Int(earlier.count)..<Int(earlier.count + count)])
        }
    }
    var announcesSecretChanges: Bool? { state.withLock { $0.announcesSecretChanges } }
    func hearAnnouncementsRoutedSoFar() async throws(SecretServiceError) {
        try check("hear")
        state.withLock { state in
            state.roundTripsToTheBus += 1
            state.announced += state.onItsWay
            state.onItsWay = []
        }
    }

    func searchItems(matching attributes: [String: String], in collection: CollectionReference?) async throws(SecretServiceError) -> SecretSearchResult {
        try check("search")
        return state.withLock { state in
            state.searches += 1
            if attributes["xdg:schema"] == KeyVault.schema { state.keySearches += 1 }
            if let theirs = state.creatorAfterSearch {
                state.creatorAfterSearch = nil
                let answer = SecretSearchResult(unlocked: [], locked: [], changeToken: token(state))
                let other = newPath(&state)
                let time = tick(&state).addingTimeInterval(60)
                state.items[other] = Item(label: "theirs", attributes: theirs, secret: SecretValue(bytes: Data(#""theirs""#.utf8)),
                                          created: time, modified: time)
                state.announced.append(ItemAnnouncement(kind: .created, item: other))
                return answer
            }
            var paths = state.items.filter { _, item in attributes.allSatisfy { item.attributes[$0.key] == $0.value } }
                .keys.sorted()
            if attributes[AppIdentity.attribute] != nil, !state.missedByTheNextSearchOfTheApp.isEmpty {
                paths.removeAll { state.missedByTheNextSearchOfTheApp.contains($0) }
                state.missedByTheNextSearchOfTheApp = []
            }
            return state.collectionLocked ? SecretSearchResult(unlocked: [], locked: paths, changeToken: token(state))
                                          : SecretSearchResult(unlocked: paths, locked: [], changeToken: token(state))
        }
    }

    func findItems(matching attributes: [String: String], in collection: CollectionReference) async throws(SecretServiceError) -> SecretSearchResult {
        let found = try await searchItems(matching: attributes, in: collection)
        guard !found.locked.isEmpty || state.withLock({ $0.collectionLocked }) else { return found }
        try state.withLock { state throws(SecretServiceError) in try unlockIfLocked(&state, "find items") }
        return SecretSearchResult(unlocked: found.all, locked: [], changeToken: state.withLock { token($0) })
    }

    func itemInfo(_ path: ItemPath) async throws(SecretServiceError) -> SecretItemInfo {
        try check("info")
        return try state.withLock { state throws(SecretServiceError) in
            state.infoReads += 1
            guard let item = state.items[path] else { throw SecretServiceError(.itemNotFound, operation: "read item", message: "gone") }
            return SecretItemInfo(path: path, label: item.label, attributes: item.attributes,
                                  created: item.created, modified: item.modified, isLocked: state.collectionLocked)
        }
    }

    func secret(of path: ItemPath) async throws(SecretServiceError) -> SecretRead {
        try check("secret")
        return try state.withLock { state throws(SecretServiceError) in
            guard let item = state.items[path] else { throw SecretServiceError(.itemNotFound, operation: "read secret", message: "gone") }
            try unlockIfLocked(&state, "read secret")
            state.reads += 1
            let read = SecretRead(value: item.secret, changeToken: token(state))
            if let theirs = state.writeAfterNextRead {
                state.writeAfterNextRead = nil
                state.items[path]?.secret = SecretValue(bytes: theirs)
                if state.announcesSecretChanges { state.announced.append(ItemAnnouncement(kind: .changed, item: path)) }
            }
            return read
        }
    }

    func setSecret(_ value: SecretValue, of path: ItemPath) async throws(SecretServiceError) -> ChangeToken {
        try check("setSecret")
        return try state.withLock { state throws(SecretServiceError) in
            try unlockIfLocked(&state, "write secret")
            guard state.items[path] != nil else { throw SecretServiceError(.itemNotFound, operation: "write secret", message: "gone") }
            state.items[path]!.secret = SecretValue(bytes: Data(Array(value.bytes)), contentType: value.contentType)
            state.items[path]!.modified = tick(&state)
            state.writes.append("setSecret \(path)")
            if state.announcesSecretChanges { state.announced.append(ItemAnnouncement(kind: .changed, item: path)) }
            return token(state)
        }
    }

    func updateItem(_ path: ItemPath, label: String?, attributes: [String: String]?) async throws(SecretServiceError) {
        try check("update")
        try state.withLock { state throws(SecretServiceError) in
            if let attributes, !state.refusedAttributes.isDisjoint(with: attributes.keys) {
                throw SecretServiceError(.providerError, operation: "update item", message: "refused",
                                         dbusErrorName: "org.freedesktop.DBus.Error.InvalidArgs")
            }
            if let label { state.items[path]?.label = label }
            if let attributes { state.items[path]?.attributes = attributes }
            state.writes.append("update \(path)")
            state.announced.append(ItemAnnouncement(kind: .changed, item: path))
        }
    }

    func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                    secret: SecretValue, replacing: Bool) async throws(SecretServiceError) -> CreatedItem {
        if let hold = state.withLock({ state in defer { state.holdNextCreate = nil }; return state.holdNextCreate }) {
            await hold.wait()
        }
        try check("create")
        return try state.withLock { state throws(SecretServiceError) in
            state.createReplacing.append(replacing)
            try unlockIfLocked(&state, "create item")
            let path = newPath(&state)
            let time = tick(&state)
            // A copy, as a real service keeps one: the caller's buffer may be its own locked memory.
            let kept = SecretValue(bytes: Data(Array(secret.bytes)), contentType: secret.contentType)
            state.items[path] = Item(label: label, attributes: attributes, secret: kept, created: time, modified: time)
            state.writes.append("create \(path)")
            state.announced.append(ItemAnnouncement(kind: .created, item: path))
            if let theirs = state.concurrentCreator {
                state.concurrentCreator = nil
                let other = newPath(&state)
                let later = time.addingTimeInterval(5)
                state.items[other] = Item(label: "theirs", attributes: theirs, secret: SecretValue(bytes: Data(#""theirs""#.utf8)),
                                          created: later, modified: later)
                state.announced.append(ItemAnnouncement(kind: .created, item: other))
            }
            return CreatedItem(path: path, changeToken: token(state))
        }
    }

    func deleteItem(_ path: ItemPath) async throws(SecretServiceError) -> ChangeToken {
        try check("delete")
        return try state.withLock { state throws(SecretServiceError) in
            try unlockIfLocked(&state, "delete item")
            if state.items.removeValue(forKey: path) != nil {
                state.writes.append("delete \(path)")
                state.announced.append(ItemAnnouncement(kind: .deleted, item: path))
            }
            return token(state)
        }
    }
}
