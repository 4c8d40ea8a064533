import Locking
import Waiting

/// A ``Storage`` that forwards to another storage and can keep the item in memory
/// (see ``CacheStrategy``). The base class of ``MemoryStorage`` and ``KeychainStorage``, and of
/// custom storages written against the iOS SDK.
///
/// Thread-safety: safe to use from any number of tasks at once; the cache sits behind one lock
/// that is held only to copy a value in or out (a cached `get` costs one uncontended lock, and,
/// being `nonisolated(nonsending)`, runs on the caller's actor: no executor hop).
///
/// `@unchecked Sendable`: the class is `open` (so it cannot be checked `Sendable`), and its own
/// state is immutable except for the cache, which is a `Locked` value. Subclasses must keep their own
/// state equally safe.
open class StorageDelegate<T: Codable & Sendable>: Storage, @unchecked Sendable {
    private let delegate: any Storage<T>
    /// How this storage caches.
    public let cacheStrategy: CacheStrategy
    private let cache = Locked<T?>(nil)
    /// Orders saves and deletes (see ``save(item:)``).
    private let writes = AccountLocks()

    /// Creates a storage that forwards to `delegate`, caching according to `cacheStrategy`.
    public init(delegate: any Storage<T>, cacheStrategy: CacheStrategy = .NO_CACHE) {
        self.delegate = delegate
        self.cacheStrategy = cacheStrategy
    }

    /// Creates a storage that forwards to `delegate`; `cacheable: true` is ``CacheStrategy/CACHE``
    /// and `false` is ``CacheStrategy/NO_CACHE`` (the iOS SDK 1.x initializer).
    public init(delegate: any Storage<T>, cacheable: Bool) {
        self.delegate = delegate
        self.cacheStrategy = cacheable ? .CACHE : .NO_CACHE
    }

    /// Saves `item` to the delegate and, depending on the strategy, to the cache.
    ///
    /// Saves and deletes of one storage run one after the other, so that the cache and the
    /// delegate always end up holding the same item, whatever the interleaving of concurrent calls.
    /// - Throws: the delegate's error. With ``CacheStrategy/CACHE`` the item stays cached anyway.
    nonisolated(nonsending) public func save(item: T) async throws {
        try await serially {
            switch cacheStrategy {
            case .NO_CACHE:
                try await delegate.save(item: item)
            case .CACHE:
                cache.withLock { $0 = item }
                try await delegate.save(item: item)
            case .CACHE_ON_FAILURE:
                try await delegate.save(item: item)
                cache.withLock { $0 = item }
            }
        }
    }

    /// The item, from the cache or the delegate depending on the strategy.
    /// - Throws: the delegate's error (with ``CacheStrategy/CACHE_ON_FAILURE`` only when the
    ///   cache is empty).
    nonisolated(nonsending) public func get() async throws -> T? {
        switch cacheStrategy {
        case .NO_CACHE:
            return try await delegate.get()
        case .CACHE:
            if let cached = cache.withLock({ $0 }) { return cached }
            return try await delegate.get()
        case .CACHE_ON_FAILURE:
            do {
                // Serialized with saves: a read that started before a save must not put the old
                // item back into the cache after the save put the new one there.
                return try await serially {
                    let item = try await delegate.get()
                    cache.withLock { $0 = item }
                    return item
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if let cached = cache.withLock({ $0 }) { return cached }
                throw error
            }
        }
    }

    /// Deletes the item from the delegate, then clears the cache.
    /// - Throws: the delegate's error; the cache is then left as it was.
    nonisolated(nonsending) public func delete() async throws {
        try await serially {
            try await delegate.delete()
            cache.withLock { $0 = nil }
        }
    }

    /// Runs a save, a delete, or a `get` that refreshes the cache, after the ones before it (a
    /// cached `get` never waits).
    nonisolated(nonsending) private func serially<Value: Sendable>(
        _ body: nonisolated(nonsending) () async throws -> Value
    ) async throws -> Value {
        guard cacheStrategy != .NO_CACHE else { return try await body() }
        do {
            return try await writes.withLock("", deadline: Deadline(timeout: Deadline.longest), body)
        } catch WaitError.cancelled {
            throw CancellationError()
        }
    }
}
