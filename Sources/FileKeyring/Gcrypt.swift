internal import CGcrypt

// The thin layer over libgcrypt: one wrapper per C call, all in this file. Raw libgcrypt types
// and pointers do not leave it: the wrappers take `SecureBuffer`s and byte arrays, check every
// `gcry_error_t`, and turn failures into `FileKeyringError`s with libgcrypt's own (static,
// secret-free) message. `cgcrypt_initialize` must have run before any other call
// (`Gcrypt.initialize`, called by `FileKeyring.init`).

enum Gcrypt {
    /// The one process-wide initialisation of libgcrypt, shared with the rest of the package
    /// (see CGcrypt.h). Thread-safe. Throws when libgcrypt is not usable.
    ///
    /// The corresponding C function is `cgcrypt_initialize`.
    static func initialize() throws(FileKeyringError) {
        var version: UnsafePointer<CChar>?
        let role = cgcrypt_initialize(&version)
        if role == CGCRYPT_STARTED_ELSEWHERE || version == nil {
            throw FileKeyringError(
                .cryptoFailure,
                "libgcrypt is being initialised by another part of the process or could not be; try again")
        }
    }

    // MARK: Key derivation

    /// PBKDF2-HMAC-SHA256 of `secret` with `salt` and `iterations`, filling `key` (its length is
    /// the output length).
    ///
    /// The corresponding C function is `gcry_kdf_derive`.
    static func pbkdf2SHA256(
        secret: SecureBuffer, salt: [UInt8], iterations: UInt32, into key: SecureBuffer
    ) throws(FileKeyringError) {
        let error = secret.withUnsafeBytes { secretBytes in
            salt.withUnsafeBytes { saltBytes in
                key.withUnsafeMutableBytes { keyBytes in
                    gcry_kdf_derive(
                        secretBytes.baseAddress, secretBytes.count,
                        Int32(GCRY_KDF_PBKDF2.rawValue), Int32(GCRY_MD_SHA256.rawValue),
                        saltBytes.baseAddress, saltBytes.count, UInt(iterations),
                        keyBytes.count, keyBytes.baseAddress)
                }
            }
        }
        try check(error, "derive the keyring key (PBKDF2-SHA256)")
    }

    // MARK: HMAC-SHA256

    /// An open HMAC-SHA256 handle, closed when it goes away.
    struct MAC: ~Copyable {
        fileprivate let handle: gcry_mac_hd_t

        /// The corresponding C function is `gcry_mac_close`.
        deinit { gcry_mac_close(handle) }
    }

    /// Opens an HMAC-SHA256 handle.
    ///
    /// The corresponding C function is `gcry_mac_open`.
    static func macOpen() throws(FileKeyringError) -> MAC {
        var handle: gcry_mac_hd_t?
        try check(gcry_mac_open(&handle, Int32(GCRY_MAC_HMAC_SHA256.rawValue), 0, nil), "open HMAC-SHA256")
        guard let handle else { throw FileKeyringError(.cryptoFailure, "libgcrypt returned no HMAC handle") }
        return MAC(handle: handle)
    }

    /// Sets the HMAC key.
    ///
    /// The corresponding C function is `gcry_mac_setkey`.
    static func macSetKey(_ mac: borrowing MAC, _ key: SecureBuffer) throws(FileKeyringError) {
        let error = key.withUnsafeBytes { gcry_mac_setkey(mac.handle, $0.baseAddress, $0.count) }
        try check(error, "set the HMAC key")
    }

    /// Feeds `bytes[range]` to the HMAC.
    ///
    /// The corresponding C function is `gcry_mac_write`.
    static func macWrite(_ mac: borrowing MAC, _ bytes: [UInt8], _ range: Range<Int>) throws(FileKeyringError) {
        let error = bytes.withUnsafeBytes { raw in
            gcry_mac_write(mac.handle, raw.baseAddress.map { $0 + range.lowerBound }, range.count)
        }
        try check(error, "compute an HMAC")
    }

