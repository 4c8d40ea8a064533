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
/// The key item's secret: `PSBND2` ‖ parent name length (2 bytes, big-endian) ‖ the name of the
/// TPM's storage primary key the key was made under (pinned: ``TPMKeyBlob/parentName``) ‖ public
/// area length (2 bytes) ‖ TPM public area ‖ private area length (2 bytes) ‖ TPM private area
/// (wrapped by the TPM) ‖ ECIES ciphertext of the 32-byte AES key (65 + 32 + 16 bytes). 2.0.0
/// wrote `PSBND1` and no name; such keys still open, and their name is pinned at their first use
/// (trust on first use, ``pinToWrite(id:)``). Self-contained: the TPM key's blobs and pin travel
/// with the key they open, so there is no second item to keep in step. The item also carries
/// ``attribute`` = ``tpm`` so that a key's kind is known without reading its secret.
///
/// Thread-safety: stateless but for the memo of unwrapped keys (behind a lock); any task.
enum BoundKey {
    /// The key item attribute that marks a bound key.
    static let attribute = "key-binding"
    /// Its value for a key bound to the TPM.
    static let tpm = "tpm"
    static let magic = TPMKeyBlobMagic(unpinned: Array("PSBND1".utf8), pinned: Array("PSBND2".utf8))
    private static let variant = ECIES.Variant(variableIV: true)
    private static let wrappedByteCount = ECIES.ephemeralKeyByteCount + SymmetricKey.byteCount + ECIES.tagByteCount

    /// Whether a key item's attributes say it is bound to a TPM.
    static func isBound(_ attributes: [String: String]) -> Bool { attributes[attribute] == tpm }

    /// Whether a key item's secret is a bound key's (its magic).
    static func isBound(bytes: some Collection<UInt8>) -> Bool { magic.starts(bytes) }

    /// Why a bound key cannot be unwrapped.
    enum Failure: Error {
        /// The bytes are not a bound key this version reads, or do not open (changed).
        case malformed(String)
        /// The TPM failed, refused the key as another TPM's (``TPMError/Kind/foreignKey``), or did
        /// not answer.
        case tpm(TPMError)
    }

    // MARK: Binding and unbinding

