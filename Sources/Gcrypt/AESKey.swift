internal import CGcrypt
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An AES key in secret memory (``SecretBytes``), and the ciphers the package runs with it:
/// AES-128-CBC with PKCS#7 padding (the Secret Service's sessions and libsecret's file keyring,
/// CGcrypt's aes_cbc.c) and AES-256-GCM (PingStorageCrypto's envelopes).
///
/// Each operation opens its own libgcrypt cipher handle and closes it (which wipes its key
/// schedule) before returning, so one key may be used by any number of threads at once.
/// `Sendable`: the key bytes never change after `init`.
package final class AESKey: Sendable {
    /// The key's bytes (16 for CBC, 32 for GCM).
    package let bytes: SecretBytes

    /// A key over `bytes`, which must be 16, 24 or 32 bytes long (its users' lengths are fixed by
    /// their formats, so another length is a programming error).
    package init(_ bytes: SecretBytes) {
        precondition([16, 24, 32].contains(bytes.count), "\(bytes.count) bytes is not an AES key length")
        self.bytes = bytes
    }

    // MARK: AES-128-CBC with PKCS#7 padding

    /// The length of a CBC initialisation vector.
    package static let cbcIVByteCount = Int(CGCRYPT_CBC_IV_BYTES)

    /// `plaintext` padded and encrypted under a fresh random IV. The only copy of the plaintext
    /// made is encrypted in place (and wiped if encryption fails).
    /// - Throws: ``GcryptError/Kind/malformed`` unless the key is 16 bytes; ``GcryptError/Kind/failed``.
    ///
    /// The corresponding C function is `cgcrypt_cbc_encrypt`.
    package func cbcEncrypt(_ plaintext: UnsafeRawBufferPointer) throws(GcryptError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        Libgcrypt.prepare()
        try requireCBCKey()
        var iv = [UInt8](repeating: 0, count: Self.cbcIVByteCount)
        var ciphertext = [UInt8](repeating: 0, count: cgcrypt_cbc_padded_length(plaintext.count))
        let encrypted = bytes.withUnsafeBytes { key in
            iv.withUnsafeMutableBufferPointer { ivBytes in
                ciphertext.withUnsafeMutableBufferPointer { out in
                    cgcrypt_cbc_encrypt(key.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), plaintext.count,
                                        ivBytes.baseAddress, out.baseAddress)
                }
            }
        }
        guard encrypted == 1 else { throw GcryptError(.failed, operation: "encrypt with AES-CBC", message: "libgcrypt failed") }
        return (iv, ciphertext)
    }

    /// The plaintext of `ciphertext` under `iv`, in secret memory.
    /// - Throws: ``GcryptError/Kind/badPadding`` (another key, or altered data),
    ///   ``GcryptError/Kind/malformed`` (an IV that is not 16 bytes, a length that is not whole
    ///   blocks, a key that is not 16 bytes), ``GcryptError/Kind/failed``.
    ///
    /// The corresponding C function is `cgcrypt_cbc_decrypt`.
    package func cbcDecrypt(_ ciphertext: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer) throws(GcryptError) -> SecretBytes {
        Libgcrypt.prepare()
        try requireCBCKey()
        var length = 0
        let padded = SecretBytes(count: ciphertext.count) { (out: UnsafeMutableRawBufferPointer) in
            length = bytes.withUnsafeBytes { key in
                cgcrypt_cbc_decrypt(key.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                    iv.baseAddress?.assumingMemoryBound(to: UInt8.self), iv.count,
                                    ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self), ciphertext.count,
                                    out.baseAddress?.assumingMemoryBound(to: UInt8.self))
            }
        }
        let operation = "decrypt with AES-CBC"
        switch length {
        case Int(CGCRYPT_CBC_BAD_PADDING): throw GcryptError(.badPadding, operation: operation, message: "the padding is invalid")
        case Int(CGCRYPT_CBC_MALFORMED):
            throw GcryptError(.malformed, operation: operation, message: "the IV is not 16 bytes or the data not whole blocks")
        case ..<0: throw GcryptError(.failed, operation: operation, message: "libgcrypt failed")
        default: return length == padded.count ? padded : padded.slice(0..<length)
        }
    }

    private func requireCBCKey() throws(GcryptError) {
        guard bytes.count == Int(CGCRYPT_AES_KEY_BYTES) else {
            throw GcryptError(.malformed, operation: "use an AES-128 key", message: "the key is \(bytes.count) bytes, not 16")
        }
    }

    // MARK: AES-256-GCM

    /// Encrypts `plaintext` into `ciphertext` (same length) under `nonce`, authenticating `aad`
    /// too, and writes the tag (its length is `tag.count`). Nothing is passed to libgcrypt for
    /// empty AAD or plaintext.
    ///
    /// The corresponding C functions are `gcry_cipher_setiv`, `gcry_cipher_authenticate`,
    /// `gcry_cipher_encrypt` and `gcry_cipher_gettag`.
    package func gcmSeal(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
        ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws(GcryptError) {
        Libgcrypt.prepare()
        precondition(ciphertext.count == plaintext.count, "GCM output must be as long as its input")
        try withGCM(nonce: nonce, aad: aad) { handle throws(GcryptError) in
            if let input = plaintext.baseAddress, let output = ciphertext.baseAddress, plaintext.count > 0 {
                try GcryptError.check(gcry_cipher_encrypt(handle, output, ciphertext.count, input, plaintext.count), "encrypt")
            }
            try GcryptError.check(gcry_cipher_gettag(handle, tag.baseAddress, tag.count), "compute the GCM tag")
        }
    }

    /// Decrypts `ciphertext` into `plaintext` (same length) and checks `tag` in constant time. On
    /// any failure `plaintext` has been wiped: unauthenticated plaintext never survives.
    /// - Throws: ``GcryptError/Kind/authenticationFailed`` when the tag does not verify.
    ///
    /// The corresponding C functions are `gcry_cipher_setiv`, `gcry_cipher_authenticate`,
    /// `gcry_cipher_decrypt` and `gcry_cipher_checktag`.
    package func gcmOpen(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer, plaintext: UnsafeMutableRawBufferPointer
    ) throws(GcryptError) {
        Libgcrypt.prepare()
        precondition(ciphertext.count == plaintext.count, "GCM output must be as long as its input")
        do throws(GcryptError) {
            try withGCM(nonce: nonce, aad: aad) { handle throws(GcryptError) in
                if let input = ciphertext.baseAddress, let output = plaintext.baseAddress, ciphertext.count > 0 {
                    try GcryptError.check(gcry_cipher_decrypt(handle, output, plaintext.count, input, ciphertext.count), "decrypt")
                }
                try GcryptError.check(gcry_cipher_checktag(handle, tag.baseAddress, tag.count), "check the GCM tag")
            }
        } catch {
            if let base = plaintext.baseAddress { explicit_bzero(base, plaintext.count) }
            throw error
        }
    }

    /// Opens an AES-GCM handle keyed with this key, `nonce` and `aad`, runs `body` with it and
    /// closes it whatever happens.
    ///
    /// The corresponding C functions are `gcry_cipher_open`, `gcry_cipher_setkey`,
    /// `gcry_cipher_setiv`, `gcry_cipher_authenticate` and `gcry_cipher_close` (which wipes the
    /// handle's key schedule before freeing it).
    private func withGCM(
        nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, _ body: (OpaquePointer) throws(GcryptError) -> Void
    ) throws(GcryptError) {
        let algorithm = bytes.count == 32 ? GCRY_CIPHER_AES256 : bytes.count == 24 ? GCRY_CIPHER_AES192 : GCRY_CIPHER_AES  // AES-128 (GCRY_CIPHER_AES128 is a macro)
        var handle: gcry_cipher_hd_t?
        try GcryptError.check(gcry_cipher_open(&handle, Int32(algorithm.rawValue), Int32(GCRY_CIPHER_MODE_GCM.rawValue), 0),
                              "open an AES-GCM cipher")
        guard let handle else { throw GcryptError(.failed, operation: "open an AES-GCM cipher", message: "no handle returned") }
        defer { gcry_cipher_close(handle) }
        try GcryptError.check(bytes.withUnsafeBytes { gcry_cipher_setkey(handle, $0.baseAddress, $0.count) }, "set the AES key")
        try GcryptError.check(gcry_cipher_setiv(handle, nonce.baseAddress, nonce.count), "set the GCM nonce")
        if let base = aad.baseAddress, aad.count > 0 {
            try GcryptError.check(gcry_cipher_authenticate(handle, base, aad.count), "authenticate associated data")
        }
        try body(handle)
    }
}
