#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Turns the stored bytes into something else and back, e.g. encrypts them.
///
/// ``KeychainStorage`` calls `encrypt` on the item's JSON before writing and `decrypt` on what it
/// reads. Implementations must be safe to call from any task.
public protocol Encryptor: Sendable {
    /// Encrypts `data`.
    /// - Throws: when it cannot (``EncryptorError/failedToEncrypt`` by convention).
    func encrypt(data: Data) async throws -> Data
    /// Decrypts what ``encrypt(data:)`` produced.
    /// - Throws: when `data` cannot be decrypted (``EncryptorError/failedToDecrypt`` by convention).
    func decrypt(data: Data) async throws -> Data
}

/// The encryptor that does nothing: the item's JSON is stored as it is (and shows as text in
/// `secret-tool lookup` and Seahorse). The default of ``KeychainStorage``.
public struct NoEncryptor: Encryptor {
    /// Creates the pass-through encryptor.
    public init() {}
    /// Returns `data` unchanged.
    public func encrypt(data: Data) async throws -> Data { data }
    /// Returns `data` unchanged.
    public func decrypt(data: Data) async throws -> Data { data }
}

/// Errors of an ``Encryptor``.
///
/// The first two cases are the iOS SDK's; ``SecuredKeyEncryptor`` adds the others so that a
/// missing key or an unreadable format can be told apart from tampering.
public enum EncryptorError: LocalizedError, Sendable, Hashable {
    /// The data could not be encrypted.
    case failedToEncrypt
    /// The data could not be decrypted: it was changed, encrypted with another key of the same id,
    /// or copied from another item (it is bound to its service and account).
    case failedToDecrypt
    /// The key the data was encrypted with is not in the keyring (deleted, or the keyring was
    /// restored from elsewhere). The message names the key id. The stored item is left unchanged.
    case keyNotFound(String)
    /// The stored bytes are not in a format this version can read (not an envelope, truncated, or
    /// written by a newer version). The message says which.
    case unsupportedFormat(String)

    /// What went wrong, for a person (the iOS SDK's property).
    public var errorMessage: String {
        switch self {
        case .failedToEncrypt: "Failed to encrypt data"
        case .failedToDecrypt:
            "Failed to decrypt data: the stored bytes were changed, or were copied from another item "
                + "(encrypted data is bound to its service and account). The item was left unchanged."
        case .keyNotFound(let message), .unsupportedFormat(let message): message
        }
    }

    /// Same as ``errorMessage``, so `localizedDescription` is useful too.
    public var errorDescription: String? { errorMessage }
}
