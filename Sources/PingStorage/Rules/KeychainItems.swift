#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SecretService
import Waiting

/// The item of one account, for ``KeychainStorage``: the names checked, the account's lock held
/// (``AccountLocks``), the store chosen (``KeychainPlaces``), and every call ending by the
/// configuration's deadline; the rules themselves are ``AccountRules``'s, applied by the store
/// (``KeyringStore``). What a store throws is turned into what a Storage method throws here, once.
struct KeychainItems: Sendable {
    let rules: AccountRules
    let configuration: KeychainConfiguration
    /// The store, when given (unit tests); else the configuration's, decided at the first call.
    private let givenStore: (any KeyringStore)?

    var account: String { rules.account }

    /// The items of `account` where `configuration` keeps them, or always in `store` when one is given.
    init(account: String, configuration: KeychainConfiguration, store: (any KeyringStore)? = nil) {
        let configuration = configuration.resolvingApp()
        rules = AccountRules(account: account, configuration: configuration)
        self.configuration = configuration
        givenStore = store
    }

    /// Checks the names before anything is sent.
    /// - Throws: ``KeychainError/Reason/invalidArgument(_:)``.
    func validate() throws {
        do { try rules.validate() } catch { throw error.thrown }
    }

    /// The stored bytes, or nil when there is no item. Never writes, deletes or unlocks anything
    /// but through the prompt the configuration allows. (The first call of a configuration in a
    /// Flatpak sandbox chooses the store, and may then copy the host's items into the file keyring
    /// once: ``HostMigration``; that is the choice's doing, not this read's.)
    func read() async throws -> SecretValue? {
        try await operation("read") { store, rules, deadline throws(StorageFailure) in try await store.read(rules, by: deadline) }
    }

    /// Stores `value` so that exactly one item holds it afterwards, with one write at most, and
    /// none when the item already holds `value`, or what `sameValue` recognises as the same (an
    /// encryptor's envelope of the same plaintext: gnome-keyring rewrites its whole file on every
    /// write).
    /// - Returns: whether the secret was written (false: the item already held the value).
    @discardableResult
    func write(_ value: SecretValue, sameValue: (@Sendable (Data) -> Bool)? = nil) async throws -> Bool {
        let holds = { @Sendable (current: Data) in current == value.bytes || sameValue?(current) == true }
        return try await operation("save") { store, rules, deadline throws(StorageFailure) in
            try await store.write(value, holds: holds, for: rules, by: deadline)
        }
    }

    /// Deletes every item of the account. Nothing to delete is success.
    func delete() async throws {
        try await operation("delete") { store, rules, deadline throws(StorageFailure) in try await store.delete(rules, by: deadline) }
    }

    /// Where the item lives, without its secret; nil when there is none.
    func info() async throws -> SecretItemInfo? {
        try await operation("item info") { store, rules, deadline throws(StorageFailure) in try await store.info(rules, by: deadline) }
    }

    /// The item ``read()`` reads, with its metadata, found afresh (not the remembered item); nil
    /// when there is no item.
    func infoAndSecret() async throws -> (info: SecretItemInfo, secret: SecretValue)? {
        try await operation("read with item info") { store, rules, deadline throws(StorageFailure) in
            try await store.infoAndSecret(rules, by: deadline)
        }
    }

    /// Runs `body` on the store, holding the account's lock, with every call ending by the
    /// configuration's deadline (waiting for the lock and choosing the store included), and
    /// throws what a Storage method throws.
    private func operation<Value: Sendable>(
        _ name: String, _ body: (any KeyringStore, AccountRules, Deadline) async throws(StorageFailure) -> Value
    ) async throws -> Value {
        Log.forwardingSecretService
        let deadline = configuration.keyringDeadline()
        let started = ContinuousClock.now
        defer { Log.debug("\(name) of account '\(account)' (service \(configuration.service)): \((ContinuousClock.now - started).milliseconds)") }
        let failure: StorageFailure
        do {
            try rules.validate()
            return try await AccountLocks.shared.withLock(rules.lockKey, deadline: deadline) { () async throws(StorageFailure) in
                let store: any KeyringStore
                if let givenStore { store = givenStore } else { store = try await KeychainPlaces.shared.store(for: configuration, by: deadline) }
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

    package func write(_ bytes: Data) async throws { try await items.write(SecretValue(bytes: bytes)) }
    package func read() async throws -> Data? { try await items.read()?.bytes }
    package func delete() async throws { try await items.delete() }
}

extension Data {
    /// Zeroes the bytes in place (best effort: copies other code made are out of reach).
    mutating func wipe() { resetBytes(in: startIndex..<endIndex) }
}
