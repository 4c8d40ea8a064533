import Foundation

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
public enum EncryptorError: LocalizedError, Sendable, Hashable {
    /// The data could not be encrypted.
    case failedToEncrypt
    /// The data could not be decrypted: wrong key, tampered or not encrypted by this encryptor.
    case failedToDecrypt

    /// What went wrong, for a person (the iOS SDK's property).
    public var errorMessage: String {
        switch self {
        case .failedToEncrypt: "Failed to encrypt data"
        case .failedToDecrypt: "Failed to decrypt data: the key is wrong or missing, or the stored bytes were changed"
        }
    }

    /// Same as ``errorMessage``, so `localizedDescription` is useful too.
    public var errorDescription: String? { errorMessage }
}
