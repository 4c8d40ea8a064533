#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import PingStorageCrypto
import Waiting

/// SecuredKeyEncryptor's key items in a sandbox's file keyring. Finding the oldest key and
/// creating one when there is none is one transaction of the file, so two processes never both
/// create one.
extension FileKeyringStore {
    func chooseKey(by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice {
        let keyring = try await keychain.keyring(by: deadline)
        // The oldest readable key: every process sees the same records, so all choose the same one.
        if let oldest = oldestKey(in: try await readableItems(keyring, by: deadline)) {
            return Self.choice(oldest)
        }
        let (id, key) = try KeyVault.newKey()
        let secret = key.withUnsafeBytes { FileKeyringSecret(copying: $0) }
        let app = self.app
        let created = try await run { () async throws(FileKeyringError) in
            try await keyring.modify(by: deadline.instant, withDamaged: { items, damaged throws(FileKeyringError) -> FileKeyringItem in
                if oldestKey(in: items) != nil { throw FileKeyringError.aborted("a key exists") }
                // No readable key, but a damaged record may be the app's key: as a damaged key item,
                // it is never replaced by a new key behind the user's back (KeyVault.KeyChoice).
                var keys: [FileKeyringDamagedRecord] = []
                for record in damaged where try record.matches(["xdg:schema": KeyVault.schema]) {
                    // Another app's key (its app attribute is there and is not this app) is not.
                    if record.hashedAttributeNames.contains(AppIdentity.attribute), try !record.matches([AppIdentity.attribute: app]) {
                        continue
                    }
                    keys.append(record)
                }
                if !keys.isEmpty { throw .damaged(keys, path: keyring.path) }
                let item = FileKeyringItem(label: KeyVault.label, attributes: KeyVault.attributes(id: id, key: key, app: app),
                                           secret: secret)
                items.append(item)
                return item
            })
        }
        if let created { return Self.choice(created) }
        // Another process created one since we looked: read it.
        guard let oldest = oldestKey(in: try await readableItems(keyring, by: deadline)) else {
            throw .failure(.providerError(.init(message: "The encryption key was created but cannot be found again.")))
        }
        return Self.choice(oldest)
    }

    func loadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        let keyring = try await keychain.keyring(by: deadline)
        let query = ["xdg:schema": KeyVault.schema, "key-id": id.hexString]
        let (items, damaged) = try await run { () async throws(FileKeyringError) -> ([FileKeyringItem], [FileKeyringDamagedRecord]) in
            let contents = try await keyring.contents(by: deadline.instant)
            return (contents.items, try contents.damaged(matching: query))
        } ?? ([], [])
        guard let item = items.first(where: { $0.matches(query) && AccountRules.isOwn($0.attributes, by: app) }) else {
            // The key may be in a damaged record: that is a damaged item, not a missing key.
            guard damaged.isEmpty else { throw StorageFailure(FileKeyringError.damaged(damaged, path: keyring.path)) }
            return nil
        }
        return Self.load(item)
    }

    /// The file's readable items (damaged records left aside).
    private func readableItems(_ keyring: FileKeyring, by deadline: Deadline) async throws(StorageFailure) -> [FileKeyringItem] {
        try await run { () async throws(FileKeyringError) in try await keyring.contents(by: deadline.instant).items } ?? []
    }

    /// A file read is local: the same as ``loadKey(_:by:)``.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        try await loadKey(id, by: deadline)
    }

    /// The app's oldest key item.
    private func oldestKey(in items: [FileKeyringItem]) -> FileKeyringItem? {
        items.compactMap { item -> (created: Date, id: KeyID, item: FileKeyringItem)? in
            guard item.attributes["xdg:schema"] == KeyVault.schema, item.attributes[AppIdentity.attribute] == app,
                  let hex = item.attributes["key-id"],
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
}
