import Locking
import Foundation
import PingStorageCrypto
import SecretService

/// Loads, creates and caches ``SecuredKeyEncryptor``'s keys, kept as items of their own in the
/// Secret Service.
///
/// Race-safety without locks across processes: a process that finds no key creates one under a
/// fresh random key id (so concurrent creators never overwrite each other), then searches again
/// and encrypts with the *oldest* key it sees (by creation time, then id), which every process
/// converges on. No key is ever replaced or deleted, and every envelope carries its key's id, so
/// whatever a process encrypted with the key it made stays decryptable.
actor KeyVault {
    static let schema = "com.pingidentity.PingStorage.SecuredKey"
    static let label = "PingStorage encryption key — items encrypted with it cannot be read without it; do not delete"

    private let backend: any SecretServiceBackend
    private let collection: CollectionReference
    private var keys: [KeyID: SymmetricKey] = [:]
    private var current: KeyID?
    private var findingCurrent: Task<(KeyID, SymmetricKey), any Error>?

    init(backend: any SecretServiceBackend, collection: CollectionReference) {
        self.backend = backend
        self.collection = collection
    }

    private static let vaults = Locked<[KeychainConfiguration: KeyVault]>([:])

    /// The vault of a configuration, shared by every encryptor using it (keys load once).
    static func shared(for configuration: KeychainConfiguration) -> KeyVault {
        vaults.withLock { vaults in
            if let vault = vaults[configuration] { return vault }
            let vault = KeyVault(backend: SecretServiceClient(options: configuration.clientOptions),
                                 collection: configuration.collection)
            vaults[configuration] = vault
            return vault
        }
    }

    /// The ``ItemChanges`` generation at which `current` was last seen in the keyring.
    private var currentVerifiedAt: UInt64 = 0

    /// The key new data is encrypted with, loaded or created on first use.
    ///
    /// A key deleted from the keyring while this process runs (Seahorse, another tool) must not
    /// go on encrypting new data that no other process could read: whenever an item was created or
    /// deleted since the key was last seen (``ItemChanges``), its item is looked up again first.
    func currentKey() async throws -> (KeyID, SymmetricKey) {
        if let current, let key = keys[current] {
            let generation = backend.itemGeneration
            if generation == currentVerifiedAt { return (current, key) }
            let stillThere = try await mapped {
                try await backend.findUnlockedItems(
                    matching: ["xdg:schema": Self.schema, "key-id": current.hexString], in: collection) != nil
            }
            if stillThere {
                currentVerifiedAt = generation
                return (current, key)
            }
            // Gone: keep it in memory to read what it encrypted, but find or make another for new data.
            self.current = nil
        }
        if let findingCurrent { return try await findingCurrent.value }
        let generation = backend.itemGeneration
        let task = Task { try await self.findOrCreateCurrentKey() }
        findingCurrent = task
        defer { findingCurrent = nil }
        let (id, key) = try await task.value
        current = id
        currentVerifiedAt = generation
        keys[id] = key
        return (id, key)
    }

    /// The key with `id`, from memory or the keyring.
    /// - Throws: ``EncryptorError/keyNotFound(_:)`` when no such key is in the keyring.
    func key(for id: KeyID) async throws -> SymmetricKey {
        if let key = keys[id] { return key }
        let paths = try await mapped {
            try await backend.findUnlockedItems(matching: ["xdg:schema": Self.schema, "key-id": id.hexString], in: collection)
        }
        guard let path = paths?.first else {
            throw EncryptorError.keyNotFound(
                "the encryption key \(id.hexString) this item was encrypted with is not in the keyring "
                + "(it was deleted, or the keyring was restored from elsewhere). The item was left "
                + "unchanged and cannot be decrypted; save a new value (it is encrypted with the current "
                + "key) or delete the item.")
        }
        let key = try await load(path)
        keys[id] = key
        return key
    }

    private func findOrCreateCurrentKey() async throws -> (KeyID, SymmetricKey) {
        if let existing = try await oldestKey() { return existing }
        let id = try KeyID.generate()
        let key = try SymmetricKey.generate()
        _ = try await mapped {
            try await backend.createItem(
                in: collection, label: Self.label, attributes: ["xdg:schema": Self.schema, "key-id": id.hexString],
                secret: SecretValue(bytes: key.exportData(), contentType: "application/octet-stream"),
                replacing: false)
        }
        // Another process may have created a key at the same time: everyone uses the oldest.
        guard let chosen = try await oldestKey() else {
            throw KeychainError.providerError(
                dbusErrorName: nil, message: "the encryption key was created but cannot be found again in \(collection)")
        }
        return chosen.0 == id ? (id, key) : chosen
    }

    /// The oldest key in the keyring (by creation time, then id), loaded.
    private func oldestKey() async throws -> (KeyID, SymmetricKey)? {
        try await mapped {
            guard let paths = try await backend.findUnlockedItems(matching: ["xdg:schema": Self.schema], in: collection) else {
                return nil
            }
            var candidates: [(KeyID, Date, String)] = []
            for path in paths {
                let info = try await backend.itemInfo(path)
                guard let hex = info.attributes["key-id"], let id = KeyID(hexString: hex) else { continue }
                candidates.append((id, info.created, path))
            }
            guard let oldest = candidates.min(by: { ($0.1, $0.0.hexString) < ($1.1, $1.0.hexString) }) else {
                return nil
            }
            let key = try await load(oldest.2)
            keys[oldest.0] = key
            return (oldest.0, key)
        }
    }

    private func load(_ path: String) async throws -> SymmetricKey {
        var bytes = try await mapped { try await backend.secret(of: path) }.bytes
        defer { bytes.resetBytes(in: bytes.startIndex..<bytes.endIndex) }
        do {
            return try SymmetricKey(data: bytes)
        } catch {
            throw EncryptorError.unsupportedFormat(
                "the encryption key item \(path) does not hold a 256-bit key (\(bytes.count) bytes); it was left unchanged.")
        }
    }

    private func mapped<Value>(_ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch {
            throw KeychainError.from(error)
        }
    }
}
