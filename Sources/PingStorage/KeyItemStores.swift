#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import Locking
import PingStorageCrypto
import SecretService
import Waiting

/// Where ``KeyVault`` keeps its key items, and how it finds, loads and creates them there. The
/// rules (which key seals, what a key item holds) are ``KeyVault``'s; a store only applies them.
protocol KeyItemStore: Sendable {
    /// A chosen key stays current while this has not moved since it was chosen; nil: choose again.
    var currentChangeToken: ChangeToken? { get }
    /// The oldest key (``KeyVault/precedes(_:_:)``), loaded and checked; one is created when
    /// there is none. Throws what a Storage method throws.
    func chooseKey(by deadline: Deadline) async throws -> KeyVault.KeyChoice
    /// The key item with `id`, loaded and checked; nil when there is none.
    func loadKey(_ id: KeyID, by deadline: Deadline) async throws -> Result<SymmetricKey, EncryptorError>?
    /// ``loadKey(_:by:)`` again, after a save, as cheaply as the store can: the same answer.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws -> Result<SymmetricKey, EncryptorError>?
}

extension KeyItemStore {
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws -> Result<SymmetricKey, EncryptorError>? {
        try await loadKey(id, by: deadline)
    }
}

/// Key items in the Secret Service. A process that finds no key creates one under a fresh random
/// id (concurrent creators never overwrite each other) and then takes the oldest it sees, so that
/// processes creating keys at the same moment settle on one.
struct SecretServiceKeyItems: KeyItemStore {
    let backend: any KeychainBackend
    let collection: CollectionReference
    /// Each key item loaded: where, its `key-check`, and the change token when it was found.
    private let known = Locked<[KeyID: (path: ItemPath, checkValue: String?, token: ChangeToken)]>([:])

    init(backend: any KeychainBackend, collection: CollectionReference) {
        self.backend = backend
        self.collection = collection
    }

    var currentChangeToken: ChangeToken? { backend.currentChangeToken }

    func chooseKey(by deadline: Deadline) async throws -> KeyVault.KeyChoice {
        let backend = self.backend.ending(by: deadline)
        if let oldest = try await mapped({ () async throws(SecretServiceError) in try await oldestKey(backend) }) { return oldest }
        let (id, key) = try KeyVault.newKey()
        // The secret handed over points at the key's own locked memory: no copy of the key is
        // made on the heap (the transport session encrypts it from there, CGcrypt's aes_cbc.c).
        try await mapped { () async throws(SecretServiceError) in
            try await key.withUnsafeBytesAsync { bytes async throws(SecretServiceError) in
                let secret = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!), count: bytes.count,
                                  deallocator: .none)
                _ = try await backend.createItem(
                    in: collection, label: KeyVault.label, attributes: KeyVault.attributes(id: id, key: key),
                    secret: SecretValue(bytes: secret, contentType: "application/octet-stream"), replacing: false)
            }
        }
        // Another process may have created a key at the same time: everyone uses the oldest.
        guard let chosen = try await mapped({ () async throws(SecretServiceError) in try await oldestKey(backend) }) else {
            throw KeychainError.failure(.providerError(.init(message: "The encryption key was created but cannot be found again.")))
        }
        return chosen
    }

    func loadKey(_ id: KeyID, by deadline: Deadline) async throws -> Result<SymmetricKey, EncryptorError>? {
        let backend = self.backend.ending(by: deadline)
        return try await mapped { () async throws(SecretServiceError) in
            let found = try await backend.findItems(matching: ["xdg:schema": KeyVault.schema, "key-id": id.hexString], in: collection)
            guard let path = found.all.first else { return nil }
            return try await load(try await backend.itemInfo(path), backend, foundAt: found.changeToken)
        }
    }

    /// While nothing was created or deleted since the key item was found, it is still the one with
    /// `id` (a rewrite in place does not move the token): its secret is read at once, one round trip
    /// where a search, its properties and its secret take three. Otherwise, ``loadKey(_:by:)``.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws -> Result<SymmetricKey, EncryptorError>? {
        if let item = known.withLock({ $0[id] }), let now = backend.currentChangeToken, now.isUnchanged(since: item.token) {
            let backend = self.backend.ending(by: deadline)
            do {
                var bytes = try await backend.secret(of: item.path).value.bytes
                defer { bytes.wipe() }
                return KeyVault.checkedKey(bytes, checkValue: item.checkValue, id: id.hexString)
            } catch where error.code == .itemNotFound {
                // Deleted since: the search below says so.
            } catch {
                throw KeychainError.thrown(error)
            }
        }
        return try await loadKey(id, by: deadline)
    }

    private func oldestKey(_ backend: any KeychainBackend) async throws(SecretServiceError) -> KeyVault.KeyChoice? {
        let found = try await backend.findItems(matching: ["xdg:schema": KeyVault.schema], in: collection)
        var candidates: [(created: Date, id: KeyID, info: SecretItemInfo)] = []
        for path in found.all {
            let info = try await backend.itemInfo(path)
            guard let hex = info.attributes["key-id"], let id = KeyID(hexString: hex) else { continue }
            candidates.append((info.created, id, info))
        }
        guard let oldest = candidates.min(by: { KeyVault.precedes(($0.created, $0.id), ($1.created, $1.id)) }) else { return nil }
        return KeyVault.KeyChoice(id: oldest.id, key: try await load(oldest.info, backend, foundAt: found.changeToken),
                                  token: found.changeToken)
    }

    private func load(_ item: SecretItemInfo, _ backend: any KeychainBackend,
                      foundAt token: ChangeToken) async throws(SecretServiceError) -> Result<SymmetricKey, EncryptorError> {
        var bytes = try await backend.secret(of: item.path).value.bytes
        defer { bytes.wipe() }
        if let hex = item.attributes["key-id"], let id = KeyID(hexString: hex) {
            known.withLock { $0[id] = (item.path, item.attributes["key-check"], token) }
        }
        return KeyVault.checkedKey(bytes, checkValue: item.attributes["key-check"], id: item.attributes["key-id"] ?? "?")
    }

    private func mapped<Value>(_ body: () async throws(SecretServiceError) -> Value) async throws -> Value {
        do {
            return try await body()
        } catch {
            throw KeychainError.thrown(error)
        }
    }
}

