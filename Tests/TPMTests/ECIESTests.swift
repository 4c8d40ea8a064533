import Foundation
import Gcrypt
@testable import PingStorage
import Testing
import TPM

/// SecuredKey's ECIES format, with the recipient's half of ECDH done in software (a known scalar).
@Suite("ECIES (Apple's format, P-256)")
struct ECIESTests {
    /// A private scalar and what encrypts to it (plays the TPM's part).
    struct SoftwareKey {
        let scalar: [UInt8]
        var publicKey: [UInt8] { try! P256.agreement(scalar: scalar, peer: P256.generator).publicPoint }
        func agree(_ ephemeral: [UInt8]) -> SecretBytes? { try? P256.agreement(scalar: scalar, peer: ephemeral).sharedX }
    }

    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
    }

    /// A ciphertext `SecKeyCreateEncryptedData` made on Apple's platform with
    /// `.eciesEncryptionCofactorVariableIVX963SHA256AESGCM` for a P-256 key, and that key: the test
    /// vector "P256-SHA256-VIV" published with jedda/ECIES (MIT), whose plaintext is its name.
    static let appleKey = SoftwareKey(scalar: bytes("71a1c67a6ede41bf9d6e68cc3649f934c542f2fa3329c2710583ea31d5e29d14"))
    static let applePublicKey = bytes("04ce0158c3746a73bd882181d5ec91fa336e399ff9cb9f1cab7b503bb1ce673addf56727c940b5c6b38758d1c8209dedbcb9e5c7203e652b3d49342858e3d34762")
    static let appleCiphertext = Data(bytes("048eac0421b27fdd7a190495dc31cebe61713a6cdb57da6ad3cc1c39d29a7a93f6fd0b5ea63f4cef57589335dfe8ea88b2d0f2c952317e700c7d4a71673a021c36da958473cf086a1f083b2ba44d975176f4f55d2cdb491f8f7cc8949f9685bf"))

    @Test func decryptsWhatApplesSecKeyEncrypted() {
        #expect(Libgcrypt.unavailabilityReason == nil)
        #expect(Self.appleKey.publicKey == Self.applePublicKey, "the scalar is the key's")
        let variant = ECIES.variant(of: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM)!
        let opened = ECIES.open(Self.appleCiphertext, variant: variant, agree: Self.appleKey.agree)
        #expect(opened == Data("P256-SHA256-VIV".utf8))
        // The zero-IV variant derives another IV: the tag does not verify.
        #expect(ECIES.open(Self.appleCiphertext, variant: ECIES.variant(of: .eciesEncryptionCofactorX963SHA256AESGCM)!,
                           agree: Self.appleKey.agree) == nil)
    }

    @Test("round trip, layout and tamper", arguments: [
        SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM, .eciesEncryptionCofactorX963SHA256AESGCM,
        .eciesEncryptionStandardVariableIVX963SHA256AESGCM, .eciesEncryptionStandardX963SHA256AESGCM,
    ])
    func roundTrip(algorithm: SecKeyAlgorithm) throws {
        #expect(Libgcrypt.unavailabilityReason == nil)
        let key = SoftwareKey(scalar: Random.bytes(32))
        let variant = try #require(ECIES.variant(of: algorithm))
        let plaintext = Data("a token of some length, not a multiple of sixteen".utf8)
        let sealed = try ECIES.seal(plaintext, to: key.publicKey, variant: variant)
        #expect(sealed.count == 65 + plaintext.count + 16 && sealed.first == 0x04)
        #expect(ECIES.open(sealed, variant: variant, agree: key.agree) == plaintext)
        #expect(try ECIES.seal(plaintext, to: key.publicKey, variant: variant) != sealed, "a fresh ephemeral key each time")
        var changed = sealed
        changed[70] ^= 1
        #expect(ECIES.open(changed, variant: variant, agree: key.agree) == nil)
        #expect(ECIES.open(sealed.prefix(80), variant: variant, agree: key.agree) == nil)
        let other = SoftwareKey(scalar: Random.bytes(32))
        #expect(ECIES.open(sealed, variant: variant, agree: other.agree) == nil)
        #expect(ECIES.open(Data(), variant: variant, agree: key.agree) == nil)
    }

    @Test func anEmptyPlaintextAndOnlyTheFourAlgorithms() throws {
        #expect(Libgcrypt.unavailabilityReason == nil)
        let key = SoftwareKey(scalar: Random.bytes(32))
        let variant = try #require(ECIES.variant(of: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM))
        let sealed = try ECIES.seal(Data(), to: key.publicKey, variant: variant)
        #expect(sealed.count == 81 && ECIES.open(sealed, variant: variant, agree: key.agree) == Data())
        #expect(ECIES.variant(of: SecKeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV")) == nil)
    }

    @Test func aPublicKeyOffTheCurveIsRefused() {
        #expect(Libgcrypt.unavailabilityReason == nil)
        var offCurve = Self.applePublicKey
        offCurve[64] ^= 1
        #expect(throws: GcryptError.self) { try P256.ephemeralAgreement(with: offCurve) }
        #expect(throws: GcryptError.self) { try P256.ephemeralAgreement(with: [0x04] + [UInt8](repeating: 0, count: 64)) }
        #expect(throws: GcryptError.self) { try P256.ephemeralAgreement(with: Array(Self.applePublicKey.prefix(33))) }
    }

    /// A key's blobs as 2.0.0 kept them (no pin), and pinned to its parent's name (issue 36).
    static let blobs = [TPMKeyBlob(publicArea: [1, 2, 3], privateArea: [4, 5]),
                        TPMKeyBlob(publicArea: [1, 2, 3], privateArea: [4, 5], parentName: [0x00, 0x0b] + [UInt8](repeating: 7, count: 32))]

    @Test(arguments: blobs) func theKeyItemIsReadWithBounds(blob: TPMKeyBlob) {
        let encoded = SecuredKeyItem.encode(blob)
        #expect(encoded.starts(with: Array((blob.parentName == nil ? "PSTPM1" : "PSTPM2").utf8)))
        #expect(SecuredKeyItem.decode(encoded) == blob)
        for count in 0..<encoded.count { #expect(SecuredKeyItem.decode(Array(encoded.prefix(count))) == nil) }
        #expect(SecuredKeyItem.decode(encoded + [0]) == nil)
        #expect(SecuredKeyItem.decode(Array("PSTPM1".utf8) + [0xff, 0xff]) == nil)
        #expect(SecuredKeyItem.decode(Array("PSTPM2".utf8) + [0, 0] + encoded.dropFirst(6)) == nil, "an empty pin")
    }

    /// A bound key item's bytes (SecuredKeyEncryptor's key wrapped to a TPM key) are read with
    /// bounds: the blobs, then exactly one ECIES ciphertext of a 32-byte key.
    @Test(arguments: blobs) func aBoundKeyItemIsReadWithBounds(blob: TPMKeyBlob) throws {
        let wrapped = [0x04] + [UInt8](repeating: 9, count: 64 + 32 + 16)
        let encoded = BoundKey.encode(blob) + wrapped
        #expect(encoded.starts(with: Array((blob.parentName == nil ? "PSBND1" : "PSBND2").utf8)))
        let decoded = try #require(BoundKey.decode(encoded))
        #expect(decoded.0 == blob && decoded.wrapped == wrapped)
        #expect(BoundKey.isBound(bytes: encoded) && !BoundKey.isBound(bytes: [UInt8](repeating: 0, count: 32)))
        for count in 0..<encoded.count { #expect(BoundKey.decode(Array(encoded.prefix(count))) == nil) }
        #expect(BoundKey.decode(encoded + [0]) == nil)
        #expect(BoundKey.decode(BoundKey.encode(blob) + [0x02] + wrapped.dropFirst()) == nil, "not an uncompressed point")
    }
}
