internal import Gcrypt

// The keyring's cryptography (FORMAT.md: "Key derivation", "Hashed attributes", "Item blob"),
// composed from the package's one libgcrypt layer (the Gcrypt module). No raw pointers here.

/// The 16-byte key derived from the master secret and the file's salt: the AES-128 key and the
/// HMAC-SHA256 key at once, as in libsecret (`do_derive_key`) and oo7 (`crypto::derive_key`). Its
/// bytes are in secret memory (locked, left out of core dumps, wiped when released).
///
/// `Sendable`: immutable after `init`.
final class KeyringKey: Sendable {
    static let length = 16
    static let ivLength = AESKey.cbcIVByteCount
    static let macLength = Hashing.sha256ByteCount
    static let blockLength = 16

    /// The key, for AES-128-CBC (libsecret opens `GCRY_CIPHER_AES256` but gives it the 16-byte
    /// key, which libgcrypt runs as AES-128: see FORMAT.md) and as the HMAC key.
    private let aes: AESKey
    /// The salt and iteration count it was derived with (to reuse it for the same file).
    let salt: [UInt8]
    let iterations: UInt32

    /// The key's 16 bytes.
    var bytes: SecretBytes { aes.bytes }

    /// PBKDF2-HMAC-SHA256(master, salt, iterations) → 16 bytes.
    init(master: FileKeyringSecret, salt: [UInt8], iterations: UInt32) throws(FileKeyringError) {
        do throws(GcryptError) {
            aes = try AESKey(Hashing.pbkdf2SHA256(master.buffer, salt: salt, iterations: iterations, count: Self.length))
        } catch {
            throw FileKeyringError(gcrypt: error)
        }
        self.salt = salt
        self.iterations = iterations
    }

    /// HMAC-SHA256 with this key over `bytes[range]`.
    func mac(_ bytes: [UInt8], _ range: Range<Int>) throws(FileKeyringError) -> [UInt8] {
        try Self.checked(bytes.withUnsafeBytes { raw in
            Result { () throws(GcryptError) in try Hashing.hmacSHA256(key: self.bytes, UnsafeRawBufferPointer(rebasing: raw[range])) }
        })
    }

    /// Whether `expected[expectedRange]` is the HMAC of `bytes[range]` (constant-time compare).
    func verifyMAC(_ bytes: [UInt8], _ range: Range<Int>, expected: [UInt8], _ expectedRange: Range<Int>) throws(FileKeyringError) -> Bool {
        guard expectedRange.count == Self.macLength else { return false }
        return try Self.checked(bytes.withUnsafeBytes { raw in
            expected.withUnsafeBytes { wanted in
                Result { () throws(GcryptError) in
                    try Hashing.verifyHMACSHA256(key: self.bytes, UnsafeRawBufferPointer(rebasing: raw[range]),
                                                 expected: UnsafeRawBufferPointer(rebasing: wanted[expectedRange]))
                }
            }
        })
    }

    /// The hashed form of an attribute value: HMAC-SHA256(key, UTF-8 bytes of `value`).
    func hashAttribute(_ value: String) throws(FileKeyringError) -> [UInt8] {
        let bytes = Array(value.utf8)
        return try mac(bytes, 0..<bytes.count)
    }

    /// Encrypts a serialized item: PKCS#7 padding, AES-128-CBC with a fresh IV, then
    /// `ciphertext ‖ IV ‖ HMAC(ciphertext ‖ IV)`. `plaintext` is not changed.
    func seal(_ plaintext: SecretBytes) throws(FileKeyringError) -> [UInt8] {
        let (iv, ciphertext) = try Self.checked(plaintext.withUnsafeBytes { raw in
            Result { () throws(GcryptError) in try aes.cbcEncrypt(raw) }
        })
        var blob = ciphertext
        blob += iv
        blob += try mac(blob, 0..<blob.count)
        return blob
    }

    /// Checks and decrypts a blob made by ``seal(_:)`` (or libsecret, or oo7) and returns the
    /// serialized item without padding, in secret memory, or nil when the MAC does not verify
    /// (wrong key or altered data). A blob of impossible length, or bad padding after a good MAC,
    /// is corrupt.
    func open(_ blob: [UInt8], path: String) throws(FileKeyringError) -> SecretBytes? {
        guard Self.hasPossibleLength(blob) else {
            throw .corrupt("an item's encrypted data has an impossible length of \(blob.count) bytes", path: path)
        }
        let macStart = blob.count - Self.macLength
        let ivStart = macStart - Self.ivLength
        guard try verifyMAC(blob, 0..<macStart, expected: blob, macStart..<blob.count) else { return nil }
        let plaintext = blob.withUnsafeBytes { raw in
            Result { () throws(GcryptError) in
                try aes.cbcDecrypt(UnsafeRawBufferPointer(rebasing: raw[0..<ivStart]),
                                   iv: UnsafeRawBufferPointer(rebasing: raw[ivStart..<macStart]))
            }
        }
        if case .failure(let error) = plaintext, error.kind == .badPadding {
            throw .corrupt("an item's padding is invalid", path: path)
        }
        return try Self.checked(plaintext)
    }

    /// Whether `blob` can be `ciphertext ‖ IV ‖ MAC`: at least one cipher block, whole blocks.
    static func hasPossibleLength(_ blob: [UInt8]) -> Bool {
        let ciphertext = blob.count - macLength - ivLength
        return ciphertext >= blockLength && ciphertext % blockLength == 0
    }

    /// The success of `result`, or its libgcrypt failure as a file keyring error.
    private static func checked<R>(_ result: Result<R, GcryptError>) throws(FileKeyringError) -> R {
        switch result {
        case .success(let value): return value
        case .failure(let error): throw FileKeyringError(gcrypt: error)
        }
    }
}

extension FileKeyringError {
    /// The one place a libgcrypt failure becomes a file keyring error: libgcrypt failed, or could
    /// not be used (not a wrong secret, which the MAC check reports).
    init(gcrypt error: GcryptError) {
        self.init(.cryptoFailure, error.kind == .unavailable ? error.message : error.description)
    }
}
