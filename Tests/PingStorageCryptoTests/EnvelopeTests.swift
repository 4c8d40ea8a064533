import Foundation
import PingStorageCrypto
import Testing

/// The associated data KeychainStorage will pass: service and account.
private let itemContext = Data("com.pingidentity.test\u{0}ACCESS_TOKEN_STORAGE".utf8)

private func fixedKey() throws -> SymmetricKey { try SymmetricKey(data: Data((0..<32).map { UInt8($0) })) }
private func fixedKeyID() throws -> KeyID { try KeyID(data: Data((0xA0..<0xB0).map { UInt8($0) })) }

@Suite("Envelope format")
struct EnvelopeTests {
    // MARK: Layout

    /// Computed independently with Python's `cryptography` (OpenSSL):
    /// `AESGCM(key).encrypt(nonce, plaintext, header + associatedData)` with header =
    /// `89 50 53 45 01 || keyID || nonce`. Pins the byte layout and the AAD construction.
    @Test("a fixed-nonce envelope matches an independently computed one byte for byte")
    func goldenEnvelope() throws {
        let envelope = try Envelope.seal(
            Data(#"{"accessToken":"abc"}"#.utf8), key: fixedKey(), keyID: fixedKeyID(),
            associatedData: Data("com.pingidentity.test/ACCESS_TOKEN_STORAGE".utf8),
            nonce: Data((0..<12).map { UInt8($0) }))
        #expect(envelope.hex == "8950534501a0a1a2a3a4a5a6a7a8a9aaabacadaeaf000102030405060708090a0b"
            + "3c20b778a680b168d92efceedfcb424fe2b4e4168d" + "de45cd26d036a7334f1fe0900c3cf512")
    }

    @Test("layout constants are as documented")
    func constants() {
        #expect(Envelope.magic == Data([0x89, 0x50, 0x53, 0x45]))
        #expect(Envelope.currentVersion == 1)
        #expect(Envelope.headerByteCount == 33)
        #expect(Envelope.overheadByteCount == 49)
        #expect(Envelope.maximumPlaintextByteCount == 64 << 20)
        #expect(Envelope.maximumEnvelopeByteCount == (64 << 20) + 49)
    }

    @Test("header(of:) reads version and key ID; isEnvelope recognises envelopes only")
    func headerAndDetection() throws {
        let keyID = try KeyID.generate()
        let envelope = try Envelope.seal(Data("x".utf8), key: SymmetricKey.generate(), keyID: keyID, associatedData: itemContext)
        let header = try Envelope.header(of: envelope)
        #expect(header.version == 1)
        #expect(header.keyID == keyID)
        #expect(Envelope.isEnvelope(envelope))
        #expect(!Envelope.isEnvelope(Data(#"{"accessToken":"abc"}"#.utf8)))
        #expect(!Envelope.isEnvelope(Data()))
        #expect(!Envelope.isEnvelope(Envelope.magic.prefix(3)))
    }

    // MARK: Round trips

    @Test("round trip", arguments: [0, 1, 1 << 20])
    func roundTrip(length: Int) throws {
        var generator = SeededGenerator(seed: UInt64(length))
        let plaintext = generator.bytes(length)
        let key = try SymmetricKey.generate()
        let keyID = try KeyID.generate()
        let envelope = try Envelope.seal(plaintext, key: key, keyID: keyID, associatedData: itemContext)
        #expect(envelope.count == length + Envelope.overheadByteCount)
        // Only meaningful for plaintexts long enough not to occur in random bytes by chance
        // (a 1-byte plaintext is somewhere in 49 random bytes about one time in six).
        if length >= 16 {
            #expect(envelope.range(of: plaintext) == nil, "plaintext visible in the envelope")
        }
        #expect(try Envelope.open(envelope, key: key, associatedData: itemContext) == plaintext)
    }

    @Test("every seal uses a fresh nonce")
    func freshNonces() throws {
        let key = try SymmetricKey.generate()
        let keyID = try KeyID.generate()
        let envelopes = try (0..<64).map { _ in
            try Envelope.seal(Data("same".utf8), key: key, keyID: keyID, associatedData: itemContext)
        }
        #expect(Set(envelopes.map { $0[21..<33] }).count == envelopes.count)
        #expect(Set(envelopes).count == envelopes.count)
    }

