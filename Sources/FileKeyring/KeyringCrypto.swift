// The keyring's cryptography (FORMAT.md: "Key derivation", "Hashed attributes", "Item blob"),
// composed from the libgcrypt wrappers in Gcrypt.swift. No raw pointers here.

/// The 16-byte key derived from the master secret and the file's salt: the AES-128 key and the
/// HMAC-SHA256 key at once, as in libsecret (`do_derive_key`) and oo7 (`crypto::derive_key`).
///
/// Immutable after `init`; `@unchecked Sendable` because `SecureBuffer` is a class, but it is
/// never written after derivation, so concurrent readers are safe.
final class KeyringKey: @unchecked Sendable {
    static let length = 16
    static let ivLength = 16
    static let macLength = 32
    static let blockLength = 16

    let bytes: SecureBuffer
    /// The same 16 bytes as the AES key.
    private let aes: Gcrypt.AESKey
    /// The salt and iteration count it was derived with (to reuse it for the same file).
    let salt: [UInt8]
    let iterations: UInt32

    /// PBKDF2-HMAC-SHA256(master, salt, iterations) → 16 bytes.
    init(master: FileKeyringSecret, salt: [UInt8], iterations: UInt32) throws(FileKeyringError) {
        let key = SecureBuffer(count: Self.length)
        try Gcrypt.pbkdf2SHA256(secret: master.buffer, salt: salt, iterations: iterations, into: key)
        bytes = key
        aes = try Gcrypt.AESKey(key)
        self.salt = salt
        self.iterations = iterations
    }

    /// HMAC-SHA256 with this key over `bytes[range]`.
    func mac(_ bytes: [UInt8], _ range: Range<Int>) throws(FileKeyringError) -> [UInt8] {
        let mac = try Gcrypt.macOpen()
        try Gcrypt.macSetKey(mac, self.bytes)
        try Gcrypt.macWrite(mac, bytes, range)
        return try Gcrypt.macRead(mac)
    }

    /// Whether `expected[expectedRange]` is the HMAC of `bytes[range]` (constant-time compare).
    func verifyMAC(_ bytes: [UInt8], _ range: Range<Int>, expected: [UInt8], _ expectedRange: Range<Int>) throws(FileKeyringError) -> Bool {
        guard expectedRange.count == Self.macLength else { return false }
        let mac = try Gcrypt.macOpen()
        try Gcrypt.macSetKey(mac, self.bytes)
        try Gcrypt.macWrite(mac, bytes, range)
        return try Gcrypt.macVerify(mac, expected, expectedRange)
    }

    /// The hashed form of an attribute value: HMAC-SHA256(key, UTF-8 bytes of `value`).
    func hashAttribute(_ value: String) throws(FileKeyringError) -> [UInt8] {
        let bytes = Array(value.utf8)
        return try mac(bytes, 0..<bytes.count)
    }

    /// Encrypts a serialized item: PKCS#7 padding, AES-128-CBC with a fresh IV, then
    /// `ciphertext ‖ IV ‖ HMAC(ciphertext ‖ IV)`. `plaintext` is not changed.
    func seal(_ plaintext: SecureBuffer) throws(FileKeyringError) -> [UInt8] {
        let (iv, ciphertext) = try Gcrypt.cbcEncrypt(aes, plaintext)
        var blob = ciphertext
        blob += iv
        blob += try mac(blob, 0..<blob.count)
        return blob
    }

    /// Checks and decrypts a blob made by ``seal(_:)`` (or libsecret, or oo7) and returns the
    /// serialized item without padding, or nil when the MAC does not verify (wrong key or altered
    /// data). A blob of impossible length, or bad padding after a good MAC, is corrupt.
    func open(_ blob: [UInt8], path: String) throws(FileKeyringError) -> SecureBuffer? {
        let macStart = blob.count - Self.macLength
        let ivStart = macStart - Self.ivLength
        guard ivStart >= Self.blockLength, ivStart % Self.blockLength == 0 else {
            throw .corrupt("an item's encrypted data has an impossible length of \(blob.count) bytes", path: path)
        }
        guard try verifyMAC(blob, 0..<macStart, expected: blob, macStart..<blob.count) else { return nil }
        guard let plaintext = try Gcrypt.cbcDecrypt(aes, blob, ciphertext: 0..<ivStart, iv: ivStart..<macStart) else {
            throw .corrupt("an item's padding is invalid", path: path)
        }
        return plaintext
    }
}
