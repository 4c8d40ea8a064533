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
    /// - Throws: when it cannot (``EncryptorError/failedToEncrypt(_:)`` by convention).
    func encrypt(data: Data) async throws -> Data
    /// Decrypts what ``encrypt(data:)`` produced.
    /// - Throws: when `data` cannot be decrypted (``EncryptorError/failedToDecrypt(_:)`` by convention).
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
/// The iOS SDK's two cases, each carrying the specific ``Reason`` ``SecuredKeyEncryptor`` knows,
/// so that iOS code compiles and behaves the same: an exhaustive `switch` over
/// `failedToEncrypt`/`failedToDecrypt`, `catch EncryptorError.failedToDecrypt` (any reason),
/// `throw EncryptorError.failedToEncrypt` (reason ``Reason/unspecified``), and `==`, which compares
/// the case alone. A Linux caller tells a missing key or an unreadable format from tampering by
/// ``reason`` (`catch EncryptorError.failedToDecrypt(.keyNotFound)`). A keyring that cannot be
/// read is not an EncryptorError: ``SecuredKeyEncryptor`` throws ``KeychainError`` for it.
public enum EncryptorError: LocalizedError, CustomStringConvertible, Sendable, Hashable {
    /// Why encrypting or decrypting failed.
    public enum Reason: Sendable, Hashable {
        /// No reason given: the iOS forms, as an app's own encryptor throws them. The library's
        /// encryptors never throw this.
        case unspecified
        /// The data was changed, encrypted with another key of the same id, or copied from another
        /// item (``SecuredKeyEncryptor``'s data is bound to its service and account). The stored
        /// item is left unchanged.
        case authenticationFailed
        /// The key the data was encrypted with is not in the keyring (deleted, or the keyring was
        /// restored from elsewhere). The message names the key id. The stored item is left unchanged.
        case keyNotFound(String)
        /// The stored bytes (or the key item) are not in a format this version can read: not an
        /// envelope, truncated, written by a newer version. The message says which.
        case unsupportedFormat(String)
        /// The cryptographic library failed (libgcrypt unusable). The message says how.
        case cryptoFailure(String)
        /// The key the data was encrypted with is bound to a TPM that cannot open it: this
        /// machine's TPM was cleared (`tpm2_clear`, a firmware reset) or replaced, or the keyring
        /// was copied from another machine. The data is lost, as on a new phone: fetch it again
        /// (sign in again); saving a new value works (with a new key). The message names the key
        /// id. The stored item is left unchanged.
        case tpmCleared(String)

        /// The case's name (`keyNotFound`, `tpmCleared`, …), for logs and tools.
        public var name: String {
            switch self {
            case .unspecified: "unspecified"
            case .authenticationFailed: "authenticationFailed"
            case .keyNotFound: "keyNotFound"
            case .unsupportedFormat: "unsupportedFormat"
            case .cryptoFailure: "cryptoFailure"
            case .tpmCleared: "tpmCleared"
            }
        }

        /// What happened, for a person; nil for ``unspecified``.
        public var message: String? {
            switch self {
            case .unspecified: nil
            case .authenticationFailed:
                "the stored bytes were changed, or were copied from another item (encrypted data is bound to its "
                    + "service and account). The item was left unchanged."
            case .keyNotFound(let message), .unsupportedFormat(let message), .cryptoFailure(let message), .tpmCleared(let message):
                message
            }
        }
    }

    /// Encrypting failed, for ``reason``.
    case failedToEncrypt(Reason)
    /// Decrypting failed, for ``reason``.
    case failedToDecrypt(Reason)

    /// iOS's `EncryptorError.failedToEncrypt`: for no reason given.
    public static var failedToEncrypt: EncryptorError { .failedToEncrypt(.unspecified) }
    /// iOS's `EncryptorError.failedToDecrypt`: for no reason given.
    public static var failedToDecrypt: EncryptorError { .failedToDecrypt(.unspecified) }

    /// Why it failed.
    public var reason: Reason {
        switch self {
        case .failedToEncrypt(let reason), .failedToDecrypt(let reason): reason
        }
    }

    /// What went wrong, for a person (the iOS SDK's property).
    public var errorMessage: String {
        switch (self, reason) {
        case (_, .keyNotFound(let message)), (_, .unsupportedFormat(let message)), (_, .tpmCleared(let message)): message
        case (.failedToEncrypt, _): "Failed to encrypt data" + (reason.message.map { ": \($0)" } ?? "")
        case (.failedToDecrypt, _): "Failed to decrypt data" + (reason.message.map { ": \($0)" } ?? "")
        }
    }

    /// What `"\(error)"` prints, as SDK code logs errors: the iOS case's name (`failedToDecrypt`),
    /// as on iOS, followed by the reason's name when there is one (`failedToDecrypt(keyNotFound)`).
    /// What happened is in `localizedDescription` and ``errorMessage``.
    public var description: String {
        let name = isEncrypting ? "failedToEncrypt" : "failedToDecrypt"
        return reason == .unspecified ? name : "\(name)(\(reason.name))"
    }

    /// Same as ``errorMessage``, so `localizedDescription` is useful too.
    public var errorDescription: String? { errorMessage }

    /// The name logs and ping-keyring use: `keyNotFound`, `unsupportedFormat` and `tpmCleared` by
    /// their reason, otherwise the case's (`failedToEncrypt`, `failedToDecrypt`).
    public var kind: String {
        switch (self, reason) {
        case (_, .keyNotFound): "keyNotFound"
        case (_, .tpmCleared): "tpmCleared"
        case (_, .unsupportedFormat): "unsupportedFormat"
        case (.failedToEncrypt, _): "failedToEncrypt"
        case (.failedToDecrypt, _): "failedToDecrypt"
        }
    }

    /// Two errors are equal when they are the same iOS case, whatever their reasons, as iOS code
    /// compares them; compare ``reason`` for the cause.
    public static func == (a: EncryptorError, b: EncryptorError) -> Bool {
        a.isEncrypting == b.isEncrypting
    }

    /// Hashes the case alone, as ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(isEncrypting)
    }

    private var isEncrypting: Bool {
        if case .failedToEncrypt = self { true } else { false }
    }
}
