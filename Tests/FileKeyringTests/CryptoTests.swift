import Foundation
import Testing

@testable import FileKeyring
import Gcrypt

/// Known answers computed independently (Python's hashlib, hmac and `cryptography`, i.e. OpenSSL,
/// with GLib's own GVariant serializer for the file), not by this module or libgcrypt.
@Suite struct CryptoTests {
    init() throws { try #require(Libgcrypt.unavailabilityReason == nil) }

    @Test("PBKDF2-HMAC-SHA256 with 16 bytes of output (RFC 7914 §11's first vector, truncated)")
    func pbkdf2Vector() throws {
        let key = try KeyringKey(master: FileKeyringSecret(utf8: "passwd"), salt: Array("salt".utf8), iterations: 1)
        #expect(hex(key.bytes.withSpan { span in (0..<span.count).map { span[$0] } }) == "55ac046e56e3089fec1691c22544b605")
    }

    @Test("the key of a keyring: 100000 iterations, 32-byte salt")
    func keyringKey() throws {
        let key = try KeyringKey(master: FileKeyringSecret(utf8: "hunter22"), salt: Array(0..<32), iterations: 100_000)
        #expect(hex(key.bytes.withSpan { span in (0..<span.count).map { span[$0] } }) == "70e7a1fb29a0bf07e74e305e5435ae09")
    }

    @Test("HMAC-SHA256 (RFC 4231 test case 2)")
    func hmacVector() throws {
        let jefe = SecretBytes(copying: Array("Jefe".utf8))
        let message = Array("what do ya want for nothing?".utf8)
        let mac = try message.withUnsafeBytes { try Hashing.hmacSHA256(key: jefe, $0) }
        #expect(hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    /// The first block is NIST's; the second is the PKCS#7 padding block (Python's `cryptography`).
    @Test("AES-128-CBC with PKCS#7 (NIST SP 800-38A F.2.1 key, IV and first block)")
    func aesVector() throws {
        let key = AESKey(SecretBytes(copying: bytes(hex: "2b7e151628aed2a6abf7158809cf4f3c")))
        let blob = bytes(hex: "7649abac8119b246cee98e9b12e9197d8964e0b149c10b7b682e6e39aaeb731c"
                              + "000102030405060708090a0b0c0d0e0f")
        func decrypt(_ blob: [UInt8]) throws -> SecretBytes {
            try blob.withUnsafeBytes {
                try key.cbcDecrypt(UnsafeRawBufferPointer(rebasing: $0[0..<32]), iv: UnsafeRawBufferPointer(rebasing: $0[32..<48]))
            }
        }
        let plaintext = try decrypt(blob)
        #expect(hex(plaintext.withSpan { span in (0..<span.count).map { span[$0] } }) == "6bc1bee22e409f96e93d7e117393172a")
        let (iv, ciphertext) = try plaintext.withUnsafeBytes { try key.cbcEncrypt($0) }
        #expect(ciphertext.count == 32)
        #expect(try decrypt(ciphertext + iv).constantTimeEquals(plaintext))
    }

    /// A whole keyring file made in Python (salt 00…1f, 100000 iterations, master "hunter22", IV
    /// 64…73): one item, label "L", attributes service=s account=a, secret "s3cret", created
    /// 1700000000, modified 1700000001; file modified 1700000002, usage count 1.
    static let knownFile =
        "476e6f6d654b657972696e670a0d000a010020000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        + "a086010002f1536500000000010000006163636f756e74001eb64206760f77a949917a03d71686cb23262c80ed42e7a540396ec8e7"
        + "2950130873657276696365004817461235b40960d3a729b8c85df6672d39adeeb4f67c1fba70eb55a5dcd16e0829528e41d184b61e"
        + "3ecd702727225d22b69ac0d806df0ac3e6fca14ff15ed1bab0080c7a879d5958c1d1ab8312d2001ae124275717c491e56275b00f29"
        + "ae5472f2f26465666768696a6b6c6d6e6f7071727305ad6e797c311b09eb8872ddad7ffdf2dfdfb94a513c6ade214fefa9640aaf70"
        + "54c524"

    @Test("a keyring file made independently decrypts to the expected item")
    func knownAnswerFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.path("default.keyring")
        try writeBytes(bytes(hex: Self.knownFile), to: path)
        let items = try makeKeyring(path).items()
        #expect(items.count == 1)
        let item = try #require(items.first)
        #expect(item.label == "L")
        #expect(item.attributes == ["service": "s", "account": "a"])
        #expect(secretText(item.secret) == "s3cret")
        #expect(item.created == 1_700_000_000 && item.modified == 1_700_000_001)
        let file = try KeyringFile(parsing: readBytes(path), path: path)
        #expect(file.salt == Array(0..<32) && file.iterations == 100_000)
        #expect(file.modified == 1_700_000_002 && file.usageCount == 1)
    }

    @Test("sealed items open again; a flipped bit anywhere in the blob fails the MAC")
    func sealAndTamper() throws {
        let key = try KeyringKey(master: FileKeyringSecret(utf8: "k"), salt: [1, 2, 3], iterations: 10)
        for size in [0, 1, 15, 16, 17, 100] {
            let plaintext = SecretBytes(copying: (0..<size).map { UInt8($0) })
            let blob = try key.seal(plaintext)
            #expect(blob.count == (size / 16 + 1) * 16 + 16 + 32)
            let opened = try #require(try key.open(blob, path: "t"))
            #expect(opened.constantTimeEquals(plaintext))
            for index in stride(from: 0, to: blob.count, by: 7) {
                var bad = blob
                bad[index] ^= 0x01
                #expect(try key.open(bad, path: "t") == nil)
            }
        }
        // A good MAC over bad PKCS#7 padding (a buggy writer): corrupt, not a wrong secret. The
        // blocks are 5 × 15 then 0, 17 or 2, encrypted without padding under this key (its bytes
        // are 71b6e274cf1039b59fe07cc9bc3ec068) and the IV 09 × 16 by Python's `cryptography`.
        #expect(hex(key.bytes.withSpan { span in (0..<span.count).map { span[$0] } }) == "71b6e274cf1039b59fe07cc9bc3ec068")
        for encrypted in ["d41f944bed36ed75b098fd27b690b064", "465858ba65bf9a69422dd6fdcda4995c", "a116b84efe535baa0f316b1f7e8ae123"] {
            var blob = bytes(hex: encrypted) + [UInt8](repeating: 9, count: 16)
            blob += try key.mac(blob, 0..<blob.count)
            let error = #expect(throws: FileKeyringError.self) { try key.open(blob, path: "t") }
            #expect(error?.code == .corruptFile)
        }
        let other = try KeyringKey(master: FileKeyringSecret(utf8: "other"), salt: [1, 2, 3], iterations: 10)
        #expect(try other.open(try key.seal(SecretBytes(copying: [1, 2, 3])), path: "t") == nil)
    }
}
