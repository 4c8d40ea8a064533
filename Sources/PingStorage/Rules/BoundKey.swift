#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import Gcrypt
import Locking
import PingStorageCrypto
internal import TPM
import Waiting

/// A ``SecuredKeyEncryptor`` key bound to this machine's TPM 2.0 (``KeyVault``'s keys when
/// ``KeychainConfiguration/keyBinding`` allows and a TPM answers).
///
/// **Why ECIES to a TPM key, not a TPM seal:** the AES key is wrapped exactly as ``SecuredKey``
/// encrypts (Apple's ECIES, ``ECIES``) to a P-256 key created in the TPM for it; unwrapping needs
/// TPM2_ECDH_ZGen with that key. The same three TPM commands and the same format as `SecuredKey`,
/// already checked against Apple's output and a real TPM, instead of a second mechanism
/// (TPM2_Create of a sealed object and TPM2_Unseal) for the same job. Wrapping needs only the
/// public key (software); only unwrapping, once per key and process, asks the TPM.
///
/// The key item's secret: `PSBND1` ‖ public area length (2 bytes, big-endian) ‖ TPM public area ‖
/// private area length (2 bytes) ‖ TPM private area (wrapped by the TPM) ‖ ECIES ciphertext of the
/// 32-byte AES key (65 + 32 + 16 bytes). Self-contained: the TPM key's blobs travel with the key
/// they open, so there is no second item to keep in step. The item also carries ``attribute`` =
/// ``tpm`` so that a key's kind is known without reading its secret.
///
/// Thread-safety: stateless but for the memo of unwrapped keys (behind a lock); any task.
enum BoundKey {
    /// The key item attribute that marks a bound key.
    static let attribute = "key-binding"
    /// Its value for a key bound to the TPM.
    static let tpm = "tpm"
    static let magic = Array("PSBND1".utf8)
    private static let variant = ECIES.Variant(variableIV: true)
    private static let wrappedByteCount = ECIES.ephemeralKeyByteCount + SymmetricKey.byteCount + ECIES.tagByteCount

    /// Whether a key item's attributes say it is bound to a TPM.
    static func isBound(_ attributes: [String: String]) -> Bool { attributes[attribute] == tpm }

    /// Whether a key item's secret is a bound key's (its magic).
    static func isBound(bytes: some Collection<UInt8>) -> Bool { bytes.starts(with: magic) }

    /// Why a bound key cannot be unwrapped.
    enum Failure: Error {
        /// The bytes are not a bound key this version reads, or do not open (changed).
        case malformed(String)
        /// The TPM failed, refused the key as another TPM's (``TPMError/Kind/foreignKey``), or did
        /// not answer.
        case tpm(TPMError)
    }

    // MARK: Binding and unbinding

    /// Wraps `key` to a new key created in the TPM: the bytes to keep as the key item's secret.
    /// Two TPM commands (create the key, load it for its public point); the wrapping is software.
    static func bind(_ key: SymmetricKey, by deadline: Deadline) async -> Result<Data, TPMError> {
        let blob: TPMKeyBlob, point: [UInt8]
        switch await TPM.createKey(by: deadline) {
        case .success(let created): blob = created
        case .failure(let error): return .failure(error)
        }
        switch await TPM.publicPoint(of: blob, by: deadline) {
        case .success(let loaded): point = loaded
        case .failure(let error): return .failure(error)
        }
        // The key's bytes are handed over where they lie (its locked memory), without a heap copy.
        let sealed = key.withUnsafeBytes { bytes in
            try? ECIES.seal(Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!), count: bytes.count, deallocator: .none),
                            to: point, variant: variant)
        }
        guard let sealed else { return .failure(TPMError(.failed, "cannot wrap the key to the TPM's public key (libgcrypt failed)")) }
        let bytes = Data(encode(blob)) + sealed
        remember(bytes, key)
        return .success(bytes)
    }

    /// The AES key in a bound key item's `bytes`: the TPM computes the ECDH secret (one command),
    /// the rest is software. Remembered by the bytes for the process: the same bytes always hold
    /// the same key, so a key read again (each save confirms its key item) costs no TPM command.
    static func unbind(_ bytes: Data, by deadline: Deadline) async -> Result<SymmetricKey, Failure> {
        if let known = memo.withLock({ $0[digest(bytes)] }) { return .success(known) }
        guard let (blob, wrapped) = decode([UInt8](bytes)) else {
            return .failure(.malformed("it does not hold a TPM-bound key this version can read (\(bytes.count) bytes)"))
        }
        let ephemeral = Array(wrapped[..<ECIES.ephemeralKeyByteCount])
        let shared: SecretBytes
        switch await TPM.sharedX(blob, peer: ephemeral, by: deadline) {
        case .success(let secret): shared = secret
        case .failure(let error): return .failure(.tpm(error))
        }
        guard let opened = ECIES.openSecret(Data(wrapped), variant: variant, agree: { _ in shared }),
              let key = try? SymmetricKey(secret: opened) else {
            return .failure(.malformed("its wrapped key does not open with its TPM key (the bytes were changed)"))
        }
        remember(bytes, key)
        return .success(key)
    }

    // MARK: The format

    /// The blobs' part of a bound key's bytes (the wrapped key follows).
    static func encode(_ blob: TPMKeyBlob) -> [UInt8] { blob.encoded(magic: magic) }

    /// The blobs and the wrapped key of a bound key's bytes, read with bounds; nil when they are
    /// not exactly that.
    static func decode(_ bytes: [UInt8]) -> (TPMKeyBlob, wrapped: [UInt8])? {
        guard let (blob, wrapped) = TPMKeyBlob.decode(bytes, magic: magic),
              wrapped.count == wrappedByteCount, wrapped.first == 0x04 else { return nil }
        return (blob, Array(wrapped))
    }

    // MARK: Whether to bind

    /// Whether a TPM answers, asked once per process (the first encryptor to choose a key asks):
    /// a TPM does not come and go while a process runs, and asking costs a connection. A process
    /// that found none keeps sealing with unbound keys; the next one asks again.
    static func tpmAnswers(by deadline: Deadline) async -> Bool {
        if let known = reachability.withLock({ $0 }) { return known }
        let answers = await TPM.isAvailable(by: deadline)
        reachability.withLock { $0 = $0 ?? answers }
        if !answers { Log.info("SecuredKeyEncryptor: no TPM answers; its keys are not bound to the machine") }
        return answers
    }

    private static let reachability = Locked<Bool?>(nil)
    private static let memo = Locked<[Data: SymmetricKey]>([:])

    private static func remember(_ bytes: Data, _ key: SymmetricKey) {
        memo.withLock { $0[digest(bytes)] = key }
    }

    private static func digest(_ bytes: Data) -> Data {
        bytes.withUnsafeBytes { Data(Hashing.sha256($0)) }
    }
}
