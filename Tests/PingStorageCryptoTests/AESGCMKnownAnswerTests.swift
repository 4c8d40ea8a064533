import Foundation
import PingStorageCrypto
import Testing

/// One published AES-256-GCM test vector (96-bit IV, 128-bit tag).
struct GCMVector: CustomTestStringConvertible, Sendable {
    let name: String
    let key: String
    let iv: String
    let plaintext: String
    let aad: String
    let ciphertext: String
    let tag: String

    var testDescription: String { name }
}

/// AES-256 vectors with 96-bit IVs from
/// - McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", revised 2005, Appendix B, test
///   cases 13–16 (17 and 18 use 64- and 480-bit IVs, which the envelope never uses), and
/// - NIST CAVP `gcmEncryptExtIV256.rsp` (Keylen 256, IVlen 96, Taglen 128, Count 0 of each group).
let gcmVectors: [GCMVector] = [
    GCMVector(
        name: "McGrew-Viega 13: empty plaintext, no AAD",
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        iv: "000000000000000000000000", plaintext: "", aad: "", ciphertext: "",
        tag: "530f8afbc74536b9a963b4f1c4cb738b"),
    GCMVector(
        name: "McGrew-Viega 14: one zero block",
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        iv: "000000000000000000000000", plaintext: "00000000000000000000000000000000", aad: "",
        ciphertext: "cea7403d4d606b6e074ec5d3baf39d18", tag: "d0d1c8a799996bf0265b98b5d48ab919"),
    GCMVector(
        name: "McGrew-Viega 15: four blocks, no AAD",
        key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
        iv: "cafebabefacedbaddecaf888",
        plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
            + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
        aad: "",
        ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
            + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
        tag: "b094dac5d93471bdec1a502270e3cc6c"),
    GCMVector(
        name: "McGrew-Viega 16: partial block with 20 bytes of AAD",
        key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
        iv: "cafebabefacedbaddecaf888",
        plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
            + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
        aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
        ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
            + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
        tag: "76fc6ece0f4e1768cddf8853bb2d551b"),
    GCMVector(
        name: "NIST CAVP PTlen=0 AADlen=0",
        key: "b52c505a37d78eda5dd34f20c22540ea1b58963cf8e5bf8ffa85f9f2492505b4",
        iv: "516c33929df5a3284ff463d7", plaintext: "", aad: "", ciphertext: "",
        tag: "bdc1ac884d332457a1d2664f168c76f0"),
    GCMVector(
        name: "NIST CAVP PTlen=0 AADlen=128 (empty plaintext with AAD)",
        key: "78dc4e0aaf52d935c3c01eea57428f00ca1fd475f5da86a49c8dd73d68c8e223",
        iv: "d79cf22d504cc793c3fb6c8a", plaintext: "", aad: "b96baa8c1c75a671bfb2d08d06be5f36",
        ciphertext: "", tag: "3e5d486aa2e30b22e040b85723a06e76"),
    GCMVector(
        name: "NIST CAVP PTlen=128 AADlen=128",
        key: "92e11dcdaa866f5ce790fd24501f92509aacf4cb8b1339d50c9c1240935dd08b",
        iv: "ac93a1a6145299bde902f21a", plaintext: "2d71bcfa914e4ac045b2aa60955fad24",
        aad: "1e0889016f67601c8ebea4943bc23ad6",
        ciphertext: "8995ae2e6df3dbf96fac7b7137bae67f", tag: "eca5aa77d51d4a0a14d9c51e1da474ab"),
]

@Suite("AES-256-GCM known answers")
struct AESGCMKnownAnswerTests {
    @Test("seal reproduces the published ciphertext and tag", arguments: gcmVectors)
    func sealMatchesVector(_ vector: GCMVector) throws {
        let key = try SymmetricKey(data: Data(hex: vector.key))
        let sealed = try AESGCM.seal(
            Data(hex: vector.plaintext), key: key, nonce: Data(hex: vector.iv), associatedData: Data(hex: vector.aad))
        #expect(sealed.ciphertext.hex == vector.ciphertext)
        #expect(sealed.tag.hex == vector.tag)
    }

    @Test("open recovers the published plaintext", arguments: gcmVectors)
    func openMatchesVector(_ vector: GCMVector) throws {
        let key = try SymmetricKey(data: Data(hex: vector.key))
        let plaintext = try AESGCM.open(
            Data(hex: vector.ciphertext), tag: Data(hex: vector.tag), key: key, nonce: Data(hex: vector.iv),
            associatedData: Data(hex: vector.aad))
        #expect(plaintext.hex == vector.plaintext)
    }

    @Test("open rejects the vector with any tag bit flipped", arguments: gcmVectors)
    func openRejectsModifiedTag(_ vector: GCMVector) throws {
        let key = try SymmetricKey(data: Data(hex: vector.key))
        let tag = Data(hex: vector.tag)
        for bit in 0..<(tag.count * 8) {
            var modified = tag
            modified[bit / 8] ^= UInt8(1) << (bit % 8)
            #expect(throws: EnvelopeError.authenticationFailed) {
                try AESGCM.open(
                    Data(hex: vector.ciphertext), tag: modified, key: key, nonce: Data(hex: vector.iv),
                    associatedData: Data(hex: vector.aad))
            }
        }
    }

    @Test("open rejects the vector with the AAD changed or dropped")
    func openRejectsModifiedAAD() throws {
        let vector = gcmVectors[3]
        let key = try SymmetricKey(data: Data(hex: vector.key))
        var aad = Data(hex: vector.aad)
        aad[0] ^= 0x80
        for candidate in [aad, Data()] {
            #expect(throws: EnvelopeError.authenticationFailed) {
                try AESGCM.open(
                    Data(hex: vector.ciphertext), tag: Data(hex: vector.tag), key: key, nonce: Data(hex: vector.iv),
                    associatedData: candidate)
            }
        }
    }

    @Test("a failed open zeroes the output buffer it was given")
    func failedOpenZeroesOutput() throws {
        let vector = gcmVectors[2]
        let key = try SymmetricKey(data: Data(hex: vector.key)), nonce = Data(hex: vector.iv)
        let ciphertext = Data(hex: vector.ciphertext)
        var tag = Data(hex: vector.tag)
        tag[0] ^= 1
        var output = [UInt8](repeating: 0xAA, count: ciphertext.count)
        let result = nonce.withUnsafeBytes { nonce in
            ciphertext.withUnsafeBytes { ciphertext in
                tag.withUnsafeBytes { tag in
                    output.withUnsafeMutableBytes { out in
                        AESGCM.open(
                            key: key.aesKey, nonce: nonce, aad: UnsafeRawBufferPointer(start: nil, count: 0),
                            ciphertext: ciphertext, tag: tag, plaintext: out)
                    }
                }
            }
        }
        #expect(throws: EnvelopeError.authenticationFailed) { try result.get() }
        #expect(output.allSatisfy { $0 == 0 }, "unauthenticated plaintext left in the buffer")
    }
}
