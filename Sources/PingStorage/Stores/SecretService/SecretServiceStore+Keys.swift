#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
internal import SecretService
import Waiting

/// SecuredKeyEncryptor's key items in the Secret Service. A process that finds no key creates one
/// under a fresh random id (concurrent creators never overwrite each other) and then takes the
/// oldest it sees, so that processes creating keys at the same moment settle on one. A bound key's
/// bytes are opened by the TPM outside the D-Bus calls (``KeyVault/openedKey(_:attributes:by:)``).
extension SecretServiceStore {
    func chooseKey(bound: Bool, by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice {
        let calls = self.calls.ending(by: deadline)
        if let oldest = try await oldestKey(calls, bound: bound, by: deadline) { return oldest }
        let new = try await KeyVault.newKey(bound: bound, boundKeys: boundKeys, by: deadline)
        // An unbound key's secret points at the key's own locked memory: no copy of the key is
        // made on the heap (the transport session encrypts it from there, CGcrypt's aes_cbc.c).
        try await run { () async throws(SecretServiceError) in
            try await new.withSecret { secret async throws(SecretServiceError) in
                _ = try await calls.createItem(
                    in: keyCollection, label: KeyVault.label, attributes: new.attributes(app: app),
                    secret: SecretValue(bytes: secret, contentType: "application/octet-stream"), replacing: false)
            }
        }
        // Another process may have created a key at the same time: everyone uses the oldest.
        guard let chosen = try await oldestKey(calls, bound: bound, by: deadline) else {
            throw .failure(.providerError(.init(message: "The encryption key was created but cannot be found again.")))
        }
        return chosen
    }

    func loadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        let calls = self.calls.ending(by: deadline)
        // The one reference to the secret's bytes, so that the wipe reaches them (not a copy).
        var bytes = Data()
        defer { bytes.wipe() }
        let info = try await run { () async throws(SecretServiceError) -> SecretItemInfo? in
            let found = try await calls.findItems(matching: ["xdg:schema": KeyVault.schema, "key-id": id.hexString], in: keyCollection)
            for path in found.all {
                let info = try await calls.itemInfo(path)
                // Another app's key item is never used, even under an id an envelope names.
                guard AccountRules.isUsable(info.attributes, by: app) else { continue }
                bytes = try await secret(of: info, calls, foundAt: found.changeToken)
                return info
            }
            return nil
        }
        guard let info else { return nil }
        return try await KeyVault.openedKey(bytes, attributes: info.attributes, boundKeys: boundKeys, by: deadline)
    }