    /// Wraps `key` to a new key created in the TPM: the bytes to keep as the key item's secret,
    /// with the TPM's primary key's name pinned. Two TPM connections (create the key, load it for
    /// its public point, each in a session salted to the primary); the wrapping is software.
    static func bind(_ key: SymmetricKey, by deadline: Deadline) async -> Result<Data, TPMError> {
        let blob: TPMKeyBlob, point: [UInt8]
        switch await TPM.createKey(by: deadline) {
        case .success(let created): blob = created
        case .failure(let error): return .failure(error)
        }
        switch await TPM.publicPoint(of: blob, by: deadline) {
        case .success(let loaded): point = loaded.value
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

    /// The AES key in a bound key item's `bytes`: the TPM computes the ECDH secret (one command,
    /// refused before any key is used when the TPM's primary key is not the pinned one), the rest
    /// is software. Remembered by the bytes for the process: the same bytes always hold the same
    /// key, so a key read again (each save confirms its key item) costs no TPM command. For a
    /// 2.0.0 key (no pin), the bytes with the name this TPM answered with are remembered too, for
    /// ``recordPinToWrite(id:bytes:)``.
    static func unbind(_ bytes: Data, by deadline: Deadline) async -> Result<SymmetricKey, Failure> {
        if let known = memo.withLock({ $0[digest(bytes)] }) { return .success(known) }
        guard let (blob, wrapped) = decode([UInt8](bytes)) else {
            return .failure(.malformed("it does not hold a TPM-bound key this version can read (\(bytes.count) bytes)"))
        }
        let ephemeral = Array(wrapped[..<ECIES.ephemeralKeyByteCount])
        let use: TPMKeyUse<SecretBytes>
        switch await TPM.sharedX(blob, peer: ephemeral, by: deadline) {
        case .success(let used): use = used
        case .failure(let error): return .failure(.tpm(error))
        }
        guard let opened = ECIES.openSecret(Data(wrapped), variant: variant, agree: { _ in use.value }),
              let key = try? SymmetricKey(secret: opened) else {
            return .failure(.malformed("its wrapped key does not open with its TPM key (the bytes were changed)"))
        }
        remember(bytes, key)
        if blob.parentName == nil {
            let pinned = Data(encode(blob.pinned(to: use.parentName)) + wrapped)
            remember(pinned, key)
            learned.withLock { $0[digest(bytes)] = pinned }
        }
        return .success(key)
    }

    // MARK: Pinning 2.0.0 keys at their first use

    /// Records that the key item `id` holding `bytes` opened (``unbind(_:by:)``) and is a 2.0.0 key
    /// without a pin: its pinned bytes are to be written by whoever holds the item's store
    /// (``KeyVault``, ``BoundKeyPinning``). Nothing when `bytes` were already pinned.
    static func recordPinToWrite(id: String, bytes: Data) {
        guard let pinned = learned.withLock({ $0[digest(bytes)] }) else { return }
        toWrite.withLock { $0[id] = (bytes, pinned) }
    }

    /// The pin recorded to write for key item `id`, once: its bytes as read, and the same bytes
    /// with the pin. A write that fails leaves the key unpinned (its next first use pins it).
    static func pinToWrite(id: String) -> (read: Data, pinned: Data)? {
        toWrite.withLock { $0.removeValue(forKey: id) }
    }

    // MARK: The format

    /// The blobs' part of a bound key's bytes (the wrapped key follows).
    static func encode(_ blob: TPMKeyBlob) -> [UInt8] { blob.encoded(magic) }

    /// The blobs and the wrapped key of a bound key's bytes, read with bounds; nil when they are
    /// not exactly that.
    static func decode(_ bytes: [UInt8]) -> (TPMKeyBlob, wrapped: [UInt8])? {
        guard let (blob, wrapped) = TPMKeyBlob.decode(bytes, magic),
              wrapped.count == wrappedByteCount, wrapped.first == 0x04 else { return nil }
        return (blob, Array(wrapped))
    }

    // MARK: Whether to bind

    /// Whether keys can be bound: a TPM answers and its owner hierarchy has no password (the
    /// primary key is made with the empty one), asked once per process (the first encryptor to
    /// choose a key asks): a TPM does not come and go while a process runs, and asking costs a
    /// connection. A process that found none keeps sealing with unbound keys; the next one asks
    /// again. An owner password is logged as a warning that says what to do.
    static func tpmAnswers(by deadline: Deadline) async -> Bool {
        if let known = reachability.withLock({ $0 }) { return known }
        let problem = await TPM.bindingProblem(by: deadline)
        reachability.withLock { $0 = $0 ?? (problem == nil) }
        if let problem {
            if problem.message.contains(KeyBindingInspection.ownerPassword) {
                Log.warning("SecuredKeyEncryptor: its keys cannot be bound to the machine's TPM: \(problem.message)")
            } else {
                Log.info("SecuredKeyEncryptor: no TPM answers; its keys are not bound to the machine")
            }
        }
        return problem == nil
    }

    private static let reachability = Locked<Bool?>(nil)
    private static let memo = Locked<[Data: SymmetricKey]>([:])
    /// 2.0.0 keys' bytes (by digest) → the same bytes pinned to the name their first use found.
    private static let learned = Locked<[Data: Data]>([:])
    private static let toWrite = Locked<[String: (read: Data, pinned: Data)]>([:])

    private static func remember(_ bytes: Data, _ key: SymmetricKey) {
        memo.withLock { $0[digest(bytes)] = key }
    }

    private static func digest(_ bytes: Data) -> Data {
        bytes.withUnsafeBytes { Data(Hashing.sha256($0)) }
    }
}

/// A store that can add the pin to a 2.0.0 bound key's item (``BoundKey/pinToWrite(id:)``): its
/// secret becomes the same TPM blobs and wrapped key under `PSBND2`, with the parent's name.
///
/// Why rewriting the key item is safe here, in a keyring other apps and processes share: the item
/// is rewritten only when it is provably this app's (its `pingstorage-app` is the app's: an item
/// of no app or of another app is never touched) and still holds the very bytes that were read and
/// opened; the new bytes open to the same AES key (its `key-check` holds), so a reader that sees
/// either version gets the same key; a failed read or write changes nothing, and the key stays
/// unpinned until a later first use.
protocol BoundKeyPinning: Sendable {
    /// Replaces the secret of this app's key item `id` with `pinned` when it still holds `read`;
    /// nothing otherwise.
    func pinBoundKey(_ id: KeyID, replacing read: Data, with pinned: Data, by deadline: Deadline) async throws(StorageFailure)
}
