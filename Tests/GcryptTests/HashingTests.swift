import Testing

@testable import Gcrypt

@Suite("Hashing")
struct HashingTests {
    @Test("a digest held inline is SHA-256: the same bytes as the array form, equal only for equal input")
    func inlineDigestIsSHA256() {
        let abc = Array("abc".utf8)
        let expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        let array = abc.withUnsafeBytes { Hashing.sha256($0) }
        #expect(array.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() == expected)

        let digest = abc.withUnsafeBytes { Hashing.sha256Digest($0) }
        let digestBytes = withUnsafeBytes(of: digest) { Array($0) }
        #expect(digestBytes == array)
        #expect(digest == Array("abc".utf8).withUnsafeBytes { Hashing.sha256Digest($0) })
        #expect(digest != Array("abd".utf8).withUnsafeBytes { Hashing.sha256Digest($0) })
        #expect(Set([digest, digest]).count == 1)
    }
}
