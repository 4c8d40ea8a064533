import Foundation
import PingStorageCrypto
import Testing

@Suite("Crypto library, keys and key IDs")
struct KeyTests {
    @Test("libgcrypt is available and recent enough")
    func libraryAvailable() throws {
        #expect(CryptoLibrary.isAvailable)
        #expect(CryptoLibrary.unavailabilityReason == nil)
        let version = try #require(CryptoLibrary.version)
        let parts = version.split(separator: ".").compactMap { Int($0) }
        let minimum = CryptoLibrary.minimumVersion.split(separator: ".").compactMap { Int($0) }
        #expect(parts.lexicographicallyPrecedes(minimum) == false, "libgcrypt \(version) < \(CryptoLibrary.minimumVersion)")
        // Who initialised libgcrypt is decided once per process: checked in processes of their own
        // (IntegrationTests/GcryptInitializationTests), not here.
    }

    @Test("a key survives export and import")
    func keyExportImport() throws {
        let key = try SymmetricKey.generate()
        let exported = key.exportData()
        #expect(exported.count == 32)
        let imported = try SymmetricKey(data: exported)
        #expect(imported.exportData() == exported)
        imported.withUnsafeBytes { #expect(Data($0) == exported) }
        // The imported key opens what the original sealed.
        let keyID = try KeyID.generate()
        let envelope = try Envelope.seal(Data("token".utf8), key: key, keyID: keyID, associatedData: Data())
        #expect(try Envelope.open(envelope, key: imported, associatedData: Data()) == Data("token".utf8))
    }

    @Test("importing from a Data slice copies the right bytes")
    func keyImportFromSlice() throws {
        let bytes = Data((0..<40).map { UInt8($0) })
        let key = try SymmetricKey(data: bytes[4..<36])
        #expect(key.exportData() == Data((4..<36).map { UInt8($0) }))
    }

    @Test("generated keys and key IDs differ")
    func generatedValuesDiffer() throws {
        let keys = try (0..<32).map { _ in try SymmetricKey.generate().exportData() }
        #expect(Set(keys).count == keys.count)
        #expect(!keys.contains(Data(count: 32)))
        let ids = try (0..<256).map { _ in try KeyID.generate() }
        #expect(Set(ids).count == ids.count)
    }

    @Test("keys of the wrong length are refused", arguments: [0, 1, 16, 31, 33, 64])
    func wrongKeyLength(length: Int) {
        #expect(throws: EnvelopeError.invalidKeyLength(length)) { try SymmetricKey(data: Data(count: length)) }
    }

    @Test("a key never prints its bytes")
    func keyDescriptionRedacted() throws {
        let key = try SymmetricKey(data: Data(repeating: 0xAB, count: 32))
        for text in [key.description, key.debugDescription, String(describing: key), String(reflecting: key)] {
            #expect(!text.lowercased().contains("abab"), "\(text)")
        }
        #expect(key.description == "SymmetricKey(256 bits)")
    }

    @Test("key IDs round-trip through bytes and hex")
    func keyIDForms() throws {
        let bytes = Data((0..<16).map { UInt8($0 * 17) })
        let id = try KeyID(data: bytes)
        #expect(id.data == bytes)
        #expect(id.hexString == "00112233445566778899aabbccddeeff")
        #expect(id.description == id.hexString)
        #expect(KeyID(hexString: id.hexString) == id)
        #expect(KeyID(hexString: id.hexString.uppercased()) == id)
        let random = try KeyID.generate()
        #expect(KeyID(hexString: random.hexString) == random)
        #expect(try KeyID(data: random.data) == random)
    }

    @Test("malformed key IDs are refused")
    func malformedKeyIDs() {
        for text in ["", "00", String(repeating: "0", count: 31), String(repeating: "0", count: 33),
                     String(repeating: "g", count: 32), "0011223344556677 8899aabbccddeef", "é" + String(repeating: "0", count: 30)] {
            #expect(KeyID(hexString: text) == nil, "\(text)")
        }
        for length in [0, 15, 17, 32] {
            #expect(throws: EnvelopeError.invalidKeyIDLength(length)) { try KeyID(data: Data(count: length)) }
        }
    }

    @Test("zeroize clears a buffer")
    func zeroizeClears() {
        var bytes = [UInt8](repeating: 0x5A, count: 100)
        bytes.withUnsafeMutableBytes { zeroize(UnsafeMutableRawBufferPointer(rebasing: $0[10..<90])) }
        #expect(bytes[0..<10].allSatisfy { $0 == 0x5A })
        #expect(bytes[10..<90].allSatisfy { $0 == 0 })
        #expect(bytes[90...].allSatisfy { $0 == 0x5A })
    }
}
