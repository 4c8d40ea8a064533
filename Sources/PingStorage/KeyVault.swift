#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Locking
import PingStorageCrypto
import SecretService

/// Loads, creates and caches ``SecuredKeyEncryptor``'s keys, kept as items of their own in the
/// Secret Service (attributes `xdg:schema` = ``schema``, `key-id`, and `key-check`, the key's
/// ``SymmetricKey/checkValue``).
///
/// - **Which key seals new data:** the oldest key item in the collection (by creation time, then
///   id). A process that finds none creates one under a fresh random id (concurrent creators never
///   overwrite each other) and then takes the oldest it sees. Whenever the change token moved
///   (an item was created or deleted, a collection changed), the choice is made again, so every
///   process settles on the same key at its first encryption after it saw the others' keys.
///   Items sealed with another key stay readable: every envelope names its key, and no key is
///   ever replaced or deleted by this library.
/// - **A key rewritten under the same id** (a restore, another tool): every key loaded is checked
///   against its `key-check`; and after each save, the storage asks ``confirm(_:)`` whether the
///   key item still holds the bytes it sealed with, so a save is never reported done when a fresh
///   process would load other bytes for that id.
actor KeyVault {
    static let schema = KeychainStorageSchemas.key
    static let label = "PingStorage encryption key — items encrypted with it cannot be read without it; do not delete"

    private let backend: any KeychainBackend
    private let collection: CollectionReference
    private var keys: [KeyID: SymmetricKey] = [:]
    /// The key that seals new data, its item, and the change token when it was chosen.
    private var current: (id: KeyID, path: ItemPath, token: ChangeToken?)?
    private let choosing = SharedWork<KeyChoice>()
    private let timeout: Duration

    struct KeyChoice: Sendable {
        let id: KeyID
        /// The key, or why its item is unusable (then nothing is sealed: a damaged key item is
        /// never replaced by a new key behind the user's back).
        let key: Result<SymmetricKey, EncryptorError>
        let path: ItemPath
        let token: ChangeToken?
    }

    init(backend: any KeychainBackend, collection: CollectionReference, timeout: Duration = .seconds(25)) {
        self.backend = backend
        self.collection = collection
        self.timeout = timeout
    }

    private static let vaults = Locked<[KeychainConfiguration: KeyVault]>([:])

    /// The vault of a configuration, shared by every encryptor using it (keys load once).
    static func shared(for configuration: KeychainConfiguration) -> KeyVault {
        vaults.withLock { vaults in
            if let vault = vaults[configuration] { return vault }
            let vault = KeyVault(backend: SecretServiceKeychainBackend.shared(for: configuration),
                                 collection: configuration.collection, timeout: configuration.timeout)
            vaults[configuration] = vault
            return vault
        }
    }

    /// The key new data is sealed with, chosen (or created) on first use and again whenever the
    /// change token moved.
    /// - Throws: ``KeychainError`` when the keyring cannot be used, ``EncryptorError/unsupportedFormat(_:)``
    ///   when the oldest key item does not hold a key matching its `key-check`.
    func currentKey() async throws -> (KeyID, SymmetricKey) {
        if let current, let key = keys[current.id], let chosenAt = current.token,
           let now = backend.currentChangeToken, now.isUnchanged(since: chosenAt) {
            return (current.id, key)
        }
        let deadline = Deadline(timeout: timeout)
        let backend = self.backend.ending(by: deadline)
        let collection = self.collection
        let choice = try await mapped { () async throws(SecretServiceError) in
            try await choosing.value(operation: "find the encryption key", deadline: deadline) { _ throws(SecretServiceError) in
                try await Self.chooseKey(backend, collection)
            }
        }
        let key = try choice.key.get()
        keys[choice.id] = key
        current = (choice.id, choice.path, choice.token)
        return (choice.id, key)
    }

    /// The key with `id`, from memory or the keyring.
    /// - Throws: ``EncryptorError/keyNotFound(_:)`` when no such key is in the keyring.
    func key(for id: KeyID) async throws -> SymmetricKey {
        if let key = keys[id] { return key }
        let backend = self.backend.ending(by: Deadline(timeout: timeout))
        let found = try await mapped { () async throws(SecretServiceError) in
            try await backend.findItems(matching: ["xdg:schema": Self.schema, "key-id": id.hexString], in: collection)
        }
        guard let path = found.all.first else {
            throw EncryptorError.keyNotFound(
                "The encryption key \(id.hexString) this item was encrypted with is not in the keyring "
                + "(it was deleted, or the keyring was restored from elsewhere). The item was left "
                + "unchanged and cannot be decrypted; save a new value (it is encrypted with the current "
                + "key) or delete the item.")
        }
        let loaded = try await mapped { () async throws(SecretServiceError) in
            try await Self.load(try await backend.itemInfo(path), backend)
        }
        let key = try loaded.get()
        keys[id] = key
        return key
    }

    /// Whether the key item of `id` still holds the key this vault sealed with (one read). When it
    /// holds other bytes, they are checked and used from now on, and false is returned: what was
    /// sealed with the old bytes must be sealed again.
    func confirm(_ id: KeyID) async throws -> Bool {
        guard let sealedWith = keys[id] else { return false }
        let backend = self.backend.ending(by: Deadline(timeout: timeout))
        let found = try await mapped { () async throws(SecretServiceError) in
            try await backend.findItems(matching: ["xdg:schema": Self.schema, "key-id": id.hexString], in: collection)
        }
        guard let path = found.all.first else {
            // Deleted meanwhile: choose (or make) another key and seal again.
            keys[id] = nil
            current = nil
            return false
        }
        let stored = try await mapped { () async throws(SecretServiceError) in
            try await Self.load(try await backend.itemInfo(path), backend)
        }.get()
        if stored.hasSameBytes(as: sealedWith) { return true }
        keys[id] = stored
        return false
    }

    // MARK: Choosing

    private static func chooseKey(_ backend: any KeychainBackend, _ collection: CollectionReference) async throws(SecretServiceError) -> KeyChoice {
        if let oldest = try await oldestKey(backend, collection) { return oldest }
        let id: KeyID, key: SymmetricKey
        do {
            id = try KeyID.generate()
            key = try SymmetricKey.generate()
        } catch {
            throw SecretServiceError(.providerError, operation: "create the encryption key",
                                     message: "Encryption is not available: \(CryptoLibrary.unavailabilityReason ?? "libgcrypt failed").")
        }
        // The secret handed over points at the key's own locked memory: no copy of the key is
        // made on the heap (the session copies it into libsecret's locked memory to encrypt it).
        try await key.withUnsafeBytesAsync { bytes async throws(SecretServiceError) in
            let secret = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!), count: bytes.count,
                              deallocator: .none)
            _ = try await backend.createItem(
                in: collection, label: label,
                attributes: ["xdg:schema": schema, "key-id": id.hexString, "key-check": key.checkValue],
                secret: SecretValue(bytes: secret, contentType: "application/octet-stream"), replacing: false)
        }
        // Another process may have created a key at the same time: everyone uses the oldest.
        guard let chosen = try await oldestKey(backend, collection) else {
            throw SecretServiceError(.providerError, operation: "create the encryption key",
                                     message: "The encryption key was created but cannot be found again.")
        }
        return chosen
    }

    /// The oldest key in the keyring (by creation time, then id), loaded and checked.
    private static func oldestKey(_ backend: any KeychainBackend, _ collection: CollectionReference) async throws(SecretServiceError) -> KeyChoice? {
        let found = try await backend.findItems(matching: ["xdg:schema": schema], in: collection)
        var candidates: [(id: KeyID, created: Date, info: SecretItemInfo)] = []
        for path in found.all {
            let info = try await backend.itemInfo(path)
            guard let hex = info.attributes["key-id"], let id = KeyID(hexString: hex) else { continue }
            candidates.append((id, info.created, info))
        }
        guard let oldest = candidates.min(by: { ($0.created, $0.id.hexString) < ($1.created, $1.id.hexString) }) else {
            return nil
        }
        return KeyChoice(id: oldest.id, key: try await load(oldest.info, backend), path: oldest.info.path,
                         token: found.changeToken)
    }

    /// Reads a key item and checks its bytes against its `key-check` (items of earlier versions
    /// have none): the key, or why the item is unusable.
    private static func load(_ item: SecretItemInfo, _ backend: any KeychainBackend) async throws(SecretServiceError) -> Result<SymmetricKey, EncryptorError> {
        var bytes = try await backend.secret(of: item.path).value.bytes
        defer { bytes.wipe() }
        guard let key = try? SymmetricKey(data: bytes) else {
            return .failure(.unsupportedFormat(
                "The encryption key item \(item.path) does not hold a 256-bit key (\(bytes.count) bytes); it was left unchanged."))
        }
        if let checkValue = item.attributes["key-check"], checkValue != key.checkValue {
            return .failure(.unsupportedFormat(
                "The encryption key item \(item.path) holds bytes that do not match its key-check attribute: another "
                + "program changed it. It was left unchanged; restore it, or delete it and the items it encrypted."))
        }
        return .success(key)
    }

    private func mapped<Value>(_ body: () async throws(SecretServiceError) -> Value) async throws -> Value {
        do {
            return try await body()
        } catch {
            throw KeychainError.thrown(error)
        }
    }
}
