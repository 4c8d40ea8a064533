#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
import Waiting

/// The rules every ``KeyringStore`` follows for ``KeyVault``'s keys: which key seals new data,
/// what a key item holds (plain or bound to the TPM, ``BoundKey``) and how it is checked.
extension KeyVault {
    /// Whether `a` seals new data before `b`: the oldest key (by creation time, then id).
    static func precedes(_ a: (created: Date, id: KeyID), _ b: (created: Date, id: KeyID)) -> Bool {
        (a.created, a.id.hexString) < (b.created, b.id.hexString)
    }

    /// The key in a key item's bytes, checked against its `key-check` (items of earlier versions
    /// have none): the key, or why the item is unusable. Bytes of a bound key (``BoundKey``) are
    /// unwrapped by the TPM, whatever the attributes say.
    /// - Throws: when the TPM cannot be asked now (unreachable, timed out, cancelled): nothing is
    ///   known about the key then.
    static func openedKey(_ bytes: Data, attributes: [String: String], boundKeys: BoundKeys,
                          by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError> {
        let id = attributes["key-id"] ?? "?", checkValue = attributes["key-check"]
        guard BoundKey.isBound(bytes: bytes) else { return checkedKey(bytes, checkValue: checkValue, id: id) }
        switch await boundKeys.unbind(bytes, by: deadline) {
        case .success(let key):
            let result = checked(key, checkValue: checkValue, id: id)
            // A 2.0.0 key that opened and matches its key-check: its pin is written by the vault.
            if case .success = result { boundKeys.recordPinToWrite(id: id, bytes: bytes) }
            return result
        case .failure(.malformed(let why)):
            return .failure(.failedToDecrypt(.unsupportedFormat(
                "The encryption key item of key \(id) is bound to the TPM but \(why); it was left unchanged.")))
        case .failure(.tpm(let error)):
            switch error.kind {
            case .foreignKey:
                return .failure(.failedToDecrypt(.tpmCleared(
                    "The encryption key \(id) is bound to a TPM that cannot open it: this machine's TPM was cleared or "
                    + "replaced, or the keyring comes from another machine (or, if none of these, something between this "
                    + "machine and its TPM answers in its place: its storage key is not the one pinned with the key, which "
                    + "was not used). What it encrypted is lost (the item was left "
                    + "unchanged): fetch the data again (sign in again); new saves use a new key.")))
            case .cancelled:
                throw .cancelled("open the encryption key with the TPM")
            case .timedOut:
                throw .failure(.timedOut(.init(message: "The TPM did not answer in time while opening encryption key \(id).",
                                               recovery: "Try again; if it goes on, check the TPM (tpm2-abrmd, /dev/tpmrm0).",
                                               detail: error.message)))
            case .unavailable, .failed:
                throw .failure(.providerError(.init(
                    message: "The encryption key \(id) is bound to this machine's TPM, which cannot be used now.",
                    recovery: "Check that the TPM can be reached (/dev/tpmrm0 and the tss group, or tpm2-abrmd), then try again.",
                    detail: error.message)))
            }
        }
    }

    /// The key in a plain key item's bytes, checked against its `key-check`.
    static func checkedKey(_ bytes: Data, checkValue: String?, id: String) -> Result<SymmetricKey, EncryptorError> {
        guard let key = try? SymmetricKey(data: bytes) else {
            return .failure(.failedToDecrypt(.unsupportedFormat(
                "The encryption key item of key \(id) does not hold a 256-bit key (\(bytes.count) bytes); it was left unchanged.")))
        }
        return checked(key, checkValue: checkValue, id: id)
    }

    private static func checked(_ key: SymmetricKey, checkValue: String?, id: String) -> Result<SymmetricKey, EncryptorError> {
        if let checkValue, checkValue != key.checkValue {
            return .failure(.failedToDecrypt(.unsupportedFormat(
                "The encryption key item of key \(id) holds bytes that do not match its key-check attribute: another "
                + "program changed it. It was left unchanged; restore it, or delete it and the items it encrypted.")))
        }
        return .success(key)
    }

    /// Whether a key item is of the kind chosen for new data (bound or not): by its attributes.
    static func isOfKind(_ attributes: [String: String], bound: Bool) -> Bool {
        BoundKey.isBound(attributes) == bound
    }

    /// Whether a key's choice failed because this TPM refuses it: such a key is passed over for new
    /// data (a cleared TPM must not stop the app from saving again), never replaced.
    static func isForeign(_ key: Result<SymmetricKey, EncryptorError>) -> Bool {
        if case .failure(let error) = key, case .tpmCleared = error.reason { true } else { false }
    }

    /// A new key and id, bound to the TPM when `bound` (then the TPM makes a key for it).
    static func newKey(bound: Bool, boundKeys: BoundKeys, by deadline: Deadline) async throws(StorageFailure) -> NewKey {
        let id: KeyID, key: SymmetricKey
        do {
            (id, key) = (try KeyID.generate(), try SymmetricKey.generate())
        } catch {
            throw .failure(.providerError(.init(message: "Encryption is not available: \(CryptoLibrary.unavailabilityReason ?? "libgcrypt failed").")))
        }
        guard bound else {
            Log.info("No encryption key in the keyring: creating key \(id.hexString)")
            return NewKey(id: id, key: key, bound: nil)
        }
        switch await boundKeys.bind(key, by: deadline) {
        case .success(let wrapped):
            Log.info("No encryption key bound to this TPM in the keyring: creating key \(id.hexString), bound to the TPM")
            return NewKey(id: id, key: key, bound: wrapped)
        case .failure(let error) where error.kind == .cancelled:
            throw .cancelled("create an encryption key in the TPM")
        case .failure(let error):
            throw .failure(.providerError(.init(message: "A new encryption key cannot be bound to this machine's TPM.",
                                                recovery: "Try again; if it goes on, check the TPM, or set keyBinding to none.",
                                                detail: error.message)))
        }
    }

    /// A key about to be stored: its id, the key, and for a bound key the bytes the item keeps.
    struct NewKey: Sendable {
        let id: KeyID
        let key: SymmetricKey
        /// The bound key's item bytes (``BoundKey``); nil: the item holds the key's own 32 bytes.
        let bound: Data?

        /// The new key item's attributes: ``KeyVault/attributes(id:key:app:)``, and ``BoundKey/attribute``
        /// for a bound key.
        func attributes(app: String) -> [String: String] {
            var attributes = KeyVault.attributes(id: id, key: key, app: app)
            if bound != nil { attributes[BoundKey.attribute] = BoundKey.tpm }
            return attributes
        }

        /// Calls `body` with the item's secret: a bound key's bytes, or the key's own bytes where
        /// they lie (its locked memory; no copy on the heap; the Data must not escape `body`).
        func withSecret<R, Failure: Error>(_ body: (Data) async throws(Failure) -> R) async throws(Failure) -> R {
            if let bound { return try await body(bound) }
            return try await key.withUnsafeBytesAsync { bytes async throws(Failure) in
                try await body(Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!), count: bytes.count, deallocator: .none))
            }
        }
    }

    /// The attributes of a new key item.
    static func attributes(id: KeyID, key: SymmetricKey, app: String) -> [String: String] {
        ["xdg:schema": schema, "key-id": id.hexString, "key-check": key.checkValue, AppIdentity.attribute: app]
    }
}
