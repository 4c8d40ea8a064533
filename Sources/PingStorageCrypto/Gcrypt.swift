internal import CGcrypt

// The thin layer over libgcrypt: one internal wrapper per C call, all in this file. Raw libgcrypt
// types (`gcry_cipher_hd_t`, `gcry_error_t`) do not leave it; every wrapper that can fail returns a
// `Result` whose failure is already an `EnvelopeError`, mapped in one place (`EnvelopeError(gcrypt:)`).
// Callers hand in buffers whose sizes they have checked; the wrappers check every `gcry_error_t`.

/// The libgcrypt entry points PingStorageCrypto uses.
enum Gcrypt {
    // MARK: Random numbers

    /// How unpredictable random bytes must be.
    enum RandomLevel {
        /// Session keys, nonces, identifiers: `GCRY_STRONG_RANDOM`.
        case strong
        /// Long-term keys: `GCRY_VERY_STRONG_RANDOM`.
        case veryStrong
    }

    /// Fills `buffer` from libgcrypt's CSPRNG. libgcrypt cannot fail here: if its entropy source
    /// fails it terminates the process rather than return weak bytes.
    ///
    /// The corresponding C function is `gcry_randomize`.
    static func randomize(_ buffer: UnsafeMutableRawBufferPointer, level: RandomLevel) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        switch level {
        case .strong: gcry_randomize(base, buffer.count, GCRY_STRONG_RANDOM)
        case .veryStrong: gcry_randomize(base, buffer.count, GCRY_VERY_STRONG_RANDOM)
        }
    }

    // MARK: Hashing

    /// SHA-256 of `input` into `digest` (32 bytes).
    ///
    /// The corresponding C function is `gcry_md_hash_buffer`.
    static func sha256(_ input: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer) {
        precondition(digest.count == 32)
        gcry_md_hash_buffer(Int32(GCRY_MD_SHA256.rawValue), digest.baseAddress, input.baseAddress, input.count)
    }

    // MARK: AES-256-GCM cipher handles

    /// Opens an AES-256-GCM handle, runs `body` with it and closes it whatever happens.
    ///
    /// The corresponding C functions are `gcry_cipher_open` and `gcry_cipher_close` (which wipes the
    /// handle's key schedule before freeing it).
    static func withAES256GCM<T>(
        _ body: (OpaquePointer) -> Result<T, EnvelopeError>
    ) -> Result<T, EnvelopeError> {
        var handle: gcry_cipher_hd_t?
        let error = gcry_cipher_open(
            &handle, Int32(GCRY_CIPHER_AES256.rawValue), Int32(GCRY_CIPHER_MODE_GCM.rawValue), 0)
        if error != 0 { return .failure(EnvelopeError(gcrypt: error, operation: "open an AES-256-GCM cipher")) }
        guard let handle else {
            return .failure(.libraryFailure(
                operation: "open an AES-256-GCM cipher", code: 0, message: "no handle returned"))
        }
        defer { gcry_cipher_close(handle) }
        return body(handle)
    }

    /// Sets the cipher key.
    ///
    /// The corresponding C function is `gcry_cipher_setkey`.
    static func cipherSetKey(_ handle: OpaquePointer, _ key: UnsafeRawBufferPointer) -> Result<Void, EnvelopeError> {
        check(gcry_cipher_setkey(handle, key.baseAddress, key.count), "set the AES key")
    }

    /// Sets the GCM nonce (IV).
    ///
    /// The corresponding C function is `gcry_cipher_setiv`.
    static func cipherSetIV(_ handle: OpaquePointer, _ nonce: UnsafeRawBufferPointer) -> Result<Void, EnvelopeError> {
        check(gcry_cipher_setiv(handle, nonce.baseAddress, nonce.count), "set the GCM nonce")
    }

    /// Feeds additional authenticated data. Must come before any encryption or decryption.
    /// Nothing is passed to libgcrypt for empty data (GCM treats that as no AAD).
    ///
    /// The corresponding C function is `gcry_cipher_authenticate`.
    static func cipherAuthenticate(_ handle: OpaquePointer, _ aad: UnsafeRawBufferPointer) -> Result<Void, EnvelopeError> {
        guard let base = aad.baseAddress, aad.count > 0 else { return .success(()) }
        return check(gcry_cipher_authenticate(handle, base, aad.count), "authenticate associated data")
    }

    /// Encrypts `input` into `output` (same length). Nothing is passed for empty input.
    ///
    /// The corresponding C function is `gcry_cipher_encrypt`.
    static func cipherEncrypt(
        _ handle: OpaquePointer, into output: UnsafeMutableRawBufferPointer, from input: UnsafeRawBufferPointer
    ) -> Result<Void, EnvelopeError> {
        precondition(output.count == input.count, "GCM output must be as long as its input")
        guard let inBase = input.baseAddress, let outBase = output.baseAddress, input.count > 0 else {
            return .success(())
        }
        return check(gcry_cipher_encrypt(handle, outBase, output.count, inBase, input.count), "encrypt")
    }

    /// Decrypts `input` into `output` (same length). Nothing is passed for empty input. The output
    /// is not authenticated until ``cipherCheckTag(_:_:)`` succeeds.
    ///
    /// The corresponding C function is `gcry_cipher_decrypt`.
    static func cipherDecrypt(
        _ handle: OpaquePointer, into output: UnsafeMutableRawBufferPointer, from input: UnsafeRawBufferPointer
    ) -> Result<Void, EnvelopeError> {
        precondition(output.count == input.count, "GCM output must be as long as its input")
        guard let inBase = input.baseAddress, let outBase = output.baseAddress, input.count > 0 else {
            return .success(())
        }
        return check(gcry_cipher_decrypt(handle, outBase, output.count, inBase, input.count), "decrypt")
    }

    /// Finalises GCM and writes the authentication tag (its length is `tag.count`).
    ///
    /// The corresponding C function is `gcry_cipher_gettag`.
    static func cipherGetTag(_ handle: OpaquePointer, into tag: UnsafeMutableRawBufferPointer) -> Result<Void, EnvelopeError> {
        check(gcry_cipher_gettag(handle, tag.baseAddress, tag.count), "compute the GCM tag")
    }

    /// Finalises GCM and compares the computed tag with `tag` in constant time. A mismatch is
    /// ``EnvelopeError/authenticationFailed``.
    ///
    /// The corresponding C function is `gcry_cipher_checktag`.
    static func cipherCheckTag(_ handle: OpaquePointer, _ tag: UnsafeRawBufferPointer) -> Result<Void, EnvelopeError> {
        check(gcry_cipher_checktag(handle, tag.baseAddress, tag.count), "check the GCM tag")
    }

    // MARK: Errors

    private static func check(_ error: gcry_error_t, _ operation: String) -> Result<Void, EnvelopeError> {
        error == 0 ? .success(()) : .failure(EnvelopeError(gcrypt: error, operation: operation))
    }
}

extension EnvelopeError {
    /// The one place a `gcry_error_t` becomes a Swift error. A tag mismatch is an authentication
    /// failure; everything else is reported with libgcrypt's own (static, secret-free) message.
    ///
    /// The corresponding C functions are `gcry_err_code` and `gcry_strerror`.
    init(gcrypt error: gcry_error_t, operation: String) {
        let code = gcry_err_code(error)
        switch code {
        case GPG_ERR_CHECKSUM:
            self = .authenticationFailed
        default:
            let message = gcry_strerror(error).map { String(cString: $0) } ?? "unknown libgcrypt error"
            self = .libraryFailure(operation: operation, code: code.rawValue, message: message)
        }
    }
}
