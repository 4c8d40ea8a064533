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
/// **A cache across processes.** When the delegate is a ``KeychainStorage``'s, the cache follows
/// the keyring: another process's save or delete of the item (another instance of the app, its
/// command-line helper) reaches a cached `get` as soon as its announcement arrives where the
/// keyring announces it (KWallet, a file keyring in a sandbox; a `get` more than 50 ms after the
/// last check first makes one round trip to the bus, so that an announcement still on its way is
/// not missed), and within 50 ms where it does not (GNOME Keyring announces no secret written in
/// place, KeePassXC none written while it saves its database): the item is then checked by
/// reading it once, and a changed or deleted item is read from the keyring, which is then what the
/// cache holds. A lost connection or a provider that restarted is checked the same way. Between
/// checks a cached `get` costs what it did: no D-Bus, no file I/O. A storage written for iOS caches as on iOS.
///
/// `@unchecked Sendable`: the class is `open` (so it cannot be checked `Sendable`), and its own
/// state is immutable except for the cache, which is a `Locked` value. Subclasses must keep their own
/// state equally safe.
open class StorageDelegate<T: Codable & Sendable>: Storage, @unchecked Sendable {
    private let delegate: any Storage<T>
    /// How this storage caches.
    public let cacheStrategy: CacheStrategy
    private let cache = Locked<Cached?>(nil)
    /// The delegate, when other processes may change its item (``CacheValidating``).
    private let validator: (any CacheValidating)?

    /// The cached item, with what was heard when it was last known current (nil: to be checked).
    private struct Cached: Sendable {
        var item: T?
        var stamp: CacheStamp?
        /// Which save put it there: a check that ends after another save leaves that save's item.
        var save: UInt64
    }
    /// Orders saves and deletes (see ``save(item:)``).
    private let writes = AccountLocks()

    /// Creates a storage that forwards to `delegate`, caching according to `cacheStrategy`.
    public init(delegate: any Storage<T>, cacheStrategy: CacheStrategy = .NO_CACHE) {
        self.delegate = delegate
        self.cacheStrategy = cacheStrategy
        validator = delegate as? any CacheValidating
    }

    /// Creates a storage that forwards to `delegate`; `cacheable: true` is ``CacheStrategy/CACHE``
    /// and `false` is ``CacheStrategy/NO_CACHE`` (the iOS SDK 1.x initializer).
    public init(delegate: any Storage<T>, cacheable: Bool) {
        self.delegate = delegate
        self.cacheStrategy = cacheable ? .CACHE : .NO_CACHE
        validator = delegate as? any CacheValidating
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
                let heard = validator?.cacheStamp()
                let save = cache.withLock { cached in
                    let save = (cached?.save ?? 0) &+ 1
                    cached = Cached(item: item, stamp: nil, save: save)
                    return save
                }
                try await delegate.save(item: item)
                await stamp(save: save, heardBefore: heard)
            case .CACHE_ON_FAILURE:
                try await delegate.save(item: item)
                cache.withLock { $0 = Cached(item: item, stamp: nil, save: ($0?.save ?? 0) &+ 1) }
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
            guard let cached = cache.withLock({ $0 }), let item = cached.item else { return try await delegate.get() }
            if await isCurrent(cached) { return item }
            // Another process changed the item: what the keyring holds now is cached in its place
            // (a stale cache is replaced, not left empty for the rest of the process).
            return try await serially {
                let heard = validator?.cacheStamp()
                let item = try await delegate.get()
                cache.withLock { cached in
                    cached = Cached(item: item, stamp: heard.map { CacheStamp(heard: $0, checked: .now) }, save: (cached?.save ?? 0) &+ 1)
                }
                return item
            }
        case .CACHE_ON_FAILURE:
            do {
                // Serialized with saves: a read that started before a save must not put the old
                // item back into the cache after the save put the new one there.
                return try await serially {
                    let item = try await delegate.get()
                    cache.withLock { $0 = Cached(item: item, stamp: nil, save: ($0?.save ?? 0) &+ 1) }
                    return item
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if let cached = cache.withLock({ $0 }), let item = cached.item { return item }
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

    // MARK: The cache across processes (``CacheValidating``)

    /// Whether `cached` is current: always for a delegate that no other process changes; else
    /// when nothing was heard since it was last known current, recently (no I/O), or when a check
    /// says so (then it is known current from now). A cache found stale is dropped, unless a save
    /// replaced it meanwhile (the `get` that found it stale then caches what it reads).
    nonisolated(nonsending) private func isCurrent(_ cached: Cached) async -> Bool {
        guard let validator else { return true }
        let heardNow = validator.cacheStamp()
        if let stamp = cached.stamp, stamp.stillTrusted(heardNow: heardNow, at: .now) { return true }
        guard let since = cached.stamp?.heard ?? heardNow,
              await validator.isUnchanged(since: since, verifying: cached.stamp?.heard == nil) else {
            cache.withLock { if $0?.save == cached.save { $0 = nil } }
            return false
        }
        // Known current as of what had been heard before the check: what arrives while it runs
        // (another process's save announced during its read) is examined by the next get.
        let checked = CacheStamp(heard: heardNow, checked: .now)
        cache.withLock { if $0?.save == cached.save { $0?.stamp = checked } }
        return true
    }

    /// After the save `save` returned: its item is known current from now when nothing was heard
    /// during it, or when a check (reading the item once: what was heard may be the save's own
    /// announcements, or may not cover everything) finds the keyring holding what it wrote.
    nonisolated(nonsending) private func stamp(save: UInt64, heardBefore: StoreStamp?) async {
        guard let validator, let heardAfter = validator.cacheStamp() else { return }
        let current = heardBefore == heardAfter
            ? true
            : await validator.isUnchanged(since: heardBefore ?? heardAfter, verifying: true)
        guard current else { return }
        let checked = CacheStamp(heard: heardAfter, checked: .now)  // not later: see isCurrent
        cache.withLock { if $0?.save == save { $0?.stamp = checked } }
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
