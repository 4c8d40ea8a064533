#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Locking
import Waiting

/// The item of one account, for ``KeychainStorage``: the names checked, the account's lock held
/// (the place's ``AccountLocks``), the place opened for the configuration (``KeychainPlace``), and
/// every call ending by the configuration's deadline; the rules themselves are ``AccountRules``'s,
/// applied by the store (``KeyringStore``). What a store throws is turned into what a Storage
/// method throws here, once.
struct KeychainItems: Sendable {
    let rules: AccountRules
    let configuration: KeychainConfiguration
    /// Where the configuration's items are.
    let place: KeychainPlace
    /// The store, once a call opened it: what the cache's checks ask (they open nothing themselves).
    private let openedStore = Locked<(any KeyringStore)?>(nil)

    var account: String { rules.account }

    /// The items of `account` where `configuration` keeps them, in `runtime`'s place for it.
    init(account: String, configuration: KeychainConfiguration, runtime: KeychainRuntime = .process) {
        let configuration = configuration.resolvingApp()
        rules = AccountRules(account: account, configuration: configuration)
        self.configuration = configuration
        place = runtime.place(for: configuration)
    }

    /// Checks the names before anything is sent.
    /// - Throws: ``KeychainError/Reason/invalidArgument(_:)``.
    func validate() throws {
        do { try rules.validate() } catch { throw error.thrown }
    }

    /// The stored bytes, or nil when there is no item. Never writes, deletes or unlocks anything
    /// but through the prompt the configuration allows. (The first call of a configuration opens
    /// its place, which in a Flatpak sandbox may copy the host's items into the file keyring once:
    /// ``HostMigration``; that is the opening's doing, not this read's.)
    func read(by deadline: Deadline) async throws -> StoredSecret? {
        try await operation("read", by: deadline) { store, rules, deadline throws(StorageFailure) in
            try await store.read(rules, by: deadline)
        }
    }

    /// A deadline of the configuration's timeout from now: one call's, from its start, not counting
    /// the time a prompt of this process is on screen (``KeychainPlace/deadline(timeout:)``).
    func deadline() -> Deadline { place.deadline(timeout: configuration.timeout) }

    /// Seals `plaintext` with `sealer` and stores it so that exactly one item holds it afterwards,
    /// with one write at most, and none when the item already holds it (the same bytes, or what
    /// the sealed value recognises as the same plaintext). After a write, the sealed value confirms
    /// its key; when the key changed meanwhile, the value is sealed and written again (three times
    /// at most). All of it holds the account's lock and ends by one deadline.
    func save(_ plaintext: Data, sealer: any AccountSealer, context: EncryptionContext) async throws {
        try await operation("save", by: deadline()) { store, rules, deadline throws(StorageFailure) in
            for _ in 0..<3 {
                var sealed = try await StorageFailure.passingThrough { try await sealer.seal(plaintext, for: context, by: deadline) }
                defer { sealed.bytes.wipe() }
                let (bytes, same) = (sealed.bytes, sealed.holdsSameValue)
                let holds = { @Sendable (current: Data) in current == bytes || same?(current) == true }
                let wrote = try await store.write(StoredSecret(bytes: bytes), holds: holds, for: rules, by: deadline)
                guard wrote, let confirmKey = sealed.confirmKey else { return }
                if try await StorageFailure.passingThrough({ try await confirmKey(deadline) }) { return }
            }
            throw .failure(.providerError(.init(
                message: "The encryption key kept changing while the item was being saved.",
                recovery: "Check which program rewrites the PingStorage encryption key item, then save again.",
                detail: "service \(rules.service), account \(rules.account)")))
        }
    }

    /// Stores `bytes` as they are (``save(_:sealer:context:)`` without an encryptor).
    func write(_ bytes: Data) async throws {
        try await save(bytes, sealer: EncryptorSealer(encryptor: NoEncryptor()),
                       context: EncryptionContext(service: configuration.service, account: account))
    }

