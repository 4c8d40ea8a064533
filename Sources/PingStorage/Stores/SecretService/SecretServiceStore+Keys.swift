#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
import SecretService
import Waiting

/// SecuredKeyEncryptor's key items in the Secret Service. A process that finds no key creates one
/// under a fresh random id (concurrent creators never overwrite each other) and then takes the
/// oldest it sees, so that processes creating keys at the same moment settle on one.
extension SecretServiceStore {
    func chooseKey(by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice {
        let calls = self.calls.ending(by: deadline)
        if let oldest = try await run({ () async throws(SecretServiceError) in try await oldestKey(calls) }) { return oldest }
        let (id, key) = try KeyVault.newKey()
        // The secret handed over points at the key's own locked memory: no copy of the key is
        // made on the heap (the transport session encrypts it from there, CGcrypt's aes_cbc.c).
        try await run { () async throws(SecretServiceError) in
            try await key.withUnsafeBytesAsync { bytes async throws(SecretServiceError) in
                let secret = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!), count: bytes.count,
                                  deallocator: .none)
                _ = try await calls.createItem(
                    in: keyCollection, label: KeyVault.label, attributes: KeyVault.attributes(id: id, key: key, app: app),
                    secret: SecretValue(bytes: secret, contentType: "application/octet-stream"), replacing: false)
            }
        }
        // Another process may have created a key at the same time: everyone uses the oldest.
        guard let chosen = try await run({ () async throws(SecretServiceError) in try await oldestKey(calls) }) else {
            throw .failure(.providerError(.init(message: "The encryption key was created but cannot be found again.")))
        }
        return chosen
    }

    func loadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        let calls = self.calls.ending(by: deadline)
        return try await run { () async throws(SecretServiceError) in
            let found = try await calls.findItems(matching: ["xdg:schema": KeyVault.schema, "key-id": id.hexString], in: keyCollection)
            for path in found.all {
                let info = try await calls.itemInfo(path)
                // Another app's key item is never used, even under an id an envelope names.
                if AccountRules.isOwn(info.attributes, by: app) { return try await load(info, calls, foundAt: found.changeToken) }
            }
            return nil
        }
    }

    /// While nothing but our own account items was created since the key item was found
    /// (``keysUnchanged(since:)``), it is still the one with `id` (a rewrite in place does not move
    /// the token): its secret is read at once, one round trip where a search, its properties and its
    /// secret take three. Otherwise, ``loadKey(_:by:)``.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        if let item = knownKeys.withLock({ $0[id] }), keysUnchanged(since: item.token) {
            let calls = self.calls.ending(by: deadline)
            do {
                var bytes = try await calls.secret(of: item.path).value.bytes
                defer { bytes.wipe() }
                let checked = KeyVault.checkedKey(bytes, checkValue: item.checkValue, id: id.hexString)
                // Bytes that fail the key-check known from before may come with a new key-check (a
                // restore rewrites both, and a rewrite does not move the token): read both afresh.
                if case .success = checked { return checked }
            } catch where error.code == .itemNotFound {
                // Deleted since: the search below says so.
            } catch {
                throw StorageFailure(error)
            }
        }
        return try await loadKey(id, by: deadline)
    }

    /// Whether the key items are as they were at `token`: nothing changed since, or only account
    /// items this connection created (a save of a new account must not cost a key search).
    func keysUnchanged(since token: ChangeToken?) -> Bool {
        guard let token, let now = calls.currentChangeToken else { return false }
        return calls.rememberedItems.onlyOwnItemsCreated(since: token, now: now)
    }

    private func oldestKey(_ calls: any SecretServiceCalls) async throws(SecretServiceError) -> KeyVault.KeyChoice? {
        let found = try await calls.findItems(matching: ["xdg:schema": KeyVault.schema, AppIdentity.attribute: app], in: keyCollection)
        var candidates: [(created: Date, id: KeyID, info: SecretItemInfo)] = []
        for path in found.all {
            let info = try await calls.itemInfo(path)
            guard let hex = info.attributes["key-id"], let id = KeyID(hexString: hex) else { continue }
            candidates.append((info.created, id, info))
        }
        guard let oldest = candidates.min(by: { KeyVault.precedes(($0.created, $0.id), ($1.created, $1.id)) }) else { return nil }
        return KeyVault.KeyChoice(id: oldest.id, key: try await load(oldest.info, calls, foundAt: found.changeToken),
                                  token: found.changeToken)
    }

    private func load(_ item: SecretItemInfo, _ calls: any SecretServiceCalls,
                      foundAt token: ChangeToken) async throws(SecretServiceError) -> Result<SymmetricKey, EncryptorError> {
        var bytes = try await calls.secret(of: item.path).value.bytes
        defer { bytes.wipe() }
        if let hex = item.attributes["key-id"], let id = KeyID(hexString: hex) {
            knownKeys.withLock { $0[id] = (item.path, item.attributes["key-check"], token) }
        }
        return KeyVault.checkedKey(bytes, checkValue: item.attributes["key-check"], id: item.attributes["key-id"] ?? "?")
    }
}
