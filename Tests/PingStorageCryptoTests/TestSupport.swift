import Foundation

extension Data {
    /// Bytes from hexadecimal text (whitespace ignored). Traps on malformed input: test data only.
    init(hex: String) {
        let digits = Array(hex.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") })
        precondition(digits.count.isMultiple(of: 2), "odd number of hex digits")
        self.init(stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!
        })
    }

    /// Lowercase hexadecimal text.
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

/// SplitMix64: a tiny, fast, seedable generator so fuzz runs are reproducible. Not for secrets.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> Data {
        Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &self) })
    }
}
