internal import CGcrypt

/// A Diffie-Hellman key pair of the Secret Service's `dh-ietf1024-sha256-aes128-cbc-pkcs7`
/// sessions (CGcrypt's dh_session.c: the RFC 2409 1024-bit group, HKDF-SHA256 to a 16-byte AES
/// key). The private exponent stays in libgcrypt's secure memory, owned here and freed in
/// `deinit`; the derived key is an ``AESKey`` in secret memory. Used by one task, then dropped.
package final class DHPair {
    private let pair: OpaquePointer

    /// A new random pair, or nil when libgcrypt is not usable or cannot allocate one.
    ///
    /// The corresponding C function is `cgcrypt_dh_generate`.
    package init?() {
        guard Libgcrypt.unavailabilityReason == nil, let pair = cgcrypt_dh_generate() else { return nil }
        self.pair = pair
    }

    /// A pair with a given private exponent (big-endian), for known-answer tests.
    ///
    /// The corresponding C function is `cgcrypt_dh_pair_with_private_exponent`.
    package init?(privateExponent: [UInt8]) {
        guard Libgcrypt.unavailabilityReason == nil, let pair = privateExponent.withUnsafeBufferPointer({
            cgcrypt_dh_pair_with_private_exponent($0.baseAddress, $0.count)
        }) else { return nil }
        self.pair = pair
    }

    /// The corresponding C function is `cgcrypt_dh_free`.
    deinit { cgcrypt_dh_free(pair) }

    /// The public key: always 128 bytes, zero-padded on the left.
    ///
    /// The corresponding C function is `cgcrypt_dh_public_key`.
    package var publicKey: [UInt8] {
        Array(UnsafeBufferPointer(start: cgcrypt_dh_public_key(pair), count: Int(CGCRYPT_DH_KEY_BYTES)))
    }

    /// What a key exchange gave.
    package enum Derived {
        /// The session key.
        case derived(AESKey)
        /// The peer's public key is out of range.
        case invalidPeerKey
        /// The shared secret starts with a zero byte, which providers encode in two ways: use
        /// another session.
        case ambiguous
        /// libgcrypt failed.
        case failed
    }

    /// The session key shared with the owner of `peerKey` (big-endian; leading zeros allowed).
    ///
    /// The corresponding C function is `cgcrypt_dh_derive`.
    package func derive(peerKey: UnsafeRawBufferPointer) -> Derived {
        var status = CGCRYPT_DH_FAILED
        let key = SecretBytes(count: Int(CGCRYPT_AES_KEY_BYTES)) { (out: UnsafeMutableRawBufferPointer) in
            status = cgcrypt_dh_derive(pair, peerKey.baseAddress?.assumingMemoryBound(to: UInt8.self), peerKey.count,
                                       out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        switch status {
        case CGCRYPT_DH_DERIVED: return .derived(AESKey(key))
        case CGCRYPT_DH_PEER_INVALID: return .invalidPeerKey
        case CGCRYPT_DH_SECRET_AMBIGUOUS: return .ambiguous
        default: return .failed
        }
    }
}
