#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A place that keeps one item of type `T`: save it, read it back, delete it.
///
/// The same protocol as the iOS SDK's `Storage`; the primary associated type makes
/// `any Storage<Token>` work. Conforming types must be safe to call from any task.
///
/// The requirements are `nonisolated(nonsending)`: a conformer that declares its methods so runs
/// them with the caller's isolation (an app's main actor), so a call answered from memory
/// (``StorageDelegate``'s cache) never leaves it: no hop to the global executor and back
/// (`MainActorTests.whichExecutorAStorageCallRunsOn` checks it with `#isolation`). A conformer
/// written the iOS way, without the annotation, still conforms; its methods are plain nonisolated
/// async functions, which Swift 6 runs on the global concurrent executor, as it runs
/// ``KeychainStorage``'s keyring work. A conformer that blocks (synchronous file I/O, say) must
/// not be `nonsending`: it would block the caller's actor.
public protocol Storage<T>: Sendable {
    /// The stored item's type.
    associatedtype T: Codable, Sendable

    /// Stores `item`, replacing what was stored.
    /// - Throws: whatever the storage cannot do; see the conforming type.
    nonisolated(nonsending) func save(item: T) async throws

    /// The stored item, or nil when nothing is stored.
    /// - Throws: when the storage cannot be read (for ``KeychainStorage``: locked, unavailable,
    ///   timed out, corrupt). "Cannot read" is never reported as nil.
    nonisolated(nonsending) func get() async throws -> T?

    /// Removes the stored item. Deleting when nothing is stored succeeds.
    /// - Throws: when the storage cannot be changed.
    nonisolated(nonsending) func delete() async throws
}

/// How a ``StorageDelegate`` keeps a copy of the item in memory.
///
/// Cached items are plain values in process memory, not encrypted.
public enum CacheStrategy: Sendable, Hashable {
    /// Reads are answered from the cache when it holds an item; saves write to the cache and then
    /// to storage (a failed save leaves the item cached and throws); a successful delete clears it.
    /// Reads do not fill the cache (as on iOS).
    case CACHE
    /// No cache: every call goes to storage and its errors propagate.
    case NO_CACHE
    /// Every call goes to storage; successful reads and saves refresh the cache, and the cache
    /// answers a read only when storage fails (the error propagates when the cache is empty).
    case CACHE_ON_FAILURE
}
