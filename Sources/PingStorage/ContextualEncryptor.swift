import Foundation

/// Where an encrypted value belongs: the storage passes it to encryptors that can bind their
/// output to it, so that bytes copied to another account fail to decrypt.
public struct EncryptionContext: Sendable, Hashable {
    /// The item's `service` attribute.
    public var service: String
    /// The item's account.
    public var account: String

    /// Creates a context.
    public init(service: String, account: String) {
        self.service = service
        self.account = account
    }

    /// The bytes an AEAD cipher authenticates for this context: a domain label, the service and
    /// the account, each NUL-terminated (neither may contain NUL, which KeychainStorage checks).
    public var associatedData: Data {
        Data("com.pingidentity.PingStorage/v1\u{0}\(service)\u{0}\(account)\u{0}".utf8)
    }
}

/// An ``Encryptor`` that can also bind its output to the item it is stored in.
///
/// ``KeychainStorage`` calls the context-aware methods when its encryptor conforms, and the plain
/// ``Encryptor`` methods otherwise, so custom encryptors written for iOS keep working unchanged.
public protocol ContextualEncryptor: Encryptor {
    /// Encrypts `data` for the item described by `context`.
    func encrypt(data: Data, context: EncryptionContext) async throws -> Data
    /// Decrypts `data` read from the item described by `context`; fails when it was encrypted for
    /// another item.
    func decrypt(data: Data, context: EncryptionContext) async throws -> Data
}
