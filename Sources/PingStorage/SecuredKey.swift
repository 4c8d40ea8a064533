#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A key pair held in a hardware key store, used for ECIES encryption: the iOS SDK's `SecuredKey`,
/// which on iOS lives in the Secure Enclave.
///
/// **This version reaches no hardware key store**, so ``isAvailable()`` is false on every machine
/// and ``init(applicationTag:)`` returns nil, as iOS's does on a device without a Secure Enclave.
/// Code written for iOS compiles unchanged and takes its no-hardware path. (A TPM 2.0 is the
/// counterpart on Linux; it is not used yet.) ``SecuredKeyEncryptor`` does not depend on this type:
/// it keeps an AES-256 key in the keyring and works without hardware (see <doc:Encryption>).
///
/// Thread-safety: `Sendable`; no instance exists in this version.
public struct SecuredKey: Sendable {
    /// `Never`: no value of this type can be made while no hardware key store is reached, and the
    /// compiler checks that nothing below pretends otherwise.
    private let hardwareKey: Never

    /// Whether a hardware key store is available to hold the key pair. Always false in this version.
    public static func isAvailable() -> Bool {
        false
    }

    /// The key pair stored under `applicationTag`, created when there is none; nil when no hardware
    /// key store is available (``isAvailable()``), which in this version is always.
    /// - Parameter applicationTag: names the key pair (iOS's `kSecAttrApplicationTag`).
    public init?(applicationTag: String) {
        // No hardware key store is reached in this version (isAvailable() is false): no key pair.
        return nil
    }

    /// Encrypts `data` to the key pair's public key with `secAlgorithm`; nil when it cannot.
    /// - Parameters:
    ///   - data: the plaintext.
    ///   - secAlgorithm: the ECIES variant, iOS's default
    ///     ``SecKeyAlgorithm/eciesEncryptionCofactorVariableIVX963SHA256AESGCM``.
    public func encrypt(
        data: Data, secAlgorithm: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    ) -> Data? {
        switch hardwareKey {}
    }

    /// Decrypts what ``encrypt(data:secAlgorithm:)`` produced with the key pair's private key; nil
    /// when it cannot (other key, changed data, another algorithm).
    /// - Parameters:
    ///   - data: what ``encrypt(data:secAlgorithm:)`` returned.
    ///   - secAlgorithm: the algorithm it was encrypted with.
    public func decrypt(
        data: Data, secAlgorithm: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    ) -> Data? {
        switch hardwareKey {}
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
