#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why sealing or opening an ``Envelope``, or building a key, failed.
///
/// One error type for the whole of PingStorageCrypto. Each way an envelope can be malformed has its
/// own case, so callers can tell "these bytes are not an envelope" (``wrongMagic``) from "written by
/// a newer version" (``unsupportedVersion(_:)``) from "damaged or the wrong key"
/// (``authenticationFailed``). Messages are written for a person and never contain key bytes,
/// plaintext or ciphertext. Cases may be added in later versions; switch with a `default`.
public enum EnvelopeError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// libgcrypt could not be started, is older than ``CryptoLibrary/minimumVersion``, or failed
    /// its self-test; see ``CryptoLibrary/unavailabilityReason``.
    case cryptoUnavailable
    /// The input is shorter than the smallest possible envelope of its version (or than the magic
    /// and version byte): it was cut off.
    case truncated(length: Int, minimum: Int)
    /// The input is longer than ``Envelope/maximumEnvelopeByteCount``; it was rejected before any
    /// decryption.
    case oversized(length: Int, maximum: Int)
    /// The input does not start with ``Envelope/magic``: it is not an envelope (for instance data
    /// stored without encryption).
    case wrongMagic
    /// The envelope declares a format version this library cannot read (written by a newer one).
    case unsupportedVersion(UInt8)
    /// The tag did not verify: the envelope was modified, the key is not the one that sealed it, or
    /// the associated data (the item's service and account) differ from those it was sealed with.
    case authenticationFailed
    /// The plaintext passed to ``Envelope/seal(_:key:keyID:associatedData:)`` is longer than
    /// ``Envelope/maximumPlaintextByteCount``.
    case plaintextTooLarge(length: Int, maximum: Int)
    /// Key material has the wrong length (a ``SymmetricKey`` is exactly 32 bytes).
    case invalidKeyLength(Int)
    /// A key identifier has the wrong length (a ``KeyID`` is exactly 16 bytes).
    case invalidKeyIDLength(Int)
    /// libgcrypt reported an unexpected error; `code` is its `gpg_err_code_t`, `message` its text.
    case libraryFailure(operation: String, code: UInt32, message: String)

    /// What happened and what to do about it, for a person.
    public var description: String {
        switch self {
        case .cryptoUnavailable:
            // Reading the reason may run the one-time initialisation, which never formats this case,
            // so there is no recursion.
            "encryption is unavailable: libgcrypt could not be initialised"
                + (CryptoLibrary.unavailabilityReason.map { " (\($0))" } ?? "")
                + "; install or upgrade libgcrypt20"
        case .truncated(let length, let minimum):
            "the encrypted data is truncated: \(length) bytes, but an envelope has at least \(minimum); "
                + "the stored item was cut off or is not an envelope"
        case .oversized(let length, let maximum):
            "the encrypted data is too large: \(length) bytes, more than the maximum of \(maximum); "
                + "it was not decrypted"
        case .wrongMagic:
            "the data is not an encrypted envelope (it does not start with the envelope signature); "
                + "it may have been stored without encryption"
        case .unsupportedVersion(let version):
            "the envelope has format version \(version), which this version of the library cannot read; "
                + "it was probably written by a newer version, so upgrade"
        case .authenticationFailed:
            "the encrypted data could not be authenticated: it was modified, was sealed with a different "
                + "key, or belongs to a different service or account"
        case .plaintextTooLarge(let length, let maximum):
            "the data to encrypt is too large: \(length) bytes, more than the maximum of \(maximum)"
        case .invalidKeyLength(let length):
            "the key has \(length) bytes; an AES-256 key has exactly \(SymmetricKey.byteCount)"
        case .invalidKeyIDLength(let length):
            "the key identifier has \(length) bytes; it must have exactly \(KeyID.byteCount)"
        case .libraryFailure(let operation, let code, let message):
            "libgcrypt failed to \(operation): \(message) (error code \(code))"
        }
    }

    /// Same as ``description``, so `localizedDescription` is useful too.
    public var errorDescription: String? { description }
}
