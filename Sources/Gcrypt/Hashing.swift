internal import CGcrypt

// Hashes, HMAC, key derivation and random bytes: one wrapper per libgcrypt call the package
// makes. Secrets (HMAC keys, passwords, derived keys) come in and go out as `SecretBytes`.

/// SHA-256, HMAC-SHA256 and PBKDF2-HMAC-SHA256 over libgcrypt. Thread-safe: every call uses its
/// own handle.
package enum Hashing {
    /// The length of a SHA-256 digest and of an HMAC-SHA256.
    package static let sha256ByteCount = 32

    /// SHA-256 of `input`.
    ///
    /// The corresponding C function is `gcry_md_hash_buffer`.
    package static func sha256(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        Libgcrypt.prepare()
        var digest = [UInt8](repeating: 0, count: sha256ByteCount)
        digest.withUnsafeMutableBytes {
            gcry_md_hash_buffer(Int32(GCRY_MD_SHA256.rawValue), $0.baseAddress, input.baseAddress, input.count)
        }
        return digest
    }

    /// SHA-256 of `input` as a value that needs no heap (see ``SHA256Digest``).
    ///
    /// The corresponding C function is `gcry_md_hash_buffer`.
    package static func sha256Digest(_ input: UnsafeRawBufferPointer) -> SHA256Digest {
        Libgcrypt.prepare()
        var digest = SHA256Digest()
        withUnsafeMutableBytes(of: &digest.words) {
            gcry_md_hash_buffer(Int32(GCRY_MD_SHA256.rawValue), $0.baseAddress, input.baseAddress, input.count)
        }
        return digest
    }

    /// PBKDF2-HMAC-SHA256 of `secret` with `salt` and `iterations`: `count` bytes of secret memory.
    ///
    /// The corresponding C function is `gcry_kdf_derive`.
    package static func pbkdf2SHA256(
        _ secret: SecretBytes, salt: [UInt8], iterations: UInt32, count: Int
    ) throws(GcryptError) -> SecretBytes {
        Libgcrypt.prepare()
        return try SecretBytes(count: count) { (key: UnsafeMutableRawBufferPointer) throws(GcryptError) in
            let error = secret.withUnsafeBytes { secretBytes in
                salt.withUnsafeBytes { saltBytes in
                    gcry_kdf_derive(
                        secretBytes.baseAddress, secretBytes.count,
                        Int32(GCRY_KDF_PBKDF2.rawValue), Int32(GCRY_MD_SHA256.rawValue),
                        saltBytes.baseAddress, saltBytes.count, UInt(iterations), key.count, key.baseAddress)
                }
            }
            try GcryptError.check(error, "derive a key (PBKDF2-SHA256)")
        }
    }

    /// HMAC-SHA256 with `key` over `message`.
    package static func hmacSHA256(key: SecretBytes, _ message: UnsafeRawBufferPointer) throws(GcryptError) -> [UInt8] {
        Libgcrypt.prepare()
        let mac = try HMAC(key: key, message)
        var result = [UInt8](repeating: 0, count: sha256ByteCount)
        var length = result.count
        let error = result.withUnsafeMutableBytes { gcry_mac_read(mac.handle, $0.baseAddress, &length) }
        try GcryptError.check(error, "read an HMAC")
        guard length == sha256ByteCount else {
            throw GcryptError(.failed, operation: "read an HMAC", message: "libgcrypt returned \(length) bytes")
        }
        return result
    }

    /// Whether `expected` is the HMAC-SHA256 with `key` over `message` (compared in constant time
    /// by libgcrypt).
    package static func verifyHMACSHA256(
        key: SecretBytes, _ message: UnsafeRawBufferPointer, expected: UnsafeRawBufferPointer
    ) throws(GcryptError) -> Bool {
        Libgcrypt.prepare()
        let mac = try HMAC(key: key, message)
        let error = gcry_mac_verify(mac.handle, expected.baseAddress, expected.count)
        if gcry_err_code(error) == GPG_ERR_CHECKSUM { return false }
        try GcryptError.check(error, "verify an HMAC")
        return true
    }

    /// An HMAC-SHA256 handle, closed when it goes away.
    private struct HMAC: ~Copyable {
        let handle: gcry_mac_hd_t

        /// A handle keyed with `key` that has read `message`.
        ///
        /// The corresponding C functions are `gcry_mac_open`, `gcry_mac_setkey` and `gcry_mac_write`.
        init(key: SecretBytes, _ message: UnsafeRawBufferPointer) throws(GcryptError) {
            Libgcrypt.prepare()
            var opened: gcry_mac_hd_t?
            try GcryptError.check(gcry_mac_open(&opened, Int32(GCRY_MAC_HMAC_SHA256.rawValue), 0, nil), "open HMAC-SHA256")
            guard let opened else { throw GcryptError(.failed, operation: "open HMAC-SHA256", message: "no handle returned") }
            var error = key.withUnsafeBytes { gcry_mac_setkey(opened, $0.baseAddress, $0.count) }
            if error == 0 { error = gcry_mac_write(opened, message.baseAddress, message.count) }
            guard error == 0 else {
                gcry_mac_close(opened)
                throw GcryptError(gcrypt: error, operation: "compute an HMAC")
            }
            handle = opened
        }

        /// The corresponding C function is `gcry_mac_close`.
        deinit { gcry_mac_close(handle) }
    }
}

/// A SHA-256 digest held inline: what a cache compares to tell whether bytes are the same ones,
/// without keeping the bytes or a heap object derived from them.
package struct SHA256Digest: Hashable, Sendable {
    // Four words rather than `[UInt8]` or `Data`: no allocation per digest, and nothing a leak
    // checker must trace through an enum's tagged pointer.
    fileprivate var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}

/// libgcrypt's CSPRNG. It cannot fail: if its entropy source fails, libgcrypt terminates the
/// process rather than return weak bytes.
package enum Random {
    /// How unpredictable random bytes must be.
    package enum Level: Sendable {
        /// Session keys, nonces, salts, identifiers: `GCRY_STRONG_RANDOM`.
        case strong
        /// Long-term keys: `GCRY_VERY_STRONG_RANDOM`.
        case veryStrong
    }

    /// Fills `buffer` with random bytes of `level`.
    ///
    /// The corresponding C function is `gcry_randomize`.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer, level: Level = .strong) {
        Libgcrypt.prepare()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        gcry_randomize(base, buffer.count, level == .strong ? GCRY_STRONG_RANDOM : GCRY_VERY_STRONG_RANDOM)
    }

    /// `count` random bytes of `level` (public values: salts, nonces, names).
    package static func bytes(_ count: Int, level: Level = .strong) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { fill($0, level: level) }
        return bytes
    }
}
