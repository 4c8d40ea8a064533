import Foundation
import PingStorageCrypto
import Testing

/// A seeded random-mutation fuzz test of envelope parsing and opening.
///
/// Every input is derived from a valid envelope by byte flips, bit flips, insertions, deletions,
/// truncations, extensions, block swaps, or replaced by random garbage (with or without a valid
/// magic and version). Requirements: nothing crashes or reads out of bounds (debug builds check
/// every buffer index), every error is an `EnvelopeError`, and no input that differs from the
/// original envelope opens. The seed is fixed, so a failure reproduces exactly.
@Suite("Envelope fuzzing")
struct EnvelopeFuzzTests {
    static let iterations = 100_000
    static let seed: UInt64 = 0x5049_4E47_5354_4F52  // "PINGSTOR"

    private enum Outcome: Hashable {
        case opened, unchangedOpened, wrongMagic, truncated, oversized, unsupportedVersion, authenticationFailed
        case otherEnvelopeError, foreignError
    }

    @Test("100,000 mutated envelopes: no crash, no mutated input opens")
    func mutationFuzz() throws {
        var generator = SeededGenerator(seed: Self.seed)
        let key = try SymmetricKey.generate()
        let associatedData = Data("fuzz-service\u{0}fuzz-account".utf8)
        let originals = try [0, 1, 15, 16, 17, 100].map { length in
            try Envelope.seal(generator.bytes(length), key: key, keyID: KeyID.generate(), associatedData: associatedData)
        }

        var outcomes: [Outcome: Int] = [:]
        var mutatedThatOpened: [String] = []
        for _ in 0..<Self.iterations {
            let original = originals.randomElement(using: &generator)!
            let input = Self.mutate(original, using: &generator)

            // Parsing entry points must cope with anything.
            _ = Envelope.isEnvelope(input)
            _ = try? Envelope.header(of: input)

            let outcome: Outcome
            do {
                _ = try Envelope.open(input, key: key, associatedData: associatedData)
                outcome = input == original ? .unchangedOpened : .opened
            } catch let error as EnvelopeError {
                switch error {
                case .wrongMagic: outcome = .wrongMagic
                case .truncated: outcome = .truncated
                case .oversized: outcome = .oversized
                case .unsupportedVersion: outcome = .unsupportedVersion
                case .authenticationFailed: outcome = .authenticationFailed
                default: outcome = .otherEnvelopeError
                }
            } catch {
                outcome = .foreignError
            }
            outcomes[outcome, default: 0] += 1
            if outcome == .opened, mutatedThatOpened.count < 5 { mutatedThatOpened.append(input.hex) }
        }

        #expect(outcomes.values.reduce(0, +) == Self.iterations)
        #expect(outcomes[.opened, default: 0] == 0, "mutated envelopes opened: \(mutatedThatOpened)")
        #expect(outcomes[.foreignError, default: 0] == 0)
        #expect(outcomes[.otherEnvelopeError, default: 0] == 0)
        // The mutations reach every check, not just the first one.
        for outcome in [Outcome.wrongMagic, .truncated, .unsupportedVersion, .authenticationFailed] {
            #expect(outcomes[outcome, default: 0] > 1_000, "too few \(outcome): \(outcomes)")
        }
    }

    /// One to three mutations of `envelope`, or garbage.
    private static func mutate(_ envelope: Data, using generator: inout SeededGenerator) -> Data {
        var data = envelope
        let header = Envelope.magic + Data([Envelope.currentVersion])
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            switch Int.random(in: 0..<11, using: &generator) {
            case 0 where !data.isEmpty:  // flip one bit
                let bit = Int.random(in: 0..<(data.count * 8), using: &generator)
                data[data.startIndex + bit / 8] ^= UInt8(1) << (bit % 8)
            case 1 where !data.isEmpty:  // overwrite one byte
                data[data.startIndex + Int.random(in: 0..<data.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            case 2:  // insert bytes
                let at = data.startIndex + Int.random(in: 0...data.count, using: &generator)
                data.insert(contentsOf: generator.bytes(Int.random(in: 1...8, using: &generator)), at: at)
            case 3 where !data.isEmpty:  // delete bytes
                let start = Int.random(in: 0..<data.count, using: &generator)
                let end = min(data.count, start + Int.random(in: 1...8, using: &generator))
                data.removeSubrange((data.startIndex + start)..<(data.startIndex + end))
            case 4:  // truncate
                data = data.prefix(Int.random(in: 0...data.count, using: &generator))
            case 5:  // append
                data.append(generator.bytes(Int.random(in: 1...16, using: &generator)))
            case 6:  // garbage
                return generator.bytes(Int.random(in: 0..<128, using: &generator))
            case 7:  // garbage behind a valid magic and version
                return header + generator.bytes(Int.random(in: 0..<128, using: &generator))
            case 8 where data.count >= 2:  // swap two bytes
                let a = data.startIndex + Int.random(in: 0..<data.count, using: &generator)
                let b = data.startIndex + Int.random(in: 0..<data.count, using: &generator)
                let byte = data[a]
                data[a] = data[b]
                data[b] = byte
            case 9 where data.count >= 33:  // new key ID or nonce
                let range = Bool.random(using: &generator) ? 5..<21 : 21..<33
                data.replaceSubrange(
                    (data.startIndex + range.lowerBound)..<(data.startIndex + range.upperBound),
                    with: generator.bytes(range.count))
            case 10 where data.count >= 16:  // replace the tag
                data.replaceSubrange((data.endIndex - 16)..<data.endIndex, with: generator.bytes(16))
            default:  // a mutation that did not apply: flip the version byte, or append one zero
                if data.count > 4 { data[data.startIndex + 4] ^= 0x01 } else { data.append(0) }
            }
        }
        return data
    }
}