    /// Deletes every item of the account. Nothing to delete is success.
    func delete() async throws {
        try await operation("delete", by: deadline()) { store, rules, deadline throws(StorageFailure) in try await store.delete(rules, by: deadline) }
    }

    /// Where the item lives, without its secret; nil when there is none.
    func info() async throws -> KeychainItemInfo? {
        try await operation("item info", by: deadline()) { store, rules, deadline throws(StorageFailure) in try await store.info(rules, by: deadline) }
    }

    /// The item ``read()`` reads, with its metadata, found afresh (not the remembered item); nil
    /// when there is no item.
    func infoAndSecret() async throws -> (info: KeychainItemInfo, secret: StoredSecret)? {
        try await operation("read with item info", by: deadline()) { store, rules, deadline throws(StorageFailure) in
            try await store.infoAndSecret(rules, by: deadline)
        }
    }

    // MARK: Whether a cached item is still current (``StorageDelegate``)

    /// What the store has heard of changes by now, without I/O; nil before the first call opened
    /// it, or when it cannot tell.
    func cacheStamp() -> StoreStamp? { openedStore.withLock { $0 }?.changeStamp() }

    /// Whether the account's item is as this process last read or wrote it, given what was heard
    /// since `stamp` (``KeyringStore/isUnchanged(_:since:by:)``), checked holding the account's
    /// lock; false on any failure (the cache is then dropped, and the keyring read).
    func isUnchanged(since stamp: StoreStamp, verifying: Bool) async -> Bool {
        guard let store = openedStore.withLock({ $0 }) else { return false }
        let (deadline, rules, place) = (deadline(), rules, place)
        do {
            return try await place.locks.withLock(rules.lockKey, deadline: deadline) { () async throws(StorageFailure) -> Bool in
                try await store.isUnchanged(rules, since: stamp, verifying: verifying, by: deadline)
            }
        } catch {
            return false
        }
    }

    /// Runs `body` on the store, holding the account's lock, ending by `deadline` (waiting for the
    /// lock and opening the place included), and throws what a Storage method throws.
    private func operation<Value: Sendable>(
        _ name: String, by deadline: Deadline, _ body: (any KeyringStore, AccountRules, Deadline) async throws(StorageFailure) -> Value
    ) async throws -> Value {
        let started = ContinuousClock.now
        defer { Log.debug("\(name) of account '\(account)' (service \(configuration.service)): \((ContinuousClock.now - started).milliseconds)") }
        let failure: StorageFailure
        do {
            try rules.validate()
            let (place, configuration) = (place, configuration)
            return try await place.locks.withLock(rules.lockKey, deadline: deadline) { () async throws(StorageFailure) in
                let store = try await place.openStore(for: configuration, by: deadline)
                if openedStore.withLock({ $0 == nil }) {
                    // From the first call on, what other processes change is heard (a watch of the
                    // file starts now, before this call writes anything).
                    _ = store.changeStamp()
                    openedStore.withLock { $0 = store }
                }
                return try await body(store, rules, deadline)
            }
        } catch let error as StorageFailure {
            failure = error
        } catch let error as WaitError {
            failure = StorageFailure(error)
        }
        if let reason = failure.reason {
            Log.warning("\(name) of account '\(account)' (service \(configuration.service)) failed: \(reason.kind)", error: failure.thrown)
        }
        throw failure.thrown
    }
}

/// KeychainStorage's item rules on raw bytes, without JSON: for the test that looks for copies of
/// secrets in process memory (JSONEncoder's own buffers are out of the library's reach, so the
/// test starts below them).
package struct RawKeychainItem: Sendable {
    private let items: KeychainItems

    package init(account: String, configuration: KeychainConfiguration) {
        items = KeychainItems(account: account, configuration: configuration)
    }

    package func write(_ bytes: Data) async throws { try await items.write(bytes) }
    package func read() async throws -> Data? { try await items.read(by: items.deadline())?.bytes }
    package func delete() async throws { try await items.delete() }
}

extension Data {
    /// Zeroes the bytes in place (best effort: copies other code made are out of reach).
    mutating func wipe() { resetBytes(in: startIndex..<endIndex) }
}
