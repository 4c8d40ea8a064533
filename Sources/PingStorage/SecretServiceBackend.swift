import Foundation
import SecretService
import Synchronization

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
    private let entries = Mutex<[String: Entry]>([:])

    subscript(key: String) -> Entry? {
        get { entries.withLock { $0[key] } }
        set { entries.withLock { $0[key] = newValue } }
    }
}
