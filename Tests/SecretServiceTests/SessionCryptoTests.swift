import Foundation
import Testing
import Gcrypt
import DBusTransport
@testable import SecretService

/// The transport encryption of dh-ietf1024-sha256-aes128-cbc-pkcs7 sessions, without D-Bus:
/// checked against values computed independently (Python's int pow, hmac and the `cryptography`
/// package), and at its edges.
@Suite("Session crypto: Diffie-Hellman, HKDF and AES-128-CBC as the specification has them")
struct SessionCryptoTests {
    /// Our private exponent in the known-answer test: the bytes 1...32.
    static let exponent = [UInt8](1...32)
    /// 2^0xC0FFEE mod p: the provider's public key.
    static let peer = hex("""
        35e81548c5e74b165f31a6ad8b90ff6dc544f56aae61a80331f345ccde31fcf76eb0371d170fe889f3d78ac63650086a\
        e0c8f19d59edab6ad3397d45627e965e9eccdd1089691cbdd4589180fc99486eba2fe60b6d782985674a4decb31b4078\
        c6ca5d603b1f4937ad045df93f2d22a50641d4302165f4f7649999cddf6eba96
        """)
    /// 2^exponent mod p.
    static let ourPublic = hex("""
        457120764f3a1e6fd58103e41a4093a6c8bc1d97cb8759de41c21afdd2d3048a5ef3d88ce24aa6ba4fe30bcfb0b0f75a\
        bf1a8aeaff3723f1bf53740c902005e1199fabad7c538e94a7034fd585339a02f3634893f748929d2a7257643e398130\
        541ae64124c17d4507a97f1cbebeb7b933642b8df479eb59e36cfeffbf1671dd
        """)
    /// "token ✓ for KAT", PKCS#7-padded and encrypted with AES-128-CBC under
    /// HKDF-SHA256(peer^exponent mod p as 128 bytes) (key 28355107a9ad5dbd564544a19333b601), IV 0...15.
    static let ciphertext = hex("74d76519fb21f9dc22e2ced70a729572108023ae861c4baf8577ff9315135930")
    static let iv = Data(0..<16)

    @Test func theKeyPairAndTheSessionKeyMatchAnIndependentImplementation() throws {
        let pair = try #require(DHPair(privateExponent: Self.exponent))
        #expect(pair.publicKeyData == Self.ourPublic)
        let key = try derivedKey(pair, Self.peer)
        let plaintext = Self.ciphertext.withUnsafeBytes { ciphertext in
            Self.iv.withUnsafeBytes { key.decrypt(ciphertext, iv: $0) }
        }
        #expect(plaintext == Data("token ✓ for KAT".utf8))
    }

