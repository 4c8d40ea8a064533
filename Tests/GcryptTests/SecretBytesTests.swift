import Testing

@testable import Gcrypt

/// The secret-memory container on its own: sizes, copies, bounds, sharing of pages, and the wipe
/// on release. (That its pages are left out of core dumps is checked from /proc/self/smaps in
/// FileKeyringTests, on the file keyring's own secrets.)
@Suite struct SecretBytesTests {
    @Test("bytes written by the initialiser or the writer read back; slices copy; empty is allowed")
    func contents() {
        let raw = SecretBytes(count: 5) { (buffer: UnsafeMutableRawBufferPointer) in buffer.copyBytes(from: [1, 2, 3, 4, 5]) }
        #expect((0..<5).map { raw[$0] } == [1, 2, 3, 4, 5])
        let written = SecretBytes(count: 6) { (writer: inout SecretBytes.Writer) in
            writer.write([9], at: 0)
            writer.write(raw, at: 1)
        }
        #expect(written.withSpan { span in (0..<span.count).map { span[$0] } } == [9, 1, 2, 3, 4, 5])
        #expect(written.slice(1..<6).constantTimeEquals(raw))
        #expect(!written.constantTimeEquals(raw))
        #expect(SecretBytes(copying: [UInt8]()).count == 0)
        #expect(SecretBytes(copying: [0, 0]).constantTimeEquals(SecretBytes(count: 2) { (_: UnsafeMutableRawBufferPointer) in }))
    }

    @Test("a failing initialiser releases its slot: the error comes out, nothing is left behind")
    func throwingInitialiser() {
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            _ = try SecretBytes(count: 16) { (_: UnsafeMutableRawBufferPointer) throws(Refused) in throw Refused() }
        }
    }

    @Test("small secrets share a page, one slot each; a large one has pages of its own")
    func pages() {
        let page = UInt(SecretPages.pageSize)
        var small: [SecretBytes] = []
        for _ in 0..<8 { small.append(SecretBytes(copying: [UInt8](repeating: 7, count: 16))) }
        let addresses = small.map(address)
        #expect(Set(addresses).count == 8, "each secret has its own slot")
        #expect(Set(addresses.map { $0 / page }).count < 8, "small secrets share pages")
        let large = SecretBytes(count: SecretPages.pageSize + 1) { (_: UnsafeMutableRawBufferPointer) in }
        #expect(address(large) % page == 0)
        #expect(SecretBytes.liveAllocations.contains { $0.contains(address(large)) && $0.count == 2 * Int(page) })
        for secret in small + [large] {
            #expect(SecretBytes.liveAllocations.contains { $0.contains(address(secret)) })
        }
    }

    @Test("a released secret is wiped in place before its slot is reused")
    func wipedOnRelease() throws {
        // Keep a neighbour alive on the same page, so the page stays mapped and can be read after
        // the secret is gone.
        let neighbour = SecretBytes(copying: [UInt8](repeating: 1, count: 20))
        var others: [SecretBytes] = []
        var secret: SecretBytes? = SecretBytes(copying: [UInt8](repeating: 0xA5, count: 20))
        while address(secret!) / UInt(SecretPages.pageSize) != address(neighbour) / UInt(SecretPages.pageSize) {
            others.append(secret!)
            try #require(others.count < 256, "no slot on the neighbour's page")
            secret = SecretBytes(copying: [UInt8](repeating: 0xA5, count: 20))
        }
        let slot = try #require(UnsafeRawPointer(bitPattern: address(secret!)))
        #expect(slot.load(fromByteOffset: 0, as: UInt8.self) == 0xA5)
        secret = nil
        #expect((0..<20).allSatisfy { slot.load(fromByteOffset: $0, as: UInt8.self) == 0 })
        withExtendedLifetime((neighbour, others)) {}
    }

    @Test("libgcrypt is usable here, and said so once for every user")
    func libgcryptIsAvailable() {
        #expect(Libgcrypt.unavailabilityReason == nil)
        #expect(Libgcrypt.version != nil)
    }

    private func address(_ secret: SecretBytes) -> UInt {
        secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
    }
}
