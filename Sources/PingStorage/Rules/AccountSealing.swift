#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting

/// How ``KeychainStorage`` turns a value into the bytes an account's item keeps, and back: the
/// storage's encryptor, seen from below. Chosen once, when the storage is made
/// (``KeychainStore/init(items:encryptor:)``): ``SecuredKeyEncryptor`` is one, and seals knowing
/// its key; any other ``Encryptor`` is wrapped in an ``EncryptorSealer``.
///
/// A save seals, writes and confirms inside the account's lock, by the call's deadline
/// (``KeychainItems/save(_:sealer:context:)``): it never climbs back up to the storage.
protocol AccountSealer: Sendable {
    /// Seals `plaintext` for the item `context` describes.
    /// - Throws: the encryptor's error (``EncryptorError``, or ``KeychainError`` when its key's
    ///   keyring cannot be used), as the storage's `save` throws it.
    func seal(_ plaintext: Data, for context: EncryptionContext, by deadline: Deadline) async throws -> SealedValue
    /// What `stored`, read from the item `context` describes, was sealed from.
    /// - Throws: the encryptor's error, as the storage's `get` throws it.
    func open(_ stored: Data, for context: EncryptionContext, by deadline: Deadline) async throws -> Data
}

/// A value sealed for an account's item: its bytes, and what the sealer knows about them.
/// Whoever holds one wipes `bytes` once written.
struct SealedValue: Sendable {
    /// What the item is to hold.
    var bytes: Data
    /// Whether bytes already in the item hold the same plaintext, sealed with the same key (then
    /// nothing is written: an encryptor's random nonce makes every envelope differ, and a provider
    /// such as gnome-keyring rewrites its whole file on every write). Nil: only the same bytes do.
    var holdsSameValue: (@Sendable (Data) -> Bool)?
    /// Asked after the bytes were written: whether the key they were sealed with is still the one
    /// its key item holds (another program may have rewritten it meanwhile; a fresh process would
    /// then load other bytes). False: the value is sealed and written again. Nil: nothing to confirm.
    var confirmKey: (@Sendable (Deadline) async throws -> Bool)?
}

/// Any ``Encryptor``: its output is what the item keeps, through the context-bound methods when
/// it is a ``ContextualEncryptor``. Custom encryptors written for iOS work unchanged; their own
/// time is theirs (no deadline reaches them).
struct EncryptorSealer: AccountSealer {
    let encryptor: any Encryptor

    func seal(_ plaintext: Data, for context: EncryptionContext, by deadline: Deadline) async throws -> SealedValue {
        let bytes = if let contextual = encryptor as? any ContextualEncryptor {
            try await contextual.encrypt(data: plaintext, context: context)
        } else {
            try await encryptor.encrypt(data: plaintext)
        }
        return SealedValue(bytes: bytes)
    }

    func open(_ stored: Data, for context: EncryptionContext, by deadline: Deadline) async throws -> Data {
        if let contextual = encryptor as? any ContextualEncryptor {
            return try await contextual.decrypt(data: stored, context: context)
        }
        return try await encryptor.decrypt(data: stored)
    }
}

extension Encryptor {
    /// The sealer a storage uses for this encryptor: itself when it is one, else an ``EncryptorSealer``.
    var sealer: any AccountSealer {
        (self as? any AccountSealer) ?? EncryptorSealer(encryptor: self)
    }
}