    @Test func anotherKeyDoesNotDecryptTheSecret() throws {
        var other = Self.exponent
        other[other.count - 1] += 1  // the exponent + 1: its wrong-key decryption ends in 0x88
        let key = try derivedKey(try #require(DHPair(privateExponent: other)), Self.peer)
        let plaintext = Self.ciphertext.withUnsafeBytes { ciphertext in
            Self.iv.withUnsafeBytes { key.decrypt(ciphertext, iv: $0) }
        }
        #expect(plaintext == nil)
    }

    @Test func twoRandomPairsAgreeAndSecretsOfEveryLengthRoundTrip() throws {
        let (ours, theirs) = try agreeingKeys()
        for length in [0, 1, 15, 16, 17, 31, 32, 1000, 4096] {
            let secret = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            let (iv, ciphertext) = try #require(ours.encrypt(secret))
            #expect(iv.count == 16)
            #expect(ciphertext.count == (length / 16 + 1) * 16, "PKCS#7 always adds 1 to 16 bytes")
            #expect(ciphertext != secret.prefix(ciphertext.count))
            let decrypted = ciphertext.withUnsafeBytes { c in iv.withUnsafeBytes { theirs.decrypt(c, iv: $0) } }
            #expect(decrypted == secret, "length \(length)")
        }
    }

    @Test func eachEncryptionHasItsOwnIV() throws {
        let (ours, _) = try agreeingKeys()
        let first = try #require(ours.encrypt(Data("same".utf8)))
        let second = try #require(ours.encrypt(Data("same".utf8)))
        #expect(first.iv != second.iv)
        #expect(first.ciphertext != second.ciphertext)
    }

    @Test func malformedCiphertextsAreRefused() throws {
        let (ours, theirs) = try agreeingKeys()
        let (iv, ciphertext) = try #require(ours.encrypt(Data("secret".utf8)))
        func decrypt(_ c: Data, _ v: Data) -> Data? { c.withUnsafeBytes { c in v.withUnsafeBytes { theirs.decrypt(c, iv: $0) } } }
        #expect(decrypt(ciphertext, iv) == Data("secret".utf8))
        #expect(decrypt(ciphertext, iv.prefix(15)) == nil, "an IV of 15 bytes")
        #expect(decrypt(ciphertext.prefix(15), iv) == nil, "not whole blocks")
        #expect(decrypt(Data(), iv) == nil, "no ciphertext")
    }

    /// The public key is sent as 128 bytes even when its value is shorter: KWallet refuses a
    /// shorter one, and libsecret sends one about once in 256 sessions.
    @Test func aShortPublicKeyIsPaddedTo128Bytes() throws {
        let pair = try #require(DHPair(privateExponent: [0x03, 0xE8]))  // 2^1000 < p: 126 bytes long
        let key = pair.publicKeyData
        #expect(key.count == 128)
        #expect(key.prefix(2) == Data([0, 0]))
        #expect(key[2] == 0x01 && key.dropFirst(3).allSatisfy { $0 == 0 })
    }

    /// With the exponent 1 the shared secret is the peer's key itself: one that starts with a
    /// zero byte is the case providers encode in two ways, and no session key comes out of it.
    @Test func aSharedSecretStartingWithZeroIsRefused() throws {
        let pair = try #require(DHPair(privateExponent: [1]))
        var peer = Data(repeating: 0xAB, count: 128)
        peer[0] = 0
        guard case .ambiguous = pair.derive(peerKey: bytesVariant(peer)) else {
            Issue.record("a shared secret with a leading zero byte must not give a key")
            return
        }
        // The same value without its leading zero byte is the same number.
        guard case .ambiguous = pair.derive(peerKey: bytesVariant(peer.dropFirst())) else {
            Issue.record("the encoding of the peer's key must not matter")
            return
        }
    }

    @Test func peerKeysOutOfRangeAreRefusedAndLeadingZerosAccepted() throws {
        let pair = try #require(DHPair())
        let prime = hex("""
            ffffffffffffffffc90fdaa22168c234c4c6628b80dc1cd129024e088a67cc74020bbea63b139b22514a08798e3404dd\
            ef9519b3cd3a431b302b0a6df25f14374fe1356d6d51c245e485b576625e7ec6f44c42e9a637ed6b0bff5cb6f406b7ed\
            ee386bfb5a899fa5ae9f24117c4b1fe649286651ece65381ffffffffffffffff
            """)
        var primeMinusOne = prime
        primeMinusOne[127] -= 1
        for invalid in [Data(), Data([0]), Data([1]), Data(repeating: 0, count: 128), primeMinusOne, prime,
                        Data(repeating: 0xFF, count: 128), Data(repeating: 1, count: 600)] {
            guard case .invalidPeerKey = pair.derive(peerKey: bytesVariant(invalid)) else {
                Issue.record("a peer key of \(invalid.count) bytes starting \(invalid.prefix(2).map { $0 }) must be refused")
                continue
            }
        }
        // KWallet sends 127 to 129 bytes: the value is what counts.
        for valid in [Data([0]) + Self.peer, Self.peer] {
            guard case .derived = pair.derive(peerKey: bytesVariant(valid)) else {
                if case .ambiguous = pair.derive(peerKey: bytesVariant(valid)) { continue }  // 1 in 256
                Issue.record("a valid peer key of \(valid.count) bytes was refused")
                continue
            }
        }
    }

    // MARK: Helpers

    private func derivedKey(_ pair: DHPair, _ peer: Data) throws -> SessionKey {
        guard case .derived(let key) = pair.derive(peerKey: bytesVariant(peer)) else {
            throw TestFailure("no session key")
        }
        return key
    }

    /// Two random pairs and the key each derives from the other's public key (new pairs when the
    /// shared secret is one of the 1 in 256 that are refused).
    private func agreeingKeys() throws -> (SessionKey, SessionKey) {
        for _ in 0..<8 {
            let ours = try #require(DHPair()), theirs = try #require(DHPair())
            #expect(ours.publicKey.count == 128)
            if case .derived(let a) = ours.derive(peerKey: bytesVariant(theirs.publicKeyData)),
               case .derived(let b) = theirs.derive(peerKey: bytesVariant(ours.publicKeyData)) {
                return (a, b)
            }
        }
        throw TestFailure("eight key exchanges in a row were refused")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

private func bytesVariant(_ bytes: Data) -> Variant { Variant(retaining: Argument.bytes(bytes).build()) }

private func hex(_ text: String) -> Data {
    let digits = Array(text.utf8)
    return Data(stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! })
}
