#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
internal import TPM

/// A key pair held in a hardware key store, used for ECIES encryption: the iOS SDK's `SecuredKey`,
/// which on iOS lives in the Secure Enclave. On Linux it lives in a **TPM 2.0**.
///
/// - **The key:** an ECC P-256 decryption key created inside the TPM under the owner hierarchy's
///   storage primary key (re-created from TCG's SRK template whenever needed); its private part
///   never leaves the TPM in the clear. What the TPM gives back (its public area and its private
///   area wrapped by the TPM), with the primary key's name pinned, is kept in the keyring under the
///   tag, for the app (``AppIdentity``): service `com.pingidentity.PingStorage.SecuredKey.TPM`,
///   account = the tag. Another TPM (another machine, a cleared or replaced TPM) cannot load it,
///   and a primary key of another name than the pinned one is refused before the key is used.
/// - **On the TPM's bus:** the commands that carry key material run in a session salted to that
///   primary key with AES-128-CFB parameter encryption, so the ECDH secret crosses the bus (and
///   tpm2-abrmd) encrypted (SECURITY.md says what a bus sniffer still sees).
/// - **Encryption** needs only the public key and runs in software (libgcrypt); **decryption**
///   computes the ECDH secret inside the TPM (TPM2_ECDH_ZGen). The format is Apple's ECIES
///   (``SecKeyAlgorithm``): ephemeral public key ‖ AES-128-GCM ciphertext ‖ 16-byte tag, so data
///   encrypted for a key by `SecKeyCreateEncryptedData` decrypts here and the other way round.
/// - **Which TPM:** `/dev/tpmrm0` (the kernel's resource manager; the `tss` group on most
///   distributions), else tpm2-abrmd on the system bus; `PINGSTORAGE_TPM_TCTI` chooses explicitly
///   (`device[:PATH]`, `tabrmd[:CONFIGURATION]`, `none`). tpm2-tss (libtss2-esys and the TCTI) is
///   loaded only when a TPM is used, with its logging silenced (`TSS2_LOG=all+none` unless set).
///
/// **Blocking:** every call is synchronous and blocks its calling thread, as iOS's `SecItem` calls
/// do — for one TPM command (a few to some hundred milliseconds on hardware TPMs), and in
/// ``init(applicationTag:)`` also for the keyring. Do not call it from the main thread of a UI or
/// from Swift concurrency's pool in a loop: wrap it in your own thread or a detached task you can
/// afford to block. Nothing inside the package blocks the pool: TPM commands run on a thread of their
/// own and end for the caller after 10 s (a hung TPM gives nil, not a hang), and the keyring work a
/// call waits for runs on an executor of its own, so calls from tasks that block every pool thread
/// still end.
///
/// ``SecuredKeyEncryptor`` binds its AES key to the TPM the same way (ECIES to a TPM key, its own
/// per key item) when one answers, and works without a TPM (see <doc:Encryption>). What the TPM
/// binding protects against, and what not: SECURITY.md.
///
/// Thread-safety: `Sendable`; any thread, any number at once (TPM commands are serialized).
public struct SecuredKey: Sendable {
    private let blob: TPMKeyBlob
    /// The key's public point, uncompressed (65 bytes), as the TPM reported it when it loaded the key.
    private let publicKey: [UInt8]

    /// Whether a TPM answers on the connection this machine gives (see above): false where there
    /// is none, without loading tpm2-tss. Blocks for one TPM round trip at most 10 s.
    public static func isAvailable() -> Bool {
        TPM.isAvailable()
    }

