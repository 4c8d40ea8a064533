#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import Waiting

/// What ping-keyring sees where a configuration keeps its items, whoever wrote them: the one way
/// its commands reach the keyring, on the same seam as ``KeychainStorage`` (``KeyringStore``), so
/// no command tells the Secret Service from a file keyring itself. Opening it opens the place for
/// the configuration (``KeychainPlace``: in a sandbox, the Secret portal's secret and the move of
/// the host's items in), once; every call after that reads or changes only what it says.
///
/// Writing and deleting an account's item go through ``KeychainStorage`` itself; this reads any
/// tool's items, locks and unlocks the collection, and gives an old identity's items to the app.
///
/// Thread-safety: `Sendable`; every call ends by the configuration's deadline.
package struct KeyringInventory: Sendable {
    /// The configuration, its app resolved.
    package let configuration: KeychainConfiguration
    /// Where the items are, and why (``KeychainConfiguration/backendInUse()``).
    package let backend: KeychainBackendChoice
    let place: KeychainPlace
    let store: any KeyringStore

    /// Opens the place of `configuration`'s items, as a storage's first call does.
    /// - Throws: ``KeychainError`` as ``KeychainConfiguration/backendInUse()`` (`.noSecretService`
    ///   in a sandbox without the portal's secret, `.invalidArgument` for a bad
    ///   `PINGSTORAGE_BACKEND`, `.timedOut`); `CancellationError`.
    package static func open(for configuration: KeychainConfiguration) async throws -> KeyringInventory {
        try await open(for: configuration, in: .process)
    }

    static func open(for configuration: KeychainConfiguration, in runtime: KeychainRuntime) async throws -> KeyringInventory {
        let configuration = configuration.resolvingApp()
        let place = runtime.place(for: configuration)
        let deadline = Deadline(timeout: configuration.timeout)
        do throws(StorageFailure) {
            let store = try await place.openStore(for: configuration, by: deadline)
            let backend = try await place.choice(for: configuration, by: deadline)
            return KeyringInventory(configuration: configuration, backend: backend, place: place, store: store)
        } catch {
            throw error.thrown
        }
    }

    /// The collection the items are in (a file keyring's is the file, never locked).
    /// - Throws: ``KeychainError`` (`.collectionNotFound`, the provider's errors).
    package func collection() async throws -> KeyringCollection {
        try await run { store, deadline throws(StorageFailure) in try await store.collection(by: deadline) }
    }

    /// Every item whose attributes include all pairs of at least one of `queries`, whoever wrote
    /// it (``KeyringStore/items(matchingAny:reading:by:)``). The caller wipes the secrets.
    /// - Throws: ``KeychainError`` (`.locked` when reading secrets needs a prompt that is not
    ///   allowed; `.corruptItem` for a damaged record of a file keyring that may match).
    package func items(matchingAny queries: [[String: String]], reading: KeyringItemReading) async throws -> [KeyringItem] {
        try await run { store, deadline throws(StorageFailure) in
            try await store.items(matchingAny: queries, reading: reading, by: deadline)
        }
    }

    /// Locks or unlocks the collection (``KeyringStore/setLocked(_:by:)``).
    /// - Throws: ``KeychainError`` (`.invalidArgument` for a file keyring, `.locked`, `.promptDismissed`).
    package func setLocked(_ locked: Bool) async throws {
        try await run { store, deadline throws(StorageFailure) in try await store.setLocked(locked, by: deadline) }
    }

    /// SecuredKeyEncryptor's key items (of every app), each read only to measure it, and for a
    /// bound key, the TPM asked whether it opens it. Never creates a key, unlocks or prompts.
    /// - Throws: ``KeychainError`` `.locked` when key items are locked; the keyring's errors.
    package func encryptionKeys() async throws -> [EncryptionKeyItem] {
        var items = try await items(matchingAny: [["xdg:schema": KeyVault.schema]], reading: .secretsOfUnlocked)
        defer { for index in items.indices { items[index].secret?.bytes.wipe() } }
        let locked = items.filter(\.info.isLocked).map(\.info.location)
        guard locked.isEmpty else {
            throw KeychainError.unableToRetrieve(.locked(.init(
                message: "\(locked.count) encryption key item\(locked.count == 1 ? " is" : "s are") locked "
                    + "(\(locked.joined(separator: ", ")))",
                recovery: "Unlock the keyring (ping-keyring unlock), then ask again.")))
        }
        var keys: [EncryptionKeyItem] = []
        for item in items { keys.append(await EncryptionKeyItem.measuring(item, timeout: .seconds(10))) }
        return keys
    }

    // MARK: App identities

    /// The items of the configuration's service and the key items, with their apps; no secret read.
    /// - Throws: ``KeychainError`` as a storage's `get()` would.
    package func identities() async throws -> [KeychainIdentities.Item] {
        let service = configuration.service
        return try await run { store, deadline throws(StorageFailure) in
            try await store.identityItems(service: service, by: deadline)
        }
    }

    /// Gives the items of the configuration's service that identity `old` has to the configuration's
    /// app, except for accounts it already has an item of, and copies `old`'s keys that it lacks
    /// (``KeyringStore/moveItems(service:from:to:by:)``). Items of other identities, and items no
    /// app owns, are not touched.
    /// - Throws: ``KeychainError`` (`invalidArgument` when `old` is the app itself).
    package func move(from old: String) async throws -> KeychainIdentities.Move {
        let (service, new) = (configuration.service, configuration.appIdentity.id)
        guard old != new else {
            throw KeychainError.unableToSave(.invalidArgument(.init(
                message: "The identity to move from is the app's own (\(new)): nothing to move.")))
        }
        return try await KeychainError.relabelling(.save) {
            try await run { store, deadline throws(StorageFailure) in
                try await store.moveItems(service: service, from: old, to: new, by: deadline)
            }
        }
    }

    /// Runs `body` on the store by the configuration's deadline; throws what a Storage method throws.
    private func run<Value: Sendable>(_ body: (any KeyringStore, Deadline) async throws(StorageFailure) -> Value) async throws -> Value {
        do throws(StorageFailure) {
            return try await body(store, Deadline(timeout: configuration.timeout))
        } catch {
            throw error.thrown
        }
    }
}
