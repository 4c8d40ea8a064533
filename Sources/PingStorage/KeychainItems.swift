#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SecretService
import Waiting

/// The Keychain rules of ``KeychainStorage``: one item per (service, account),
/// found whoever wrote it (Python keyring and go-keyring items included), replaced in place,
/// duplicates collapsed, nothing written on a read. Unlocking, lock states and provider quirks are
/// the client's (``SecretServiceClient``); what this type learns from it is the change token each
/// call returns. In a sandbox's file keyring, ``FileAccountItems`` applies the same rules.
struct KeychainItems: Sendable {
    let account: String
    let configuration: KeychainConfiguration
    /// The Secret Service calls, when the items are there (see ``KeychainPlaces``).
    let backend: any KeychainBackend
    /// Whether `backend` was given (unit tests): then the items are always there.
    private let hasGivenBackend: Bool

    /// The items of `account` where `configuration` keeps them (on the Secret Service, its
    /// shared connection), or always through `backend` when one is given.
    init(account: String, configuration: KeychainConfiguration,
         backend: (any KeychainBackend)? = nil) {
        self.account = account
        self.configuration = configuration
        self.backend = backend ?? SecretServiceKeychainBackend.shared(for: configuration)
        hasGivenBackend = backend != nil
    }

    /// Checks the names before anything is sent.
    func validate() throws(KeychainError) {
        guard !account.isEmpty else {
            throw .invalidArgument("The account name is empty; give KeychainStorage a non-empty account.")
        }
        guard !configuration.service.isEmpty else {
            throw .invalidArgument("The service name is empty; give KeychainConfiguration a non-empty service.")
        }
        guard !account.utf8.contains(0), !configuration.service.utf8.contains(0) else {
            throw .invalidArgument("Account and service names cannot contain NUL characters (D-Bus strings cannot).")
        }
    }

    /// The stored bytes, or nil when there is no item. Reads only: never writes, deletes or unlocks
    /// anything but through the prompt the configuration allows. (The first call of a
    /// configuration in a Flatpak sandbox chooses the backend, and may then copy the host's items
    /// into the file keyring once: ``HostMigration``; that is the backend's choice, not this read.)
    ///
    /// The remembered item (found before, and nothing created or deleted since) is read with one
    /// GetSecret; if the answer's token shows a change meanwhile, the account is searched again.
    func read() async throws -> SecretValue? {
        try validate()
        return try await operation("read", file: { try await $0.read() }) { items in
            if let known = items.rememberedItem(), let value = try await items.readRemembered(known) {
                return try await items.settled(value, at: known.path)
            }
            return try await items.retryingVanishedItem { () async throws(SecretServiceError) in
                let found = try await items.accountItems()
                guard !found.paths.isEmpty else {
                    items.forget()
                    return nil
                }
                let (target, read) = try await items.chosenWithSecret(found, for: .toRead)
                items.remember(target, found: found, answeredAt: read.changeToken)
                return try await items.settled(read.value, at: target.path)
            }
        }
    }

    /// Stores `value` so that exactly one item holds it afterwards, with one write at most: the
    /// existing item's secret is replaced in place, and not written at all when it already holds
    /// `value`, or what `sameValue` recognises as the same (an encryptor's envelope of the same
    /// plaintext: gnome-keyring rewrites its whole file on every write).
    /// - Returns: whether the secret was written (false: the item already held the value).
    @discardableResult
    func write(_ value: SecretValue, sameValue: (@Sendable (Data) -> Bool)? = nil) async throws -> Bool {
        try validate()
        let holds = { @Sendable (current: Data) in current == value.bytes || sameValue?(current) == true }
        return try await operation("save", file: { try await $0.write(value, sameValue: holds) }) { items in
            if let known = items.rememberedItem(), known.isComplete, let wrote = try await items.writeRemembered(known, value, holds) {
                return wrote
            }
            return try await items.retryingVanishedItem { () async throws(SecretServiceError) -> Bool in
                let found = try await items.accountItems()
                guard !found.paths.isEmpty else {
                    try await items.create(value, searchedAt: found.token)
                    return true
                }
                var (target, current) = try await items.chosenWithSecret(found, for: .toKeep)
                defer { current.value.bytes.wipe() }
                current.value = try await items.settled(current.value, at: target.path)
                let wrote = !holds(current.value.bytes)
                if wrote {
                    _ = try await items.backend.setSecret(value, of: target.path)
                }
                if !items.isComplete(target) {
                    Log.info("Account '\(items.account)': giving the item \(target.path) PingStorage's label and attributes "
                        + "(written by another tool: \(target.label))")
                    try await items.complete(target)
                }
                for duplicate in found.paths where duplicate != target.path {
                    Log.info("Account '\(items.account)': removing the duplicate item \(duplicate) (keeping \(target.path))")
                    _ = try await items.backend.deleteItem(duplicate)
                }
                var completed = target
                completed.label = items.label
                completed.attributes = target.attributes.merging(items.itemAttributes) { $1 }
                items.remember(completed, found: found, answeredAt: current.changeToken)
                return wrote
            }
        }
    }

    /// Deletes every item of the account. Nothing to delete is success.
    func delete() async throws {
        try validate()
        try await operation("delete", file: { try await $0.delete() }) { items in
            // The remembered item was the account's only one, and nothing was created since:
            // delete it without searching (deleting an item that is already gone succeeds).
            if let known = items.rememberedItem() {
                items.forget()
                _ = try await items.backend.deleteItem(known.path)
                return
            }
            items.forget()
            for path in try await items.accountItems().paths { _ = try await items.backend.deleteItem(path) }
        }
    }

