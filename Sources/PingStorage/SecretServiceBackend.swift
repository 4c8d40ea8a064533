import Locking
import Foundation
import SecretService

/// The Secret Service operations ``KeychainStorage`` needs. ``SecretServiceClient`` is the real
/// one; unit tests supply an in-memory one.
protocol SecretServiceBackend: Sendable {
    func searchItems(matching attributes: [String: String], in collection: CollectionReference?) async throws -> SecretSearchResult
    func itemInfo(_ path: String) async throws -> SecretItemInfo
    func secret(of path: String) async throws -> SecretValue
    func setSecret(_ value: SecretValue, of path: String) async throws
    func updateItem(_ path: String, label: String?, attributes: [String: String]?) async throws
    func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                    secret: SecretValue, replacing: Bool) async throws -> String
    func deleteItem(_ path: String) async throws
    func collectionInfo(_ collection: CollectionReference) async throws -> SecretCollectionInfo
    func unlock(_ paths: [String]) async throws
    /// Advances whenever an item may have been created or deleted (see ``ItemChanges``).
    var itemGeneration: UInt64 { get }
    /// Which item holds each account, as last found through this backend.
    var knownItems: KnownItemCache { get }
}

extension SecretServiceBackend {
    /// The items matching `attributes` in `collection`, unlocked (through the prompt the
    /// configuration allows); nil when there are none. A locked collection with no visible match
    /// is reported as locked, never as "nothing there".
    func findUnlockedItems(matching attributes: [String: String], in collection: CollectionReference) async throws -> [String]? {
        let found = try await searchItems(matching: attributes, in: collection)
        if !found.locked.isEmpty {
            try await unlock(found.locked)
        }
        if found.all.isEmpty {
            let info = try await collectionInfo(collection)
            guard info.isLocked else { return nil }
            // Some providers hide a locked collection's items from searches.
            try await unlock([info.path])
            let again = try await searchItems(matching: attributes, in: collection)
            if !again.locked.isEmpty { try await unlock(again.locked) }
            return again.all.isEmpty ? nil : again.all
        }
        return found.all
    }
}

extension SecretServiceClient: SecretServiceBackend {
    var itemGeneration: UInt64 { ItemChanges.generation }
    /// All clients share one connection, so they share what it found.
    var knownItems: KnownItemCache { KnownItemCache.shared }
}

/// Which item path holds each account, and the ``ItemChanges`` generation when it was found.
final class KnownItemCache: Sendable {
    static let shared = KnownItemCache()

    struct Entry: Sendable {
        var path: String
        var generation: UInt64
        /// Whether the item already carries our attributes and label (else a write must add them).
        var isComplete: Bool
    }
    private let entries = Locked<[String: Entry]>([:])

    subscript(key: String) -> Entry? {
        get { entries.withLock { $0[key] } }
        set { entries.withLock { $0[key] = newValue } }
    }
}
