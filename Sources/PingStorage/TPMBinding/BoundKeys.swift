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

/// What the TPM taught one place's keys (``KeychainPlace``): the AES keys its bound key items
/// opened to (by their bytes: the same bytes always hold the same key, so a key read again costs
/// no TPM command), whether a TPM answers (asked once), and the pins of 2.0.0 keys still to write.
/// Binding and unbinding go through it, so that what they learn is remembered.
///
/// Thread-safety: `Sendable`; its state sits behind locks.
final class BoundKeys: Sendable {
    // MARK: Binding and unbinding

    /// Wraps `key` to a new key created in the TPM: the bytes to keep as the key item's secret,
    /// with the TPM's primary key's name pinned. Two TPM connections (create the key, load it for
    /// its public point, each in a session salted to the primary); the wrapping is software.
    func bind(_ key: SymmetricKey, by deadline: Deadline) async -> Result<Data, TPMError> {
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
                            to: point, variant: BoundKey.variant)
        }
        guard let sealed else { return .failure(TPMError(.failed, "cannot wrap the key to the TPM's public key (libgcrypt failed)")) }
        let bytes = Data(BoundKey.encode(blob)) + sealed
        remember(bytes, key)
        return .success(bytes)
    }

    /// The AES key in a bound key item's `bytes`: the TPM computes the ECDH secret (one command,
    /// refused before any key is used when the TPM's primary key is not the pinned one), the rest
    /// is software. Remembered by the bytes for the process: the same bytes always hold the same
    /// key, so a key read again (each save confirms its key item) costs no TPM command. For a
    /// 2.0.0 key (no pin), the bytes with the name this TPM answered with are remembered too, for
    /// ``recordPinToWrite(id:bytes:)``.
    func unbind(_ bytes: Data, by deadline: Deadline) async -> Result<SymmetricKey, BoundKey.Failure> {
        if let known = memo.withLock({ $0[digest(bytes)] }) { return .success(known) }
        guard let (blob, wrapped) = BoundKey.decode([UInt8](bytes)) else {
            return .failure(.malformed("it does not hold a TPM-bound key this version can read (\(bytes.count) bytes)"))
        }
        let ephemeral = Array(wrapped[..<ECIES.ephemeralKeyByteCount])
        let use: TPMKeyUse<SecretBytes>
        switch await TPM.sharedX(blob, peer: ephemeral, by: deadline) {
        case .success(let used): use = used
        case .failure(let error): return .failure(.tpm(error))
        }
        guard let opened = ECIES.openSecret(Data(wrapped), variant: BoundKey.variant, agree: { _ in use.value }),
              let key = try? SymmetricKey(secret: opened) else {
            return .failure(.malformed("its wrapped key does not open with its TPM key (the bytes were changed)"))
        }
        remember(bytes, key)
        if blob.parentName == nil {
            let pinned = Data(BoundKey.encode(blob.pinned(to: use.parentName)) + wrapped)
            remember(pinned, key)
            learned.withLock { $0[digest(bytes)] = pinned }
        }
        return .success(key)
    }

    // MARK: Pinning 2.0.0 keys at their first use

    /// Records that the key item `id` holding `bytes` opened (``unbind(_:by:)``) and is a 2.0.0 key
    /// without a pin: its pinned bytes are to be written by whoever holds the item's store
    /// (``KeyVault``, ``KeyringStore/pinBoundKey(_:replacing:with:by:)``). Nothing when `bytes` were already pinned.
    func recordPinToWrite(id: String, bytes: Data) {
        guard let pinned = learned.withLock({ $0[digest(bytes)] }) else { return }
        toWrite.withLock { $0[id] = (bytes, pinned) }
    }

    /// The pin recorded to write for key item `id`, once: its bytes as read, and the same bytes
    /// with the pin. A write that fails leaves the key unpinned (its next first use pins it).
    func pinToWrite(id: String) -> (read: Data, pinned: Data)? {
        toWrite.withLock { $0.removeValue(forKey: id) }
    }

    // MARK: Whether to bind

    /// Whether keys can be bound: a TPM answers and its owner hierarchy has no password (the
    /// primary key is made with the empty one), asked once per process (the first encryptor to
    /// choose a key asks): a TPM does not come and go while a process runs, and asking costs a
    /// connection. A process that found none keeps sealing with unbound keys; the next one asks
    /// again. An owner password is logged as a warning that says what to do.
    func tpmAnswers(by deadline: Deadline) async -> Bool {
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

    private let reachability = Locked<Bool?>(nil)
    private let memo = Locked<[SHA256Digest: SymmetricKey]>([:])
    /// 2.0.0 keys' bytes (by digest) → the same bytes pinned to the name their first use found.
    private let learned = Locked<[SHA256Digest: Data]>([:])
    private let toWrite = Locked<[String: (read: Data, pinned: Data)]>([:])

    private func remember(_ bytes: Data, _ key: SymmetricKey) {
        memo.withLock { $0[digest(bytes)] = key }
    }

    private func digest(_ bytes: Data) -> SHA256Digest {
        bytes.withUnsafeBytes { Hashing.sha256Digest($0) }
    }
}
