#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Locking
import PingStorageCrypto
import Waiting

/// Loads, creates and caches ``SecuredKeyEncryptor``'s keys, kept as items of their own where the
/// configuration keeps its items (``KeyringStore``: the Secret Service or the sandbox's file
/// keyring), with attributes `xdg:schema` = ``schema``, `key-id`, and `key-check`, the key's
/// ``SymmetricKey/checkValue``.
///
/// - **Keys are the app's** (``AppIdentity``): every key item carries the app's
///   `pingstorage-app`; new data is sealed with one of the app's own keys only, and an envelope
///   opens with the app's key or with a key no app owns (PingStorage 1.x's, which every app shared
///   then), never with another app's.
/// - **Which key seals new data:** the app's oldest key item in the collection (by creation time,
///   then id). A process that finds none creates one under a fresh random id (concurrent creators never
///   overwrite each other) and then takes the oldest it sees. Whenever the store cannot
///   tell that the key items are as they were (``KeyringStore/keysUnchanged(since:)``: on the Secret
///   Service, the change token moved for anything but this process's own new account items), the
///   choice is made again, so every process settles on the same key at its first encryption after
///   it saw the others' keys.
///   Items sealed with another key stay readable: every envelope names its key, and no key is
///   ever replaced or deleted by this library.
/// - **Bound keys** (``BoundKey``): when the configuration's ``KeychainConfiguration/keyBinding``
///   allows and a TPM answers, new data is sealed with the app's oldest key *bound to this TPM*
///   (created when there is none), and keys are chosen among bound keys only; otherwise among
///   unbound keys only. Items sealed with a key of the other kind stay readable and move to the
///   current key on their next save (the save sees another key id). A bound key this TPM refuses
///   (cleared, another machine's) is passed over for new data, never deleted; what it sealed fails
///   with ``EncryptorError/Reason/tpmCleared(_:)``.
/// - **A key rewritten under the same id** (a restore, another tool): every key loaded is checked
///   against its `key-check`; and after each save, the storage asks ``confirm(_:by:)`` whether the
///   key item still holds the bytes it sealed with, so a save is never reported done when a fresh
///   process would load other bytes for that id.
actor KeyVault {
    static let schema = KeychainStorageSchemas.key
    static let label = "PingStorage encryption key — items encrypted with it cannot be read without it; do not delete"

    /// Where the keys are: the place of the configuration, opened at first use.
    private let place: KeychainPlace
    private let configuration: KeychainConfiguration
    private var store: (any KeyringStore)?
    private var keys: [KeyID: SymmetricKey] = [:]
    /// The key that seals new data, and the store's moment when it was chosen.
    private var current: (id: KeyID, moment: StoreMoment?)?
    private let choosing = SharedWork<KeyChoice, StorageFailure>(timekeeper: .light)
    /// How many callers wait for the key being found or created (tests).
    nonisolated var callersWaitingForTheKey: Int { choosing.waitingCallers }
    /// A deadline of the configuration's timeout from now, for a call that starts here: a prompt
    /// on screen (the keyring being unlocked) does not count against it, nor against the callers
    /// waiting for the key meanwhile (``KeychainPlace/deadline(timeout:)``).
    nonisolated func deadline() -> Deadline { place.deadline(timeout: configuration.timeout) }
    private var binding: KeychainConfiguration.KeyBinding { configuration.keyBinding }

    struct KeyChoice: Sendable {
        let id: KeyID
        /// The key, or why its item is unusable (then nothing is sealed: a damaged key item is
        /// never replaced by a new key behind the user's back).
        let key: Result<SymmetricKey, EncryptorError>
        let moment: StoreMoment?
    }

    /// The vault of `configuration` (a resolved one: its app is set) in `place`
    /// (``KeychainRuntime/vault(for:)`` makes one per configuration).
    init(place: KeychainPlace, configuration: KeychainConfiguration) {
        self.place = place
        self.configuration = configuration
    }

    /// The key new data is sealed with, chosen (or created) on first use and again whenever the
    /// key items may have changed.
    /// - Throws: ``KeychainError`` when the keyring cannot be used, ``EncryptorError/Reason/unsupportedFormat(_:)``
    ///   when the oldest key item does not hold a key matching its `key-check`.
    func currentKey(by deadline: Deadline) async throws -> (KeyID, SymmetricKey) {
        if let current, let key = keys[current.id], store?.keysUnchanged(since: current.moment) == true {
            return (current.id, key)
        }
        let (binding, boundKeys) = (binding, place.boundKeys)
        let choice = try await thrown { () async throws(StorageFailure) in
            let store = try await store(by: deadline)
            return try await choosing.value(operation: "find the encryption key", deadline: deadline) { deadline throws(StorageFailure) in
                let bound = binding == .tpmWhenAvailable ? await boundKeys.tpmAnswers(by: deadline) : false
                return try await store.chooseKey(bound: bound, by: deadline)
            }
        }
        await writePin(choice.id, by: deadline)
        let key = try choice.key.get()
        keys[choice.id] = key
        current = (choice.id, choice.moment)
        return (choice.id, key)
    }

    /// The key with `id`, from memory or the keyring.
    /// - Throws: ``EncryptorError/failedToDecrypt(_:)`` with ``EncryptorError/Reason/keyNotFound(_:)``
    ///   when no such key is in the keyring.
    func key(for id: KeyID, by deadline: Deadline) async throws -> SymmetricKey {
        if let key = keys[id] { return key }
        guard let loaded = try await thrown({ () async throws(StorageFailure) in try await store(by: deadline).loadKey(id, by: deadline) }) else {
            throw EncryptorError.failedToDecrypt(.keyNotFound(
                "The encryption key \(id.hexString) this item was encrypted with is not in the keyring "
                + "(it was deleted, or the keyring was restored from elsewhere). The item was left "
                + "unchanged and cannot be decrypted; save a new value (it is encrypted with the current "
                + "key) or delete the item."))
        }
        await writePin(id, by: deadline)
        let key = try loaded.get()
        keys[id] = key
        return key
    }

    /// Whether the key item of `id` still holds the key this vault sealed with (one read of the
    /// known item while nothing was created or deleted, ``KeyringStore/reloadKey(_:by:)``). When it
    /// holds other bytes, they are checked and used from now on, and false is returned: what was
    /// sealed with the old bytes must be sealed again.
    func confirm(_ id: KeyID, by deadline: Deadline) async throws -> Bool {
        guard let sealedWith = keys[id] else { return false }
        guard let loaded = try await thrown({ () async throws(StorageFailure) in try await store(by: deadline).reloadKey(id, by: deadline) }) else {
            // Deleted meanwhile: choose (or make) another key and seal again.
            Log.warning("The encryption key \(id.hexString) was deleted while an item was saved; sealing it again with another")
            keys[id] = nil
            current = nil
            return false
        }
        let stored = try loaded.get()
        if stored.hasSameBytes(as: sealedWith) { return true }
        Log.warning("The encryption key \(id.hexString) was rewritten by another program while an item was saved; sealing it again")
        keys[id] = stored
        return false
    }

    /// Adds its pin to key `id` when it is a 2.0.0 bound key this process just opened
    /// (``BoundKeys/pinToWrite(id:)``), in the store it was read from: a failure is logged and
    /// leaves the key as it was.
    private func writePin(_ id: KeyID, by deadline: Deadline) async {
        guard let pin = place.boundKeys.pinToWrite(id: id.hexString), let store else { return }
        do throws(StorageFailure) {
            try await store.pinBoundKey(id, replacing: pin.read, with: pin.pinned, by: deadline)
            Log.info("The encryption key \(id.hexString), bound to the TPM by 2.0.0, now has its TPM's storage key pinned")
        } catch {
            Log.warning("The encryption key \(id.hexString) could not be pinned to its TPM's storage key (its next first use "
                        + "tries again)", error: error.thrown)
        }
    }

    /// The store, the place opened for the configuration at the first call.
    private func store(by deadline: Deadline) async throws(StorageFailure) -> any KeyringStore {
        if let store { return store }
        let opened = try await place.openStore(for: configuration, by: deadline)
        store = opened
        return opened
    }

    /// Runs store calls; a failure is thrown as a Storage method throws it (the vault's callers
    /// are the encryptor's public methods).
    private func thrown<Value>(_ body: () async throws(StorageFailure) -> Value) async throws -> Value {
        do {
            return try await body()
        } catch {
            throw error.thrown
        }
    }
}