/// Key items in a sandbox's file keyring. Finding the oldest key and creating one when there is
/// none is one transaction of the file, so two processes never both create one.
struct FileKeyItems: KeyItemStore {
    let keyring: FileKeyring

    var currentChangeToken: ChangeToken? { nil }

    func chooseKey(by deadline: Deadline) async throws -> KeyVault.KeyChoice {
        if let oldest = Self.oldest(in: try await run { () async throws(FileKeyringError) in try await keyring.items(by: deadline.instant) } ?? []) {
            return Self.choice(oldest)
        }
        let (id, key) = try KeyVault.newKey()
        let secret = key.withUnsafeBytes { FileKeyringSecret(copying: $0) }
        let created = try await run { () async throws(FileKeyringError) in
            try await keyring.modify(by: deadline.instant) { items throws(FileKeyringError) -> FileKeyringItem in
                if Self.oldest(in: items) != nil { throw FileKeyringError.aborted("a key exists") }
                let item = FileKeyringItem(label: KeyVault.label, attributes: KeyVault.attributes(id: id, key: key), secret: secret)
                items.append(item)
                return item
            }
        }
        if let created { return Self.choice(created) }
        // Another process created one since we looked: read it.
        let items = try await run { () async throws(FileKeyringError) in try await keyring.items(by: deadline.instant) } ?? []
        guard let oldest = Self.oldest(in: items) else {
            throw KeychainError.failure(.providerError(.init(message: "The encryption key was created but cannot be found again.")))
        }
        return Self.choice(oldest)
    }

    func loadKey(_ id: KeyID, by deadline: Deadline) async throws -> Result<SymmetricKey, EncryptorError>? {
        let items = try await run { () async throws(FileKeyringError) in try await keyring.items(by: deadline.instant) } ?? []
        guard let item = items.first(where: { $0.matches(["xdg:schema": KeyVault.schema, "key-id": id.hexString]) }) else { return nil }
        return Self.load(item)
    }

    private static func oldest(in items: [FileKeyringItem]) -> FileKeyringItem? {
        items.compactMap { item -> (created: Date, id: KeyID, item: FileKeyringItem)? in
            guard item.attributes["xdg:schema"] == KeyVault.schema, let hex = item.attributes["key-id"],
                  let id = KeyID(hexString: hex) else { return nil }
            return (Date(timeIntervalSince1970: Double(item.created)), id, item)
        }.min { KeyVault.precedes(($0.created, $0.id), ($1.created, $1.id)) }?.item
    }

    private static func choice(_ item: FileKeyringItem) -> KeyVault.KeyChoice {
        KeyVault.KeyChoice(id: KeyID(hexString: item.attributes["key-id"]!)!, key: load(item), token: nil)
    }

    private static func load(_ item: FileKeyringItem) -> Result<SymmetricKey, EncryptorError> {
        // The key is read where the secret lies, without a copy on the heap.
        item.secret.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else {
                return KeyVault.checkedKey(Data(), checkValue: item.attributes["key-check"], id: item.attributes["key-id"] ?? "?")
            }
            let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
            return KeyVault.checkedKey(data, checkValue: item.attributes["key-check"], id: item.attributes["key-id"] ?? "?")
        }
    }

    /// Runs a file call; nil when the transaction was abandoned on purpose.
    private func run<Value>(_ body: () async throws(FileKeyringError) -> Value) async throws -> Value? {
        do {
            return try await body()
        } catch where error.code == .aborted {
            return nil
        } catch {
            throw KeychainError(error)
        }
    }
}
