#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
internal import Gcrypt

/// Apple's ECIES for P-256 keys (`SecKeyCreateEncryptedData` with the `eciesEncryption…X963SHA256AESGCM`
/// algorithms), the format ``SecuredKey`` reads and writes:
///
/// 1. a fresh ephemeral P-256 key pair; ECDH of its private key with the recipient's public key
///    (cofactor and standard ECDH are the same on P-256, whose cofactor is 1) gives Z, the shared
///    x-coordinate (32 bytes);
/// 2. ANSI X9.63 KDF with SHA-256: SHA-256(Z ‖ 00 00 00 01 ‖ ephemeral public key, uncompressed, 65
///    bytes) = 32 bytes; the first 16 are the AES-128 key (Apple uses AES-128 for keys of 256 bits
///    or fewer); the IV is the last 16 for the `VariableIV` variants, 16 zero bytes for the others;
/// 3. AES-128-GCM without associated data, a 16-byte tag;
/// 4. output = ephemeral public key (65 bytes) ‖ ciphertext ‖ tag (16 bytes).
///
/// Checked against a ciphertext made by `SecKeyCreateEncryptedData` on Apple's platform
/// (Tests/TPMTests/ECIESTests). Stateless; any thread.
enum ECIES {
    /// Whether the IV comes from the KDF (the `VariableIV` algorithms) or is zero.
    struct Variant: Equatable {
        let variableIV: Bool
    }

    static let ephemeralKeyByteCount = P256.pointByteCount
    static let keyByteCount = 16
    static let ivByteCount = 16
    static let tagByteCount = 16

    /// The variant of `algorithm`; nil for an algorithm this format does not cover.
    static func variant(of algorithm: SecKeyAlgorithm) -> Variant? {
        switch algorithm {
        case .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, .eciesEncryptionStandardVariableIVX963SHA256AESGCM:
            Variant(variableIV: true)
        case .eciesEncryptionCofactorX963SHA256AESGCM, .eciesEncryptionStandardX963SHA256AESGCM:
            Variant(variableIV: false)
        default:
            nil
        }
    }

    /// Encrypts `plaintext` to `publicKey` (uncompressed P-256 point).
    /// - Throws: `GcryptError` when the key is not a point on P-256 or libgcrypt fails.
    static func seal(_ plaintext: Data, to publicKey: [UInt8], variant: Variant) throws -> Data {
        let (ephemeral, shared) = try P256.ephemeralAgreement(with: publicKey)
        let (key, iv) = derive(sharedX: shared, ephemeralPublic: ephemeral, variant: variant)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        try iv.withUnsafeBytes { iv in
            try plaintext.withUnsafeBytes { plaintext in
                try ciphertext.withUnsafeMutableBytes { ciphertext in
                    try tag.withUnsafeMutableBytes { tag in
                        try key.gcmSeal(nonce: iv, aad: UnsafeRawBufferPointer(start: nil, count: 0), plaintext: plaintext,
                                        ciphertext: ciphertext, tag: tag)
                    }
                }
            }
        }
        return Data(ephemeral + ciphertext + tag)
    }

    /// Decrypts what ``seal(_:to:variant:)`` (or Apple's `SecKeyCreateEncryptedData`) made, with
    /// `agree` giving Z for the ephemeral public key (the recipient's private-key half of ECDH);
    /// nil when the data is too short, `agree` fails, or the tag does not verify (another key,
    /// changed data, another variant).
    static func open(_ data: Data, variant: Variant, agree: ([UInt8]) -> SecretBytes?) -> Data? {
        openSecret(data, variant: variant, agree: agree)?.withUnsafeBytes { Data($0) }
    }

    /// ``open(_:variant:agree:)`` into secret memory (locked, wiped when released): for plaintexts
    /// that are keys.
    static func openSecret(_ data: Data, variant: Variant, agree: ([UInt8]) -> SecretBytes?) -> SecretBytes? {
        let bytes = [UInt8](data)
        guard bytes.count >= ephemeralKeyByteCount + tagByteCount, bytes[0] == 0x04 else { return nil }
        let ephemeral = Array(bytes[..<ephemeralKeyByteCount])
        let ciphertext = bytes[ephemeralKeyByteCount..<(bytes.count - tagByteCount)]
        let tag = bytes[(bytes.count - tagByteCount)...]
        guard let shared = agree(ephemeral) else { return nil }
        let (key, iv) = derive(sharedX: shared, ephemeralPublic: ephemeral, variant: variant)
        guard let plaintext = try? SecretBytes(count: ciphertext.count, initialize: { (out: UnsafeMutableRawBufferPointer) throws in
            try iv.withUnsafeBytes { iv in
                try ciphertext.withUnsafeBytes { ciphertext in
                    try tag.withUnsafeBytes { tag in
                        try key.gcmOpen(nonce: iv, aad: UnsafeRawBufferPointer(start: nil, count: 0), ciphertext: ciphertext, tag: tag, plaintext: out)
                    }
                }
            }
        }) else { return nil }
        return plaintext
    }

    /// X9.63 KDF with SHA-256 over Z with the ephemeral public key as shared info: the AES-128 key
    /// and the IV of `variant`.
    static func derive(sharedX: SecretBytes, ephemeralPublic: [UInt8], variant: Variant) -> (key: AESKey, iv: [UInt8]) {
        let counter: [UInt8] = [0, 0, 0, 1]
        var digest = SecretBytes(count: sharedX.count + counter.count + ephemeralPublic.count) { (input: inout SecretBytes.Writer) in
            input.write(sharedX, at: 0)
            input.write(counter, at: sharedX.count)
            input.write(ephemeralPublic, at: sharedX.count + counter.count)
        }.withUnsafeBytes { Hashing.sha256($0) }
        defer { digest.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        let key = AESKey(SecretBytes(copying: digest[..<keyByteCount]))
        let iv = variant.variableIV ? Array(digest[keyByteCount..<(keyByteCount + ivByteCount)]) : [UInt8](repeating: 0, count: ivByteCount)
        return (key, iv)
    }
}
