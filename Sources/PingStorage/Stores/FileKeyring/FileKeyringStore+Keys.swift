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
    func chooseKey(bound: Bool, by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice {
        let keyring = try await keychain.keyring(by: deadline)
        // The oldest readable key: every process sees the same records, so all choose the same one.
        var passedOver: Set<KeyID> = []
        if let oldest = try await oldestKey(in: try await readableItems(keyring, by: deadline), bound: bound, passingOver: &passedOver,
                                            by: deadline) {
            return oldest
        }
        let new = try await KeyVault.newKey(bound: bound, boundKeys: boundKeys, by: deadline)
        let secret = new.bound.map { FileKeyringSecret(copying: $0) } ?? new.key.withUnsafeBytes { FileKeyringSecret(copying: $0) }
        let app = self.app, attributes = new.attributes(app: app), skipped = passedOver
        let created = try await run { () async throws(FileKeyringError) in
            try await keyring.modify(by: deadline.instant, withDamaged: { items, damaged throws(FileKeyringError) -> FileKeyringItem in
                if !keyItems(in: items, bound: bound).allSatisfy({ skipped.contains($0.id) }) { throw FileKeyringError.aborted("a key exists") }
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
                let item = FileKeyringItem(label: KeyVault.label, attributes: attributes, secret: secret)
                items.append(item)
                return item
            })
        }
        if created != nil { return KeyVault.KeyChoice(id: new.id, key: .success(new.key), moment: nil) }
        // Another process created one since we looked: read it.
        guard let oldest = try await oldestKey(in: try await readableItems(keyring, by: deadline), bound: bound, passingOver: &passedOver,
                                               by: deadline) else {
            throw .failure(.providerError(.init(message: "The encryption key was created but cannot be found again.")))
        }
        return oldest
    }

    func loadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        let keyring = try await keychain.keyring(by: deadline)
        let query = ["xdg:schema": KeyVault.schema, "key-id": id.hexString]
        let app = self.app
        let item = try await run { () async throws(FileKeyringError) -> FileKeyringItem? in
            // The key's records alone are decrypted (by their hashed attributes).
            let contents = try await keyring.contents(matchingAny: [query], by: deadline.instant)
            guard let item = contents.items.first(where: { AccountRules.isUsable($0.attributes, by: app) }) else {
                // The key may be in a damaged record: that is a damaged item, not a missing key.
                let damaged = try contents.damaged(matching: query)
                if !damaged.isEmpty { throw FileKeyringError.damaged(damaged, path: keyring.path) }
                return nil
            }
            return item
        } ?? nil
        guard let item else { return nil }
        return try await load(item, by: deadline)
    }

    /// The file's readable key items (damaged records left aside; the key records alone decrypted).
    private func readableItems(_ keyring: FileKeyring, by deadline: Deadline) async throws(StorageFailure) -> [FileKeyringItem] {
        try await run { () async throws(FileKeyringError) in
            try await keyring.contents(matchingAny: [["xdg:schema": KeyVault.schema]], by: deadline.instant).items
        } ?? []
    }

    /// A file read is local: the same as ``loadKey(_:by:)``.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        try await loadKey(id, by: deadline)
    }

    /// The app's key items of the kind asked for (``KeyVault/isOfKind(_:bound:)``), oldest first.
    private func keyItems(in items: [FileKeyringItem], bound: Bool) -> [(id: KeyID, item: FileKeyringItem)] {
        items.compactMap { item -> (created: Date, id: KeyID, item: FileKeyringItem)? in
            guard item.attributes["xdg:schema"] == KeyVault.schema, item.attributes[AppIdentity.attribute] == app,
                  KeyVault.isOfKind(item.attributes, bound: bound), let hex = item.attributes["key-id"],
                  let id = KeyID(hexString: hex) else { return nil }
            return (Date(timeIntervalSince1970: Double(item.created)), id, item)
        }
        .sorted { KeyVault.precedes(($0.created, $0.id), ($1.created, $1.id)) }
        .map { ($0.id, $0.item) }
    }

    /// The oldest key that opens, or fails for another reason than this TPM refusing it (a
    /// damaged key item is never passed over: no new key replaces it); the keys passed over are
    /// added to `passedOver`.
    private func oldestKey(in items: [FileKeyringItem], bound: Bool, passingOver passedOver: inout Set<KeyID>,
                           by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice? {
        for (id, item) in keyItems(in: items, bound: bound) where !passedOver.contains(id) {
            let key = try await load(item, by: deadline)
            if KeyVault.isForeign(key) {
                Log.info("The encryption key \(id.hexString) is bound to a TPM that cannot open it; it is passed over for new data")
                passedOver.insert(id)
                continue
            }
            return KeyVault.KeyChoice(id: id, key: key, moment: nil)
        }
        return nil
    }

    private func load(_ item: FileKeyringItem, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError> {
        // A bound key's bytes are no secret without the TPM: copied, and opened by it.
        if let bound = item.secret.withUnsafeBytes({ BoundKey.isBound(bytes: $0) ? Data($0) : nil }) {
            return try await KeyVault.openedKey(bound, attributes: item.attributes, boundKeys: boundKeys, by: deadline)
        }
        // A plain key is read where the secret lies, without a copy on the heap.
        return item.secret.withUnsafeBytes { bytes in
            let checkValue = item.attributes["key-check"], id = item.attributes["key-id"] ?? "?"
            guard let base = bytes.baseAddress else { return KeyVault.checkedKey(Data(), checkValue: checkValue, id: id) }
            let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
            return KeyVault.checkedKey(data, checkValue: checkValue, id: id)
        }
    }
}
