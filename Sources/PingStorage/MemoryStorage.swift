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

/// The delegate behind ``MemoryStorage``.
final class InMemoryStore<T: Codable & Sendable>: Storage {
    private let item = Locked<T?>(nil)
    nonisolated(nonsending) func save(item: T) async throws { self.item.withLock { $0 = item } }
    nonisolated(nonsending) func get() async throws -> T? { item.withLock { $0 } }
    nonisolated(nonsending) func delete() async throws { item.withLock { $0 = nil } }
}
