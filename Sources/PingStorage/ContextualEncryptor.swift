#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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

    /// The bytes an AEAD cipher authenticates for this context, different for every distinct
    /// (service, account) pair:
    /// - when neither contains NUL (always so for KeychainStorage, which rejects NUL):
    ///   `com.pingidentity.PingStorage/v1`, the service and the account, each followed by a NUL
    ///   (the form every envelope written so far is bound to);
    /// - otherwise `com.pingidentity.PingStorage/v2` and a NUL, then the service and the account,
    ///   each preceded by its length in UTF-8 bytes (4 bytes, big-endian). The two forms start
    ///   differently, so no context of one form can produce the bytes of another.
    public var associatedData: Data {
        let service = Array(service.utf8), account = Array(account.utf8)
        guard service.contains(0) || account.contains(0) else {
            return Data("com.pingidentity.PingStorage/v1\u{0}".utf8) + service + [0] + account + [0]
        }
        func lengthPrefixed(_ bytes: [UInt8]) -> [UInt8] {
            let count = UInt32(bytes.count)
            return [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)] + bytes
        }
        return Data("com.pingidentity.PingStorage/v2\u{0}".utf8) + lengthPrefixed(service) + lengthPrefixed(account)
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