    /// While nothing but our own account items was created since the key item was found
    /// (``keysUnchanged(since:)``), it is still the one with `id` (a rewrite in place does not move
    /// the token): its secret is read at once, one round trip where a search, its properties and its
    /// secret take three. Otherwise, ``loadKey(_:by:)``.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>? {
        if let item = knownKeys.withLock({ $0[id] }), keysUnchanged(since: StoreMoment(item.token)) {
            let calls = self.calls.ending(by: deadline)
            var bytes = try await run { () async throws(SecretServiceError) -> Data? in
                do throws(SecretServiceError) {
                    return try await calls.secret(of: item.path).value.bytes
                } catch where error.code == .itemNotFound {
                    return nil  // deleted since: the search below says so
                }
            }
            defer { bytes?.wipe() }
            if let bytes {
                var attributes = ["key-id": id.hexString]
                attributes["key-check"] = item.checkValue
                let checked = try await KeyVault.openedKey(bytes, attributes: attributes, boundKeys: boundKeys, by: deadline)
                // Bytes that fail the key-check known from before may come with a new key-check (a
                // restore rewrites both, and a rewrite does not move the token): read both afresh.
                if case .success = checked { return checked }
            }
        }
        return try await loadKey(id, by: deadline)
    }

    /// Whether the key items are as they were at `token`: nothing changed since, or only account
    /// items this connection created (a save of a new account must not cost a key search), or
    /// items announced as changed that are not the key items known (KWallet announces every
    /// SetSecret, KeePassXC most: a save must not cost a key search either).
    func keysUnchanged(since moment: StoreMoment?) -> Bool {
        guard let token = moment?.changeToken, let now = calls.currentChangeToken else { return false }
        guard let heard = calls.announcements(between: token, and: now) else { return false }
        let keyItems = Set(knownKeys.withLock { $0.values.map(\.path) })
        return heard.allSatisfy { announcement in
            guard let item = announcement.item, !keyItems.contains(item) else { return false }
            return announcement.kind == .changed || (announcement.kind == .created && calls.rememberedItems.isOwnCreation(item))
        }
    }

    /// The app's oldest key of the kind asked for that opens, or fails for another reason than
    /// this TPM refusing it (a damaged key item is never passed over: no new key replaces it).
    private func oldestKey(_ calls: any SecretServiceCalls, bound: Bool,
                           by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice? {
        let (token, candidates) = try await run { () async throws(SecretServiceError) in
            let found = try await calls.findItems(matching: ["xdg:schema": KeyVault.schema, AppIdentity.attribute: app], in: keyCollection)
            var candidates: [(created: Date, id: KeyID, info: SecretItemInfo)] = []
            for path in found.all {
                let info = try await calls.itemInfo(path)
                guard let hex = info.attributes["key-id"], let id = KeyID(hexString: hex),
                      KeyVault.isOfKind(info.attributes, bound: bound) else { continue }
                candidates.append((info.created, id, info))
            }
            return (found.changeToken, candidates.sorted { KeyVault.precedes(($0.created, $0.id), ($1.created, $1.id)) })
        }
        for candidate in candidates {
            var bytes = try await run { () async throws(SecretServiceError) in try await secret(of: candidate.info, calls, foundAt: token) }
            defer { bytes.wipe() }
            let key = try await KeyVault.openedKey(bytes, attributes: candidate.info.attributes, boundKeys: boundKeys, by: deadline)
            if KeyVault.isForeign(key) {
                Log.info("The encryption key \(candidate.id.hexString) is bound to a TPM that cannot open it; it is passed over for new data")
                continue
            }
            return KeyVault.KeyChoice(id: candidate.id, key: key, moment: StoreMoment(token))
        }
        return nil
    }

    /// A key item's secret, its path remembered for ``reloadKey(_:by:)``.
    private func secret(of item: SecretItemInfo, _ calls: any SecretServiceCalls,
                        foundAt token: ChangeToken) async throws(SecretServiceError) -> Data {
        let bytes = try await calls.secret(of: item.path).value.bytes
        if let hex = item.attributes["key-id"], let id = KeyID(hexString: hex) {
            knownKeys.withLock { $0[id] = (item.path, item.attributes["key-check"], token) }
        }
        return bytes
    }
}

/// A 2.0.0 bound key's pin added in the Secret Service (``KeyringStore/pinBoundKey(_:replacing:with:by:)``). The Secret Service
/// has no compare-and-swap: the item's bytes are read again right before they are replaced, so a
/// rewrite by another program is lost only if it lands within that one round trip, and then the
/// item holds the key this app sealed with (``KeyVault/confirm(_:)`` checks that after every save).
extension SecretServiceStore {
    func pinBoundKey(_ id: KeyID, replacing read: Data, with pinned: Data, by deadline: Deadline) async throws(StorageFailure) {
        let calls = self.calls.ending(by: deadline), app = self.app
        try await run { () async throws(SecretServiceError) in
            let found = try await calls.findItems(matching: ["xdg:schema": KeyVault.schema, "key-id": id.hexString], in: keyCollection)
            for path in found.all {
                let info = try await calls.itemInfo(path)
                guard info.attributes[AppIdentity.attribute] == app else { continue }
                var current = try await calls.secret(of: path).value.bytes
                defer { current.wipe() }
                guard current == read else { continue }
                _ = try await calls.setSecret(SecretValue(bytes: pinned, contentType: "application/octet-stream"), of: path)
            }
        }
    }
}
