#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage
import Locking

/// The "encryptor" through which `save` stores the value read from stdin: KeychainStorage's write
/// path (one item, replaced in place, duplicates removed, attributes and label) with that value in
/// place of an encoded Swift value. It ignores the JSON it is given and returns `bytes`, or with
/// an `encryptor`, `bytes` encrypted by it — with the ``EncryptionContext`` KeychainStorage passes
/// (the item's service and account), so the result is what an app with that encryptor stores.
/// `decrypt` is never used by `save` and returns its input.
struct VerbatimValue: ContextualEncryptor {
    /// The JSON text read from stdin: what is stored (or encrypted) whatever the item given.
    let bytes: Data
    /// nil: `bytes` are stored as they are.
    let encryptor: (any ContextualEncryptor)?
    private let sealed = SealedEnvelopeRecord()

    /// The value `bytes`, stored as they are or through `encryptor`.
    init(bytes: Data, encryptor: (any ContextualEncryptor)? = nil) {
        self.bytes = bytes
        self.encryptor = encryptor
    }

    /// The key id in the envelope the last `encrypt` produced (nil before, or without an
    /// encryptor, or when its output is not an envelope).
    var sealedKeyID: String? { sealed.keyID }

    /// `bytes` (or `bytes` encrypted for `context`), whatever `data` is.
    func encrypt(data: Data, context: EncryptionContext) async throws -> Data {
        guard let encryptor else { return bytes }
        return sealed.record(try await encryptor.encrypt(data: bytes, context: context))
    }

    /// `bytes` (or `bytes` encrypted unbound), whatever `data` is.
    func encrypt(data: Data) async throws -> Data {
        guard let encryptor else { return bytes }
        return sealed.record(try await encryptor.encrypt(data: bytes))
    }

    /// `data` unchanged: `save` never decrypts.
    func decrypt(data: Data, context: EncryptionContext) async throws -> Data { data }
    /// `data` unchanged: `save` never decrypts.
    func decrypt(data: Data) async throws -> Data { data }
}

/// Remembers the key id of the envelope `save` wrote, for its report (never the bytes).
private final class SealedEnvelopeRecord: Sendable {
    private let value = Locked<String?>(nil)

    func record(_ envelope: Data) -> Data {
        let keyID = Encryption.keyID(of: envelope)
        value.withLock { $0 = keyID }
        return envelope
    }

    var keyID: String? { value.withLock { $0 } }
}
