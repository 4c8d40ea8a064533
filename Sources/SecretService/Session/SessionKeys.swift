#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import Gcrypt
import DBusTransport

// The session's key exchange and key, from the package's one libgcrypt layer (the Gcrypt
// module's `DHPair` and `AESKey`), in the shapes the session speaks: D-Bus values and Data.

/// A session's AES-128 key: the package's one AES key type, in secret memory.
typealias SessionKey = AESKey

extension DHPair {
    /// The public key, as sent in OpenSession: always 128 bytes.
    var publicKeyData: Data { Data(publicKey) }

    /// The session key shared with the owner of `peerKey` (an `ay`).
    func derive(peerKey: Variant) -> Derived {
        peerKey.withBytes { derive(peerKey: $0) }
    }
}

extension AESKey {
    /// A fresh IV and `plaintext` padded and encrypted with it, or nil when libgcrypt failed.
    /// The only copy of the plaintext made here is encrypted in place.
    func encrypt(_ plaintext: Data) -> (iv: Data, ciphertext: Data)? {
        let sealed: Result<(iv: [UInt8], ciphertext: [UInt8]), GcryptError> = plaintext.withUnsafeBytes { bytes in
            Result { () throws(GcryptError) in try cbcEncrypt(bytes) }
        }
        guard case .success(let (iv, ciphertext)) = sealed else { return nil }
        return (Data(iv), Data(ciphertext))
    }

    /// The plaintext of `ciphertext`, or nil when the IV or the length is wrong or the padding does
    /// not check out (another key): all undecodable alike.
    func decrypt(_ ciphertext: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer) -> Data? {
        guard !ciphertext.isEmpty, let plaintext = try? cbcDecrypt(ciphertext, iv: iv) else { return nil }
        return plaintext.withUnsafeBytes { Data($0) }
    }
}
