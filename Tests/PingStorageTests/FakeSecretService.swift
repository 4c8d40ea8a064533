import Locking
import Foundation
import SecretService
import Synchronization
@testable import PingStorage

/// An in-memory Secret Service for unit tests: items, a lockable collection, scripted failures,
/// and a log of every write so tests can prove what did (not) change.
final class FakeSecretService: SecretServiceBackend {
    struct Item {
        var label: String
        var attributes: [String: String]
        var secret: SecretValue
        var created: Date
        var modified: Date
    }
    struct State {
        var items: [String: Item] = [:]
        var nextNumber = 1
        var collectionLocked = false
        var promptsUnlock = true
        var failNext: [String: SecretServiceError] = [:]
        var writes: [String] = []
        var clock = Date(timeIntervalSince1970: 1_700_000_000)
        var generation: UInt64 = 1
        var reads = 0
        var searches = 0
        /// KWallet's behaviour: a locked collection answers reads with an empty secret (no error)
        /// and still accepts writes and deletes of items by path.
        var lockedAnswersEmpty = false
        /// KeePassXC's behaviour: attribute writes containing these names fail with InvalidArgs.
        var refusedAttributes: Set<String> = []
        /// The `replacing` argument of every createItem call.
        var createReplacing: [Bool] = []
        /// When set, the next createItem also adds an item with these attributes, newer than ours:
        /// another process creating the same account at the same moment.
        var concurrentCreator: [String: String]?
        /// When set, the next search answers as if these attributes had no item, and then another
        /// process's item with them appears (between our search and our CreateItem).
        var creatorAfterSearch: [String: String]?
    }
    let state = Locked(State())
    let collectionPath = "/org/freedesktop/secrets/collection/login"
    let knownItems = KnownItemCache()

    func seed(attributes: [String: String], secret: String, label: String = "seeded", modifiedOffset: TimeInterval = 0) -> String {
        state.withLock { state in
            let path = "\(collectionPath)/\(state.nextNumber)"
            state.nextNumber += 1
            let time = state.clock.addingTimeInterval(modifiedOffset)
            state.items[path] = Item(label: label, attributes: attributes, secret: SecretValue(bytes: Data(secret.utf8)),
                                     created: time, modified: time)
            state.generation += 1
            return path
        }
    }

    var items: [String: Item] { state.withLock { $0.items } }
    var itemGeneration: UInt64 { state.withLock { $0.generation } }
    var reads: Int { state.withLock { $0.reads } }
    var searches: Int { state.withLock { $0.searches } }
    var writes: [String] { state.withLock { $0.writes } }

    private func check(_ operation: String) throws {
        if let error = state.withLock({ $0.failNext.removeValue(forKey: operation) }) { throw error }
    }

    private func tick(_ state: inout State) -> Date {
        state.clock = state.clock.addingTimeInterval(1)
        return state.clock
    }