    @Test("works on Data slices that do not start at index 0")
    func slices() throws {
        let key = try SymmetricKey.generate()
        let envelope = try Envelope.seal(Data("slice".utf8), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        let padded = Data([1, 2, 3]) + envelope + Data([4, 5])
        let slice = padded[3..<(3 + envelope.count)]
        #expect(slice.startIndex == 3)
        #expect(Envelope.isEnvelope(slice))
        #expect(try Envelope.header(of: slice) == Envelope.header(of: envelope))
        let contextSlice = (Data([0]) + itemContext).dropFirst()
        #expect(contextSlice.startIndex == 1)
        #expect(try Envelope.open(slice, key: key, associatedData: contextSlice) == Data("slice".utf8))
        let plaintextSlice = (Data([9]) + Data("in a slice".utf8)).dropFirst()
        let sealed = try Envelope.seal(plaintextSlice, key: key, keyID: KeyID.generate(), associatedData: itemContext)
        #expect(try Envelope.open(sealed, key: key, associatedData: itemContext) == Data("in a slice".utf8))
    }

    @Test("seal and open from many tasks at once")
    func concurrentUse() async throws {
        let key = try SymmetricKey.generate()
        let keyID = try KeyID.generate()
        let (roundTrips, nonces) = try await withThrowingTaskGroup(of: (Int, [Data]).self) { group in
            for task in 0..<8 {
                group.addTask {
                    var good = 0, nonces: [Data] = []
                    for index in 0..<200 {
                        let plaintext = Data("task \(task) message \(index)".utf8)
                        let envelope = try Envelope.seal(plaintext, key: key, keyID: keyID, associatedData: itemContext)
                        if try Envelope.open(envelope, key: key, associatedData: itemContext) == plaintext { good += 1 }
                        nonces.append(envelope[21..<33])
                    }
                    return (good, nonces)
                }
            }
            return try await group.reduce(into: (0, [Data]())) { $0.0 += $1.0; $0.1 += $1.1 }
        }
        #expect(roundTrips == 8 * 200, "every envelope opened to its own plaintext")
        #expect(Set(nonces).count == nonces.count, "no nonce repeated across tasks")
    }

    // MARK: Tampering

    @Test("every single-bit flip is rejected, with the error of the field it hits")
    func everyBitFlipRejected() throws {
        let key = try SymmetricKey.generate()
        let envelope = try Envelope.seal(Data("hello".utf8), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        var rejected = 0
        for bit in 0..<(envelope.count * 8) {
            var modified = envelope
            let byte = bit / 8
            modified[byte] ^= UInt8(1) << (bit % 8)
            let expected: EnvelopeError =
                switch byte {
                case 0..<4: .wrongMagic
                case 4: .unsupportedVersion(modified[4])
                default: .authenticationFailed
                }
            #expect(throws: expected) { try Envelope.open(modified, key: key, associatedData: itemContext) }
            if (try? Envelope.open(modified, key: key, associatedData: itemContext)) == nil { rejected += 1 }
        }
        #expect(rejected == envelope.count * 8)
        #expect(rejected == 54 * 8)
    }

    @Test("truncation to every shorter length is rejected")
    func everyTruncationRejected() throws {
        let key = try SymmetricKey.generate()
        let envelope = try Envelope.seal(
            Data("a plaintext of some length".utf8), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        for length in 0..<envelope.count {
            let truncated = envelope.prefix(length)
            let expected: EnvelopeError =
                length < Envelope.overheadByteCount
                ? .truncated(length: length, minimum: Envelope.overheadByteCount) : .authenticationFailed
            #expect(throws: expected) { try Envelope.open(truncated, key: key, associatedData: itemContext) }
            if length < Envelope.overheadByteCount {
                #expect(throws: expected) { try Envelope.header(of: truncated) }
            }
        }
    }

    @Test("appending bytes is rejected")
    func extensionRejected() throws {
        let key = try SymmetricKey.generate()
        let envelope = try Envelope.seal(Data("x".utf8), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        for suffix in [Data([0]), Data(repeating: 0xFF, count: 16)] {
            #expect(throws: EnvelopeError.authenticationFailed) {
                try Envelope.open(envelope + suffix, key: key, associatedData: itemContext)
            }
        }
    }

    @Test("different associated data (another account) is rejected")
    func wrongAssociatedData() throws {
        let key = try SymmetricKey.generate()
        let envelope = try Envelope.seal(Data("token".utf8), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        let others = [
            Data("com.pingidentity.test\u{0}OTHER_ACCOUNT".utf8),
            Data("com.pingidentity.other\u{0}ACCESS_TOKEN_STORAGE".utf8),
            itemContext + Data([0]),
            itemContext.dropLast(),
            Data(),
        ]
        for other in others {
            #expect(throws: EnvelopeError.authenticationFailed) {
                try Envelope.open(envelope, key: key, associatedData: other)
            }
        }
    }

    @Test("a different key is rejected, even under the same key ID")
    func wrongKey() throws {
        let keyID = try KeyID.generate()
        let envelope = try Envelope.seal(Data("token".utf8), key: SymmetricKey.generate(), keyID: keyID, associatedData: itemContext)
        #expect(throws: EnvelopeError.authenticationFailed) {
            try Envelope.open(envelope, key: SymmetricKey.generate(), associatedData: itemContext)
        }
    }

    @Test("changing the key ID in the header is rejected")
    func rewrittenKeyID() throws {
        let key = try SymmetricKey.generate()
        var envelope = try Envelope.seal(Data("token".utf8), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        let otherID = try KeyID.generate()
        envelope.replaceSubrange(5..<21, with: otherID.data)
        #expect(try Envelope.header(of: envelope).keyID == otherID)
        #expect(throws: EnvelopeError.authenticationFailed) {
            try Envelope.open(envelope, key: key, associatedData: itemContext)
        }
    }

    // MARK: Format errors

    @Test("unknown versions are rejected before decryption", arguments: [0, 2, 3, 0x7F, 0xFF] as [UInt8])
    func unknownVersion(version: UInt8) throws {
        let key = try SymmetricKey.generate()
        var envelope = try Envelope.seal(Data("token".utf8), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        envelope[4] = version
        #expect(throws: EnvelopeError.unsupportedVersion(version)) { try Envelope.header(of: envelope) }
        #expect(throws: EnvelopeError.unsupportedVersion(version)) {
            try Envelope.open(envelope, key: key, associatedData: itemContext)
        }
        // Even a future version's short envelope reports the version, not a truncation.
        #expect(throws: EnvelopeError.unsupportedVersion(version)) { try Envelope.header(of: envelope.prefix(5)) }
        #expect(Envelope.isEnvelope(envelope))
    }

    @Test("data without the magic is rejected as not an envelope")
    func wrongMagic() throws {
        let key = try SymmetricKey.generate()
        let inputs = [
            Data(#"{"accessToken":"abc"}"#.utf8),
            Data("PSE\u{1}".utf8) + Data(count: 60),
            Data([0x89, 0x50, 0x53, 0x46, 0x01]) + Data(count: 60),
            Data([0x00]),
            Data(count: 100),
        ]
        for input in inputs {
            #expect(!Envelope.isEnvelope(input))
            #expect(throws: EnvelopeError.wrongMagic) { try Envelope.header(of: input) }
            #expect(throws: EnvelopeError.wrongMagic) { try Envelope.open(input, key: key, associatedData: itemContext) }
        }
        // A prefix of the magic is a truncated envelope, not a foreign one.
        #expect(throws: EnvelopeError.truncated(length: 2, minimum: 49)) { try Envelope.header(of: Envelope.magic.prefix(2)) }
        #expect(throws: EnvelopeError.truncated(length: 0, minimum: 49)) { try Envelope.header(of: Data()) }
    }

    @Test("envelopes above the maximum are rejected before decryption; the maximum itself is accepted")
    func oversized() throws {
        let key = try SymmetricKey.generate()
        var huge = Data(count: Envelope.maximumEnvelopeByteCount + 1)
        huge.replaceSubrange(0..<5, with: Envelope.magic + Data([1]))
        let expected = EnvelopeError.oversized(
            length: Envelope.maximumEnvelopeByteCount + 1, maximum: Envelope.maximumEnvelopeByteCount)
        #expect(throws: expected) { try Envelope.header(of: huge) }
        #expect(throws: expected) { try Envelope.open(huge, key: key, associatedData: itemContext) }

        let largest = try Envelope.seal(
            Data(count: Envelope.maximumPlaintextByteCount), key: key, keyID: KeyID.generate(), associatedData: itemContext)
        #expect(largest.count == Envelope.maximumEnvelopeByteCount)
        #expect(try Envelope.open(largest, key: key, associatedData: itemContext).count == Envelope.maximumPlaintextByteCount)
    }

    @Test("plaintexts above the maximum are refused by seal")
    func plaintextTooLarge() throws {
        let tooLarge = Data(count: Envelope.maximumPlaintextByteCount + 1)
        #expect(throws: EnvelopeError.plaintextTooLarge(
            length: Envelope.maximumPlaintextByteCount + 1, maximum: Envelope.maximumPlaintextByteCount)
        ) {
            try Envelope.seal(tooLarge, key: SymmetricKey.generate(), keyID: KeyID.generate(), associatedData: itemContext)
        }
    }

    @Test("every error has a distinct message without secret bytes")
    func errorMessages() throws {
        let key = try fixedKey()
        let keyHex = key.exportData().hex
        let errors: [EnvelopeError] = [
            .cryptoUnavailable, .truncated(length: 3, minimum: 49), .oversized(length: 70_000_000, maximum: 67_108_913),
            .wrongMagic, .unsupportedVersion(2), .authenticationFailed, .plaintextTooLarge(length: 70_000_000, maximum: 1),
            .invalidKeyLength(31), .invalidKeyIDLength(15),
            .libraryFailure(operation: "encrypt", code: 1, message: "General error"),
        ]
        let messages = errors.map(\.description)
        #expect(Set(messages).count == errors.count)
        for (error, message) in zip(errors, messages) {
            #expect(!message.isEmpty)
            #expect(error.localizedDescription == message)
            #expect(!message.contains(keyHex))
        }
    }
}
