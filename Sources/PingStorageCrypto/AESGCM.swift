#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
package import Gcrypt

/// AES-256-GCM with a 96-bit nonce and a 128-bit tag, over the package's one AES key type
/// (the Gcrypt module's `AESKey`).
///
/// Package-level: ``Envelope`` is the public way to encrypt. The `Data` entry points take an
/// explicit nonce so known-answer tests can check the cipher against published vectors; production
/// code must never choose nonces itself (``Envelope`` draws a fresh one from the CSPRNG each time).
package enum AESGCM {
    /// Nonce length in bytes (96 bits).
    package static let nonceByteCount = 12
    /// Tag length in bytes (128 bits).
    package static let tagByteCount = 16

    // MARK: Core (raw buffers; sizes checked by the callers)

    /// Encrypts `plaintext` into `ciphertext` (same length) and writes the tag into `tag`.
    /// Fails with ``EnvelopeError/cryptoUnavailable`` unless ``CryptoLibrary/isAvailable`` (which
    /// initialises libgcrypt on first use).
    package static func seal(
        key: AESKey, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        plaintext: UnsafeRawBufferPointer,
        ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) -> Result<Void, EnvelopeError> {
        guard CryptoLibrary.isAvailable else { return .failure(.cryptoUnavailable) }
        return sealInitialized(key: key, nonce: nonce, aad: aad, plaintext: plaintext, ciphertext: ciphertext, tag: tag)
    }

    /// ``seal(key:nonce:aad:plaintext:ciphertext:tag:)`` for callers that know libgcrypt is
    /// initialised: the library's own self-test, which runs inside that initialisation.
    private static func sealInitialized(
        key: AESKey, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        plaintext: UnsafeRawBufferPointer,
        ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) -> Result<Void, EnvelopeError> {
        precondition(key.bytes.count == SymmetricKey.byteCount && nonce.count == nonceByteCount)
        precondition(tag.count == tagByteCount && ciphertext.count == plaintext.count)
        do throws(GcryptError) {
            try key.gcmSeal(nonce: nonce, aad: aad, plaintext: plaintext, ciphertext: ciphertext, tag: tag)
            return .success(())
        } catch {
            return .failure(EnvelopeError(gcrypt: error))
        }
    }

    /// Decrypts `ciphertext` into `plaintext` (same length) and verifies `tag`. On any failure
    /// `plaintext` has been zeroed: unauthenticated plaintext never survives. Fails with
    /// ``EnvelopeError/cryptoUnavailable`` unless ``CryptoLibrary/isAvailable``.
    package static func open(
        key: AESKey, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
        plaintext: UnsafeMutableRawBufferPointer
    ) -> Result<Void, EnvelopeError> {
        guard CryptoLibrary.isAvailable else {
            zeroize(plaintext)
            return .failure(.cryptoUnavailable)
        }
        return openInitialized(key: key, nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, plaintext: plaintext)
    }

    /// ``open(key:nonce:aad:ciphertext:tag:plaintext:)`` for the self-test (see ``sealInitialized``).
    private static func openInitialized(
        key: AESKey, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
        plaintext: UnsafeMutableRawBufferPointer
    ) -> Result<Void, EnvelopeError> {
        precondition(key.bytes.count == SymmetricKey.byteCount && nonce.count == nonceByteCount)
        precondition(tag.count == tagByteCount && ciphertext.count == plaintext.count)
        do throws(GcryptError) {
            // gcmOpen wipes `plaintext` itself when it fails.
            try key.gcmOpen(nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, plaintext: plaintext)
            return .success(())
        } catch {
            return .failure(EnvelopeError(gcrypt: error))
        }
    }

    // MARK: Data entry points for tests

    /// Encrypts with an explicit nonce. For known-answer tests only.
    ///
    /// - Throws: ``EnvelopeError/cryptoUnavailable``, ``EnvelopeError/libraryFailure(operation:code:message:)``;
    ///   a precondition failure if `nonce` is not 12 bytes.
    package static func seal(
        _ plaintext: Data, key: SymmetricKey, nonce: Data, associatedData: Data
    ) throws -> (ciphertext: Data, tag: Data) {
        try CryptoLibrary.requireAvailable()
        precondition(nonce.count == nonceByteCount, "AES-GCM nonces here are 96 bits")
        var ciphertext = Data(count: plaintext.count)
        var tag = Data(count: tagByteCount)
        let result = nonce.withUnsafeBytes { nonceBytes in
            associatedData.withUnsafeBytes { aadBytes in
                plaintext.withUnsafeBytes { plaintextBytes in
                    ciphertext.withUnsafeMutableBytes { ciphertextBytes in
                        tag.withUnsafeMutableBytes { tagBytes in
                            seal(
                                key: key.aesKey, nonce: nonceBytes, aad: aadBytes, plaintext: plaintextBytes,
                                ciphertext: ciphertextBytes, tag: tagBytes)
                        }
                    }
                }
            }
        }
        try result.get()
        return (ciphertext, tag)
    }

    /// Decrypts and verifies with an explicit nonce. For known-answer tests only.
    ///
    /// - Throws: ``EnvelopeError/authenticationFailed`` when the tag does not verify (or is not 16
    ///   bytes), ``EnvelopeError/cryptoUnavailable``; a precondition failure if `nonce` is not 12 bytes.
    package static func open(
        _ ciphertext: Data, tag: Data, key: SymmetricKey, nonce: Data, associatedData: Data
    ) throws -> Data {
        try CryptoLibrary.requireAvailable()
        precondition(nonce.count == nonceByteCount, "AES-GCM nonces here are 96 bits")
        guard tag.count == tagByteCount else { throw EnvelopeError.authenticationFailed }
        var plaintext = Data(count: ciphertext.count)
        let result = nonce.withUnsafeBytes { nonceBytes in
            associatedData.withUnsafeBytes { aadBytes in
                ciphertext.withUnsafeBytes { ciphertextBytes in
                    tag.withUnsafeBytes { tagBytes in
                        plaintext.withUnsafeMutableBytes { plaintextBytes in
                            open(
                                key: key.aesKey, nonce: nonceBytes, aad: aadBytes, ciphertext: ciphertextBytes,
                                tag: tagBytes, plaintext: plaintextBytes)
                        }
                    }
                }
            }
        }
        try result.get()
        return plaintext
    }

    // MARK: Self-test

    /// Runs McGrew–Viega GCM test case 16 (AES-256, 96-bit IV, 20 bytes of AAD, 60 bytes of
    /// plaintext) through ``seal(key:nonce:aad:plaintext:ciphertext:tag:)`` and
    /// ``open(key:nonce:aad:ciphertext:tag:plaintext:)`` (their unchecked cores), and checks that a
    /// modified tag is rejected. Returns nil on success or what went wrong. Called during library
    /// initialisation, so it must not touch ``CryptoLibrary``.
    static func selfTest() -> String? {
        let key = hexBytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = hexBytes("cafebabefacedbaddecaf888")
        let aad = hexBytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let plaintext = hexBytes(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let expected = hexBytes(
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                + "76fc6ece0f4e1768cddf8853bb2d551b")

        let keyBytes = key.withUnsafeBytes { SecretBytes(copying: $0) }
        let aesKey = AESKey(keyBytes)
        var sealed = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        let sealResult = withBuffers(nonce, aad, plaintext) { nonce, aad, plaintext in
            sealed.withUnsafeMutableBytes { out in
                sealInitialized(
                    key: aesKey, nonce: nonce, aad: aad, plaintext: plaintext,
                    ciphertext: UnsafeMutableRawBufferPointer(rebasing: out[0..<plaintext.count]),
                    tag: UnsafeMutableRawBufferPointer(rebasing: out[plaintext.count...]))
            }
        }
        if case .failure(let error) = sealResult { return "seal: \(error)" }
        if sealed != expected { return "seal produced the wrong ciphertext or tag" }

        for corruptTag in [false, true] {
            var input = sealed
            if corruptTag { input[input.count - 1] ^= 1 }
            var opened = [UInt8](repeating: 0, count: plaintext.count)
            let openResult = withBuffers(nonce, aad, input) { nonce, aad, input in
                opened.withUnsafeMutableBytes { out in
                    openInitialized(
                        key: aesKey, nonce: nonce, aad: aad,
                        ciphertext: UnsafeRawBufferPointer(rebasing: input[0..<out.count]),
                        tag: UnsafeRawBufferPointer(rebasing: input[out.count...]), plaintext: out)
                }
            }
            switch (corruptTag, openResult) {
            case (false, .failure(let error)): return "open: \(error)"
            case (false, .success): if opened != plaintext { return "open produced the wrong plaintext" }
            case (true, .success): return "a modified tag was accepted"
            case (true, .failure(.authenticationFailed)): break
            case (true, .failure(let error)): return "open of a modified tag: \(error)"
            }
        }
        return nil
    }

    /// Calls `body` with read-only views of three arrays.
    private static func withBuffers<R>(
        _ a: [UInt8], _ b: [UInt8], _ c: [UInt8],
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> R
    ) -> R {
        a.withUnsafeBytes { a in b.withUnsafeBytes { b in c.withUnsafeBytes { c in body(a, b, c) } } }
    }

    private static func hexBytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!
        }
    }
}