    /// Reads the 32-byte HMAC-SHA256 result.
    ///
    /// The corresponding C function is `gcry_mac_read`.
    static func macRead(_ mac: borrowing MAC) throws(FileKeyringError) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var length = result.count
        let error = result.withUnsafeMutableBytes { gcry_mac_read(mac.handle, $0.baseAddress, &length) }
        try check(error, "read an HMAC")
        guard length == 32 else { throw FileKeyringError(.cryptoFailure, "libgcrypt returned an HMAC of \(length) bytes") }
        return result
    }

    /// Whether the HMAC equals `expected[range]` (libgcrypt compares in constant time).
    ///
    /// The corresponding C function is `gcry_mac_verify`.
    static func macVerify(_ mac: borrowing MAC, _ expected: [UInt8], _ range: Range<Int>) throws(FileKeyringError) -> Bool {
        let error = expected.withUnsafeBytes { raw in
            gcry_mac_verify(mac.handle, raw.baseAddress.map { $0 + range.lowerBound }, range.count)
        }
        if gcry_err_code(error) == GPG_ERR_CHECKSUM { return false }
        try check(error, "verify an HMAC")
        return true
    }

    // MARK: AES-128-CBC with PKCS#7 padding

    /// An AES-128 key in libgcrypt's secure memory (CGcrypt's aes_cbc.c, which SecretService's
    /// sessions use too), wiped when it goes away. (libsecret opens `GCRY_CIPHER_AES256` but gives
    /// it the 16-byte key, which libgcrypt runs as AES-128: see FORMAT.md.)
    ///
    /// `@unchecked Sendable`: the C key is written once, in `init`, and only read afterwards (each
    /// call opens its own cipher handle); it is freed in `deinit`, when no other reference remains.
    final class AESKey: @unchecked Sendable {
        fileprivate let key: OpaquePointer

        /// The corresponding C function is `cgcrypt_aes_key_new`.
        init(_ bytes: SecureBuffer) throws(FileKeyringError) {
            guard let key = bytes.withUnsafeBytes({ cgcrypt_aes_key_new($0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) }) else {
                throw FileKeyringError(.cryptoFailure, "libgcrypt could not hold the AES key (16 bytes expected, \(bytes.count) given)")
            }
            self.key = key
        }

        /// The corresponding C function is `cgcrypt_aes_key_free`.
        deinit { cgcrypt_aes_key_free(key) }
    }

    /// `plaintext` padded and encrypted under a fresh IV: (IV, ciphertext).
    ///
    /// The corresponding C function is `cgcrypt_cbc_encrypt`.
    static func cbcEncrypt(_ key: AESKey, _ plaintext: SecureBuffer) throws(FileKeyringError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        var iv = [UInt8](repeating: 0, count: Int(CGCRYPT_CBC_IV_BYTES))
        var ciphertext = [UInt8](repeating: 0, count: cgcrypt_cbc_padded_length(plaintext.count))
        let encrypted = plaintext.withUnsafeBytes { plain in
            iv.withUnsafeMutableBufferPointer { ivBytes in
                ciphertext.withUnsafeMutableBufferPointer { out in
                    cgcrypt_cbc_encrypt(key.key, plain.baseAddress?.assumingMemoryBound(to: UInt8.self), plain.count,
                                        ivBytes.baseAddress, out.baseAddress)
                }
            }
        }
        guard encrypted == 1 else { throw FileKeyringError(.cryptoFailure, "libgcrypt could not encrypt an item") }
        return (iv, ciphertext)
    }

    /// The plaintext of `bytes[ciphertext]` under the IV `bytes[iv]`, or nil when its padding is
    /// wrong. Throws for a length that is not whole blocks, or when libgcrypt fails.
    ///
    /// The corresponding C function is `cgcrypt_cbc_decrypt`.
    static func cbcDecrypt(_ key: AESKey, _ bytes: [UInt8], ciphertext: Range<Int>, iv: Range<Int>) throws(FileKeyringError) -> SecureBuffer? {
        let plaintext = SecureBuffer(count: ciphertext.count)
        let length = bytes.withUnsafeBufferPointer { all in
            plaintext.withUnsafeMutableBytes { out in
                cgcrypt_cbc_decrypt(key.key, all.baseAddress.map { $0 + iv.lowerBound }, iv.count,
                                    all.baseAddress.map { $0 + ciphertext.lowerBound }, ciphertext.count,
                                    out.baseAddress?.assumingMemoryBound(to: UInt8.self))
            }
        }
        switch length {
        case Int(CGCRYPT_CBC_BAD_PADDING): return nil
        case Int(CGCRYPT_CBC_MALFORMED): throw FileKeyringError(.cryptoFailure, "an item's encrypted data is not whole AES blocks")
        case ..<0: throw FileKeyringError(.cryptoFailure, "libgcrypt could not decrypt an item")
        default: return plaintext.slice(0..<length)
        }
    }

    // MARK: Random bytes

    /// `count` bytes from libgcrypt's CSPRNG at `GCRY_STRONG_RANDOM` (salts, temporary file names;
    /// IVs come from `cbcEncrypt`). libgcrypt terminates the process rather than return weak bytes.
    ///
    /// The corresponding C function is `gcry_randomize`.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { gcry_randomize(base, raw.count, GCRY_STRONG_RANDOM) }
        }
        return bytes
    }

    // MARK: Errors

    /// The one place a `gcry_error_t` becomes a Swift error.
    ///
    /// The corresponding C function is `gcry_strerror`.
    private static func check(_ error: gcry_error_t, _ operation: String) throws(FileKeyringError) {
        guard error != 0 else { return }
        let message = gcry_strerror(error).map { String(cString: $0) } ?? "unknown libgcrypt error"
        throw FileKeyringError(.cryptoFailure, "libgcrypt could not \(operation): \(message)")
    }
}
