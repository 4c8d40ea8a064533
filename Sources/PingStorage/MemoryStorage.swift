import Locking

/// Storage in process memory. The item is a plain value, not encrypted, and is gone when the
/// process ends.
///
/// Thread-safety: safe from any number of tasks. `@unchecked Sendable` for the reason given on
/// ``StorageDelegate``; this subclass adds no state.
public class MemoryStorage<T: Codable & Sendable>: StorageDelegate<T>, @unchecked Sendable {
    /// Creates an empty memory storage; `cacheable` as in ``StorageDelegate/init(delegate:cacheable:)``.
    public init(cacheable: Bool = false) {
        super.init(delegate: InMemoryStore<T>(), cacheable: cacheable)
    }

    /// Creates an empty memory storage with a cache strategy.
    public init(cacheStrategy: CacheStrategy) {
        super.init(delegate: InMemoryStore<T>(), cacheStrategy: cacheStrategy)
    }
}

/// An item in process memory, as an actor: the iOS SDK's `Memory<T>`, the store behind its
/// `MemoryStorage`. Not encrypted; gone when the process ends.
///
/// ``MemoryStorage`` does not use it: its store is lock-protected and runs on the caller's
/// executor, so a call from the main actor does not hop to this actor's. Use `Memory` where iOS
/// code names it, or wrap it yourself (`StorageDelegate(delegate: Memory<T>(), cacheable: false)`).
///
/// Thread-safety: an actor; safe from any task. Never throws.
public actor Memory<T: Codable & Sendable>: Storage {
    private var item: T?

    /// An empty store.
    public init() {}

    /// Keeps `item`, replacing the one before.
    public func save(item: T) async throws { self.item = item }

    /// The item; nil when there is none.
    public func get() async throws -> T? { item }

    /// Forgets the item; nothing to forget is not an error.
    public func delete() async throws { item = nil }
}

/// The delegate behind ``MemoryStorage``.
final class InMemoryStore<T: Codable & Sendable>: Storage {
    private let item = Locked<T?>(nil)
    nonisolated(nonsending) func save(item: T) async throws { self.item.withLock { $0 = item } }
    nonisolated(nonsending) func get() async throws -> T? { item.withLock { $0 } }
    nonisolated(nonsending) func delete() async throws { item.withLock { $0 = nil } }
}