    /// Where the item lives, without its secret; nil when there is none.
    func info() async throws -> SecretItemInfo? {
        try validate()
        return try await operation("item info", file: { try await $0.info() }) { items in
            let found = try await items.accountItems()
            return found.paths.isEmpty ? nil : try await items.chosen(found, for: .toRead)
        }
    }

    /// The item ``read()`` reads, with its metadata, found afresh (not the remembered item); nil
    /// when there is no item. On the Secret Service the metadata and the secret are asked for at
    /// once (one round trip, as ``read()``), where ``info()`` then a read would take two.
    func infoAndSecret() async throws -> (info: SecretItemInfo, secret: SecretValue)? {
        try validate()
        return try await operation("read with item info", file: { try await $0.infoAndSecret() }) { items in
            try await items.retryingVanishedItem { () async throws(SecretServiceError) -> (info: SecretItemInfo, secret: SecretValue)? in
                let found = try await items.accountItems()
                guard !found.paths.isEmpty else { return nil }
                let (target, read) = try await items.chosenWithSecret(found, for: .toRead)
                return (target, try await items.settled(read.value, at: target.path))
            }
        }
    }

    /// Runs `onSecretService` or `onFile`, where the items are, holding the account's lock, with
    /// every call ending by the configuration's deadline (waiting for the lock and choosing the
    /// backend included), and throws what a Storage method throws.
    private func operation<Value: Sendable>(_ name: String, file onFile: (FileAccountItems) async throws -> Value,
                                            secretService onSecretService: (KeychainItems) async throws -> Value) async throws -> Value {
        Log.forwardingSecretService
        let deadline = Deadline(timeout: configuration.timeout)
        let started = ContinuousClock.now
        defer { Log.debug("\(name) of account '\(account)' (service \(configuration.service)): \((ContinuousClock.now - started).milliseconds)") }
        do {
            return try await AccountLocks.shared.withLock(lockKey, deadline: deadline) {
                let place = hasGivenBackend ? .secretService : try await KeychainPlaces.shared.place(for: configuration, by: deadline).0
                switch place {
                case .secretService:
                    let scoped = KeychainItems(account: account, configuration: configuration, backend: backend.ending(by: deadline))
                    return try await onSecretService(scoped)
                case .file(let keychain):
                    let keyring = try await keychain.keyring(by: deadline)
                    return try await onFile(FileAccountItems(items: self, keyring: keyring, deadline: deadline))
                }
            }
        } catch let error as WaitError {
            let thrown = KeychainError.thrown(error)
            Log.warning("\(name) of account '\(account)' (service \(configuration.service)) failed while waiting", error: thrown)
            throw thrown
        } catch let error as SecretServiceError {
            let thrown = KeychainError.thrown(error)
            Log.warning("\(name) of account '\(account)' (service \(configuration.service)) failed: \(error.code)", error: thrown)
            throw thrown
        } catch {
            Log.warning("\(name) of account '\(account)' (service \(configuration.service)) failed", error: error)
            throw error
        }
    }

    /// Reads the remembered item; nil when it turned out stale (then the caller searches).
    private func readRemembered(_ known: RememberedItems.Entry) async throws(SecretServiceError) -> SecretValue? {
        do {
            let read = try await backend.secret(of: known.path)
            // An item created or deleted while we read (its signal precedes our answer) may be a
            // newer duplicate: the value is then not trusted.
            return read.changeToken.isUnchanged(since: known.token) ? read.value : nil
        } catch where error.code == .itemNotFound {
            forget()
            return nil
        }
    }

    /// Writes through the remembered item: whether it wrote (false: the item held the value
    /// already, by `holds`), or nil when the remembered item turned out stale.
    private func writeRemembered(_ known: RememberedItems.Entry, _ value: SecretValue,
                                 _ holds: (Data) -> Bool) async throws(SecretServiceError) -> Bool? {
        do {
            var current = try await backend.secret(of: known.path)
            defer { current.value.bytes.wipe() }
            guard current.changeToken.isUnchanged(since: known.token) else { return nil }
            current.value = try await settled(current.value, at: known.path)
            // Bytes only: gnome-keyring reports every secret as text/plain, so comparing content
            // types would rewrite unchanged binary values every time.
            if holds(current.value.bytes) { return false }
            _ = try await backend.setSecret(value, of: known.path)
            return true
        } catch where error.code == .itemNotFound {
            forget()
            return nil
        }
    }

    /// KeychainStorage never stores an empty value, but KWallet creates an item before it sets
    /// its secret, so another process can see it empty for a moment: read such an item again
    /// after a short pause before reporting what it holds. (A locked keyring's empty answer is
    /// recognised by the client, which never returns it.)
    private func settled(_ value: SecretValue, at path: ItemPath) async throws(SecretServiceError) -> SecretValue {
        guard value.bytes.isEmpty else { return value }
        do { try await Task.sleep(for: .milliseconds(100)) } catch { throw .cancelled("read secret") }
        return try await backend.secret(of: path).value
    }

    /// Another client may delete or replace the item between our search and our next call; start
    /// over from the search when that happens (a few times: other processes may keep doing it).
    private func retryingVanishedItem<Value>(_ body: () async throws(SecretServiceError) -> Value) async throws(SecretServiceError) -> Value {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch where error.code == .itemNotFound && attempt < 4 {
                forget()
                attempt += 1
            }
        }
    }
}

extension Data {
    /// Zeroes the bytes in place (best effort: copies other code made are out of reach).
    mutating func wipe() { resetBytes(in: startIndex..<endIndex) }
}