    func searchItems(matching attributes: [String: String], in collection: CollectionReference?) async throws -> SecretSearchResult {
        try check("search")
        return state.withLock { state in
            state.searches += 1
            if let theirs = state.creatorAfterSearch {
                state.creatorAfterSearch = nil
                let other = "\(collectionPath)/\(state.nextNumber)"
                state.nextNumber += 1
                let time = tick(&state).addingTimeInterval(60)
                state.items[other] = Item(label: "theirs", attributes: theirs, secret: SecretValue(bytes: Data(#""theirs""#.utf8)),
                                          created: time, modified: time)
                state.generation += 1
                return SecretSearchResult(unlocked: [], locked: [])
            }
            let paths = state.items.filter { _, item in attributes.allSatisfy { item.attributes[$0.key] == $0.value } }
                .keys.sorted()
            return state.collectionLocked ? SecretSearchResult(unlocked: [], locked: paths)
                                          : SecretSearchResult(unlocked: paths, locked: [])
        }
    }

    func itemInfo(_ path: String) async throws -> SecretItemInfo {
        try check("info")
        return try state.withLock { state in
            guard let item = state.items[path] else { throw SecretServiceError(.itemNotFound, operation: "read item", message: "gone") }
            return SecretItemInfo(path: path, collectionPath: collectionPath, label: item.label, attributes: item.attributes,
                                  created: item.created, modified: item.modified, isLocked: state.collectionLocked)
        }
    }

    func secret(of path: String) async throws -> SecretValue {
        try check("secret")
        return try state.withLock { state in
            guard let item = state.items[path] else { throw SecretServiceError(.itemNotFound, operation: "read secret", message: "gone") }
            if state.collectionLocked {
                guard state.lockedAnswersEmpty else { throw SecretServiceError(.locked, operation: "read secret", message: "locked") }
                return SecretValue(bytes: Data(), contentType: "text/plain")
            }
            state.reads += 1
            return item.secret
        }
    }

    func setSecret(_ value: SecretValue, of path: String) async throws {
        try check("setSecret")
        try state.withLock { state in
            if state.collectionLocked && !state.lockedAnswersEmpty {
                throw SecretServiceError(.locked, operation: "write secret", message: "locked")
            }
            guard state.items[path] != nil else { throw SecretServiceError(.itemNotFound, operation: "write secret", message: "gone") }
            state.items[path]!.secret = value
            state.items[path]!.modified = tick(&state)
            state.writes.append("setSecret \(path)")
        }
    }

    func updateItem(_ path: String, label: String?, attributes: [String: String]?) async throws {
        try check("update")
        try state.withLock { state in
            if let attributes, !state.refusedAttributes.isDisjoint(with: attributes.keys) {
                throw SecretServiceError(.providerError, operation: "update item", message: "InvalidArgs",
                                         dbusErrorName: "org.freedesktop.DBus.Error.InvalidArgs")
            }
            if let label { state.items[path]?.label = label }
            if let attributes { state.items[path]?.attributes = attributes }
            state.writes.append("update \(path)")
        }
    }

    func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                    secret: SecretValue, replacing: Bool) async throws -> String {
        try check("create")
        return try state.withLock { state in
            state.createReplacing.append(replacing)
            if state.collectionLocked {
                guard state.promptsUnlock else { throw SecretServiceError(.locked, operation: "create", message: "locked") }
                state.collectionLocked = false
            }
            let path = "\(collectionPath)/\(state.nextNumber)"
            state.nextNumber += 1
            let time = tick(&state)
            state.items[path] = Item(label: label, attributes: attributes, secret: secret, created: time, modified: time)
            state.writes.append("create \(path)")
            state.generation += 1
            if let theirs = state.concurrentCreator {
                state.concurrentCreator = nil
                let other = "\(collectionPath)/\(state.nextNumber)"
                state.nextNumber += 1
                let later = time.addingTimeInterval(5)
                state.items[other] = Item(label: "theirs", attributes: theirs, secret: SecretValue(bytes: Data(#""theirs""#.utf8)),
                                          created: later, modified: later)
                state.generation += 1
            }
            return path
        }
    }

    func deleteItem(_ path: String) async throws {
        try check("delete")
        try state.withLock { state in
            if state.collectionLocked && !state.lockedAnswersEmpty {
                throw SecretServiceError(.locked, operation: "delete item", message: "locked")
            }
            state.items[path] = nil
            state.writes.append("delete \(path)")
            state.generation += 1
        }
    }

    func collectionInfo(_ collection: CollectionReference) async throws -> SecretCollectionInfo {
        try check("collection")
        return state.withLock { SecretCollectionInfo(path: collectionPath, label: "Login", isLocked: $0.collectionLocked) }
    }

    func unlock(_ paths: [String]) async throws {
        try check("unlock")
        try state.withLock { state in
            guard state.promptsUnlock else {
                throw SecretServiceError(.locked, operation: "unlock", message: "locked and prompts are disabled")
            }
            state.collectionLocked = false
        }
    }
}
