internal import CGcrypt

/// ECDH on NIST P-256 (CGcrypt's p256.c): the software half of `SecuredKey`'s ECIES, which needs
/// only the recipient's public key. Points are uncompressed (0x04 ‖ x ‖ y, 65 bytes); shared
/// x-coordinates come back in secret memory (``SecretBytes``). Stateless: any thread.
package enum P256 {
    /// Bytes of an uncompressed point.
    package static let pointByteCount = Int(CGCRYPT_P256_POINT_BYTES)
    /// Bytes of a coordinate (and of the shared secret).
    package static let coordinateByteCount = Int(CGCRYPT_P256_COORDINATE_BYTES)

    /// ECDH with a fresh ephemeral key pair: its public point, and the x-coordinate of the product
    /// of its private scalar and `peer`.
    /// - Throws: ``GcryptError/Kind/malformed`` when `peer` is not an uncompressed point on the
    ///   curve; ``GcryptError/Kind/unavailable`` or ``GcryptError/Kind/failed`` when libgcrypt cannot.
    ///
    /// The corresponding C function is `cgcrypt_p256_ephemeral_ecdh`.
    package static func ephemeralAgreement(with peer: [UInt8]) throws(GcryptError) -> (ephemeralPublic: [UInt8], sharedX: SecretBytes) {
        try agreement(peer: peer, operation: "agree on an ECDH secret") { peer, point, shared in
            cgcrypt_p256_ephemeral_ecdh(peer, point, shared)
        }
    }

    /// ECDH with a given private scalar (big-endian, reduced mod n): its public point and the shared
    /// x-coordinate. For tests that play a key's owner in software; pass ``generator`` as `peer`
    /// for the public point alone.
    /// - Throws: as ``ephemeralAgreement(with:)``; ``GcryptError/Kind/malformed`` also for a zero scalar.
    ///
    /// The corresponding C function is `cgcrypt_p256_ecdh_with_scalar`.
    package static func agreement(scalar: [UInt8], peer: [UInt8]) throws(GcryptError) -> (publicPoint: [UInt8], sharedX: SecretBytes) {
        let result = try agreement(peer: peer, operation: "compute an ECDH product") { peer, point, shared in
            scalar.withUnsafeBufferPointer { cgcrypt_p256_ecdh_with_scalar($0.baseAddress, $0.count, peer, point, shared) }
        }
        return (result.ephemeralPublic, result.sharedX)
    }

    /// P-256's base point G, uncompressed.
    package static let generator: [UInt8] = [0x04]
        + hex("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
        + hex("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")

    private static func agreement(
        peer: [UInt8], operation: String,
        _ call: (UnsafePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) -> cgcrypt_p256_status
    ) throws(GcryptError) -> (ephemeralPublic: [UInt8], sharedX: SecretBytes) {
        try Libgcrypt.requireAvailable(to: operation)
        guard peer.count == pointByteCount else {
            throw GcryptError(.malformed, operation: operation, message: "a P-256 point is \(pointByteCount) bytes, not \(peer.count)")
        }
        var point = [UInt8](repeating: 0, count: pointByteCount)
        var status = CGCRYPT_P256_FAILED
        let shared = SecretBytes(count: coordinateByteCount) { (buffer: UnsafeMutableRawBufferPointer) in
            let out = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            status = peer.withUnsafeBufferPointer { peer in point.withUnsafeMutableBufferPointer { call(peer.baseAddress!, $0.baseAddress!, out) } }
        }
        switch status {
        case CGCRYPT_P256_OK: return (point, shared)
        case CGCRYPT_P256_PEER_INVALID:
            throw GcryptError(.malformed, operation: operation, message: "the public key is not a point on P-256")
        default:
            throw GcryptError(.failed, operation: operation, message: "libgcrypt failed (out of secure memory?)")
        }
    }

    private static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
