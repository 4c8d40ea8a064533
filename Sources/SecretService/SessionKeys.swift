internal import CGcrypt
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The thin Swift layer over CGcrypt's session crypto: the key pair and the session key are C
// objects in libgcrypt's secure memory, owned here and freed in `deinit`; their bytes never enter
// Swift memory. Everything above sees Data and Variants.

/// A Diffie-Hellman key pair for one OpenSession. Used by one task, then dropped.
final class DHPair {
    private let pair: OpaquePointer

    /// A new random pair, or nil when libgcrypt is not usable or cannot allocate one.
    init?() {
        guard Self.libraryUnavailability == nil, let pair = cgcrypt_dh_generate() else { return nil }
        self.pair = pair
    }

    /// A pair with a given private exponent (big-endian), for known-answer tests.
    init?(privateExponent: [UInt8]) {
        guard Self.libraryUnavailability == nil, let pair = privateExponent.withUnsafeBufferPointer({
            cgcrypt_dh_pair_with_private_exponent($0.baseAddress, $0.count)
        }) else { return nil }
        self.pair = pair
    }

    deinit { cgcrypt_dh_free(pair) }

    /// Runs the process-wide initialisation of libgcrypt (CGcrypt.h) if nobody has; nil once it
    /// has finished, otherwise why libgcrypt cannot be used yet.
    static var libraryUnavailability: String? {
        var version: UnsafePointer<CChar>?
        if cgcrypt_initialize(&version) == CGCRYPT_STARTED_ELSEWHERE {
            return "libgcrypt is being initialised by another part of the process; try again"
        }
        return version == nil ? "libgcrypt could not be initialised" : nil
    }

    /// The public key: always 128 bytes.
    var publicKey: Data { Data(bytes: cgcrypt_dh_public_key(pair), count: Int(CGCRYPT_DH_KEY_BYTES)) }

    enum Derived {
        case derived(SessionKey)
        case invalidPeerKey
        /// The shared secret starts with a zero byte: providers disagree on its encoding.
        case ambiguous
        case failed
    }

    /// The session key shared with the owner of `peerKey` (an `ay`).
    func derive(peerKey: Variant) -> Derived {
        peerKey.withBytes { peer in
            var key: OpaquePointer?
            let status = cgcrypt_dh_derive(pair, peer.baseAddress?.assumingMemoryBound(to: UInt8.self), peer.count, &key)
            switch status {
            case CGCRYPT_DH_DERIVED: return key.map { .derived(SessionKey(adopting: $0)) } ?? .failed
            case CGCRYPT_DH_PEER_INVALID: return .invalidPeerKey
            case CGCRYPT_DH_SECRET_AMBIGUOUS: return .ambiguous
            default: return .failed
            }
        }
    }
}

/// A session's AES-128 key.
///
/// `@unchecked Sendable`: the C object is written once, by `cgcrypt_dh_derive`, before this owner
/// exists; afterwards it is only read (each encryption and decryption opens its own cipher
/// handle), and it is freed in `deinit`, when no other reference remains.
final class SessionKey: @unchecked Sendable {
    private let key: OpaquePointer

    fileprivate init(adopting key: OpaquePointer) { self.key = key }

    deinit { cgcrypt_aes_key_free(key) }

    /// A fresh IV and `plaintext` padded and encrypted with it, or nil when libgcrypt failed.
    /// The only copy of the plaintext made here is encrypted in place.
    func encrypt(_ plaintext: Data) -> (iv: Data, ciphertext: Data)? {
        var iv = Data(count: Int(CGCRYPT_CBC_IV_BYTES))
        var ciphertext = Data(count: cgcrypt_cbc_padded_length(plaintext.count))
        let encrypted = plaintext.withUnsafeBytes { plain in
            iv.withUnsafeMutableBytes { ivBytes in
                ciphertext.withUnsafeMutableBytes { out in
                    cgcrypt_cbc_encrypt(key, plain.baseAddress?.assumingMemoryBound(to: UInt8.self), plain.count,
                                        ivBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                        out.baseAddress?.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return encrypted == 1 ? (iv, ciphertext) : nil
    }

    /// The plaintext of `ciphertext`, or nil when the IV or the length is wrong or the padding does
    /// not check out (another key).
    func decrypt(_ ciphertext: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer) -> Data? {
        guard !ciphertext.isEmpty else { return nil }
        var plaintext = Data(count: ciphertext.count)
        let length = plaintext.withUnsafeMutableBytes { out in
            cgcrypt_cbc_decrypt(key, iv.baseAddress?.assumingMemoryBound(to: UInt8.self), iv.count,
                                ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self), ciphertext.count,
                                out.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        guard length >= 0 else { return nil }  // malformed, another key, or libgcrypt failed: undecodable
        plaintext.count = length
        return plaintext
    }
}
