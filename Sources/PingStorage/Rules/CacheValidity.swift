/// A storage whose item other processes may change (``KeychainStorage``'s store): how
/// ``StorageDelegate`` keeps its cache true across processes. Decided once, when the delegate is
/// made; a storage written for iOS has none, and its cache behaves as on iOS.
protocol CacheValidating: Sendable {
    /// What has been heard of changes by now, without I/O: while it is what it was when the item
    /// was cached (and for a short while: ``CacheStamp/trustedFor``), the cached item is current.
    /// Nil when nothing can be heard (no connection, no watch): the cache is checked.
    func cacheStamp() -> StoreStamp?
    /// Whether the item is still what this process last read or wrote, given what was heard since
    /// `stamp`: without I/O when that tells, else (always when `verifying`) by reading it once.
    /// False when it cannot tell.
    func isUnchanged(since stamp: StoreStamp, verifying: Bool) async -> Bool
}

/// When a cached item was last known current, and what had been heard by then.
struct CacheStamp: Sendable {
    /// How long a cached item is trusted on what has been heard alone, before it is checked: GNOME
    /// Keyring announces no secret written in place, so another process's save of the item is
    /// heard by no one; checking at most this often bounds how long such a save goes unseen.
    static let trustedFor: Duration = .milliseconds(50)

    let heard: StoreStamp?
    let checked: ContinuousClock.Instant

    /// Whether the cached item is current without a check: nothing heard since, checked recently.
    func stillTrusted(heardNow: StoreStamp?, at now: ContinuousClock.Instant) -> Bool {
        guard let heard, heardNow == heard else { return false }
        return now - checked < Self.trustedFor
    }
}

extension KeychainStore: CacheValidating {
    func cacheStamp() -> StoreStamp? { items.cacheStamp() }
    func isUnchanged(since stamp: StoreStamp, verifying: Bool) async -> Bool {
        await items.isUnchanged(since: stamp, verifying: verifying)
    }
}