    /// The key pair stored under `applicationTag` for this app, created in the TPM when there is
    /// none; nil when no TPM answers, the keyring cannot be read or written (locked, unavailable,
    /// timed out: then nothing is created), or the stored key cannot be used by this TPM (another
    /// TPM's, or a cleared one: the item is left unchanged, never replaced). Blocks the caller (see
    /// above); reasons are logged (`LogManager`).
    /// - Parameter applicationTag: names the key pair (iOS's `kSecAttrApplicationTag`).
    public init?(applicationTag: String) {
        guard !applicationTag.isEmpty, CryptoLibrary.initialize() else { return nil }
        // No TPM: nil before the keyring is touched and before anything of tpm2-tss is loaded.
        guard TPM.isAvailable() else { return nil }
        let item = SecuredKeyItem(tag: applicationTag)
        do {
            var blob = try item.read()
            if blob == nil {
                switch TPM.createKey() {
                case .success(let created):
                    try item.write(created)
                    // Another process may have stored its own key for the tag meanwhile: what the
                    // keyring holds now is the key every process uses.
                    blob = try item.read()
                case .failure(let error):
                    Log.warning("SecuredKey '\(applicationTag)': \(error.message)")
                    return nil
                }
            }
            guard let blob else { return nil }
            switch TPM.publicPoint(of: blob) {
            case .success(let loaded):
                // A 2.0.0 key (no pin): the primary it loaded under is pinned from now on, in this
                // process at once and in its item when the item is this app's (trust on first use).
                let pinned = blob.parentName == nil ? blob.pinned(to: loaded.parentName) : blob
                if pinned != blob {
                    do {
                        if try item.pin(blob, as: pinned) { Log.info("SecuredKey '\(applicationTag)': its TPM's storage key is now pinned") }
                    } catch {
                        Log.warning("SecuredKey '\(applicationTag)': its TPM's storage key could not be pinned in the keyring "
                                    + "(its next first use tries again)", error: error)
                    }
                }
                self.blob = pinned
                publicKey = loaded.value
            case .failure(let error):
                Log.warning("SecuredKey '\(applicationTag)': the stored key cannot be used with this TPM (another machine's TPM, "
                            + "or it was cleared); its keyring item was left unchanged: \(error.message)")
                return nil
            }
        } catch {
            Log.warning("SecuredKey '\(applicationTag)': the keyring cannot be used; no key was created", error: error)
            return nil
        }
    }

    /// Encrypts `data` to the key pair's public key with `secAlgorithm` (in software: only the
    /// public key is needed); nil for an algorithm other than the four P-256 ECIES ones of
    /// ``SecKeyAlgorithm``, or when libgcrypt fails. Does not use the TPM.
    /// - Parameters:
    ///   - data: the plaintext.
    ///   - secAlgorithm: the ECIES variant, iOS's default
    ///     ``SecKeyAlgorithm/eciesEncryptionCofactorVariableIVX963SHA256AESGCM``.
    public func encrypt(
        data: Data, secAlgorithm: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    ) -> Data? {
        guard let variant = ECIES.variant(of: secAlgorithm) else { return nil }
        return try? ECIES.seal(data, to: publicKey, variant: variant)
    }

    /// Decrypts what ``encrypt(data:secAlgorithm:)`` produced with the key pair's private key,
    /// inside the TPM; nil when it cannot (other key, changed data, another algorithm, the TPM did
    /// not answer within 10 s). Blocks the caller for one TPM command.
    /// - Parameters:
    ///   - data: what ``encrypt(data:secAlgorithm:)`` returned.
    ///   - secAlgorithm: the algorithm it was encrypted with.
    public func decrypt(
        data: Data, secAlgorithm: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    ) -> Data? {
        guard let variant = ECIES.variant(of: secAlgorithm) else { return nil }
        let blob = blob
        return ECIES.open(data, variant: variant) { ephemeral in
            switch TPM.sharedX(blob, peer: ephemeral) {
            case .success(let shared): return shared.value
            case .failure(let error):
                Log.warning("SecuredKey: decryption failed: \(error.message)")
                return nil
            }
        }
    }
}

/// The name of an asymmetric algorithm, as Apple's Security framework spells it (its raw values
/// are Apple's, e.g. `algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV`): Linux has no
/// Security framework, and this type keeps iOS code that names an algorithm for ``SecuredKey``
/// compiling. Only the ECIES encryption algorithms with P-256-sized KDFs are named.
///
/// Thread-safety: a value type; `Sendable`.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    /// Apple's name of the algorithm.
    public let rawValue: String

    /// The algorithm Apple names `rawValue`.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// ECIES with cofactor ECDH, X9.63 KDF with SHA-256, AES-GCM with a KDF-derived IV: iOS's
    /// `SecuredKey` default.
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM =
        SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    /// ECIES with cofactor ECDH, X9.63 KDF with SHA-256, AES-GCM with a zero IV (iOS's legacy default).
    public static let eciesEncryptionCofactorX963SHA256AESGCM =
        SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM")
    /// ECIES with standard ECDH, X9.63 KDF with SHA-256, AES-GCM with a KDF-derived IV.
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM =
        SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")
    /// ECIES with standard ECDH, X9.63 KDF with SHA-256, AES-GCM with a zero IV.
    public static let eciesEncryptionStandardX963SHA256AESGCM =
        SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM")
}
