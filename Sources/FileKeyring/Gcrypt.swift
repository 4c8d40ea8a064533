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

    // MARK: AES-128-CBC

    /// An open AES-128-CBC handle, closed (and its key schedule wiped) when it goes away.
    struct Cipher: ~Copyable {
        fileprivate let handle: gcry_cipher_hd_t

        /// The corresponding C function is `gcry_cipher_close`.
        deinit { gcry_cipher_close(handle) }
    }

    /// Opens an AES-128-CBC handle. (libsecret opens `GCRY_CIPHER_AES256` but gives it the 16-byte
    /// key, which libgcrypt runs as AES-128: see FORMAT.md.)
    ///
    /// The corresponding C function is `gcry_cipher_open`.
    static func cipherOpen() throws(FileKeyringError) -> Cipher {
        var handle: gcry_cipher_hd_t?
        let error = gcry_cipher_open(&handle, Int32(GCRY_CIPHER_AES.rawValue), Int32(GCRY_CIPHER_MODE_CBC.rawValue), 0)
        try check(error, "open AES-128-CBC")
        guard let handle else { throw FileKeyringError(.cryptoFailure, "libgcrypt returned no cipher handle") }
        return Cipher(handle: handle)
    }

    /// Sets the AES key (16 bytes).
    ///
    /// The corresponding C function is `gcry_cipher_setkey`.
    static func cipherSetKey(_ cipher: borrowing Cipher, _ key: SecureBuffer) throws(FileKeyringError) {
        let error = key.withUnsafeBytes { gcry_cipher_setkey(cipher.handle, $0.baseAddress, $0.count) }
        try check(error, "set the AES key")
    }

    /// Sets the CBC initialisation vector (16 bytes).
    ///
    /// The corresponding C function is `gcry_cipher_setiv`.
    static func cipherSetIV(_ cipher: borrowing Cipher, _ iv: [UInt8]) throws(FileKeyringError) {
        let error = iv.withUnsafeBytes { gcry_cipher_setiv(cipher.handle, $0.baseAddress, $0.count) }
        try check(error, "set the AES IV")
    }

    /// Encrypts all of `buffer` in place (its length must be a multiple of 16).
    ///
    /// The corresponding C function is `gcry_cipher_encrypt`.
    static func cipherEncrypt(_ cipher: borrowing Cipher, inPlace buffer: SecureBuffer) throws(FileKeyringError) {
        let error = buffer.withUnsafeMutableBytes { gcry_cipher_encrypt(cipher.handle, $0.baseAddress, $0.count, nil, 0) }
        try check(error, "encrypt an item")
    }

    /// Decrypts all of `buffer` in place (its length must be a multiple of 16).
    ///
    /// The corresponding C function is `gcry_cipher_decrypt`.
    static func cipherDecrypt(_ cipher: borrowing Cipher, inPlace buffer: SecureBuffer) throws(FileKeyringError) {
        let error = buffer.withUnsafeMutableBytes { gcry_cipher_decrypt(cipher.handle, $0.baseAddress, $0.count, nil, 0) }
        try check(error, "decrypt an item")
    }

    // MARK: Random bytes

    /// `count` bytes from libgcrypt's CSPRNG at `GCRY_STRONG_RANDOM` (salts and IVs; libsecret uses
    /// `gcry_create_nonce` for both). libgcrypt terminates the process rather than return weak bytes.
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
