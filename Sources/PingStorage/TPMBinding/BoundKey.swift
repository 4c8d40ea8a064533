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
/// (trust on first use, ``BoundKeys/pinToWrite(id:)``). Self-contained: the TPM key's blobs and pin travel
/// with the key they open, so there is no second item to keep in step. The item also carries
/// ``attribute`` = ``tpm`` so that a key's kind is known without reading its secret.
///
/// Stateless: the format and the item rules. What the TPM taught (keys opened, whether one
/// answers, pins to write) is a place's ``BoundKeys``.
enum BoundKey {
    /// The key item attribute that marks a bound key.
    static let attribute = "key-binding"
    /// Its value for a key bound to the TPM.
    static let tpm = "tpm"
    static let magic = TPMKeyBlobMagic(unpinned: Array("PSBND1".utf8), pinned: Array("PSBND2".utf8))
    static let variant = ECIES.Variant(variableIV: true)
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
}
