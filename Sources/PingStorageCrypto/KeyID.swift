#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import Gcrypt

/// The identifier of a ``SymmetricKey``: 16 random bytes chosen when the key is created.
///
/// Every ``Envelope`` names the key that sealed it by this identifier (it is authenticated, not
/// secret), so a reader can find the right key among several and tell "key missing" from "data
/// damaged". Its text form is 32 lowercase hexadecimal digits, suitable as a keyring attribute.
///
/// Thread-safety: a plain value; `Sendable`.
public struct KeyID: Hashable, Sendable, CustomStringConvertible {
    /// The length of an identifier in bytes: 16.
    public static let byteCount = 16

    /// The first and last eight bytes, big-endian.
    private let high: UInt64
    private let low: UInt64

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Builds an identifier from exactly 16 bytes (as read from an envelope or a keyring item).
    init(bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == Self.byteCount)
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 {
            high = high << 8 | UInt64(bytes[index])
            low = low << 8 | UInt64(bytes[index + 8])
        }
        self.init(high: high, low: low)
    }

    /// Generates a new random identifier from libgcrypt's CSPRNG (`GCRY_STRONG_RANDOM`).
    ///
    /// - Throws: ``EnvelopeError/cryptoUnavailable`` when ``CryptoLibrary/isAvailable`` is false.
    public static func generate() throws -> KeyID {
        try CryptoLibrary.requireAvailable()
        var bytes = [UInt8](repeating: 0, count: byteCount)
        bytes.withUnsafeMutableBytes { Random.fill($0, level: .strong) }
        return bytes.withUnsafeBytes { KeyID(bytes: $0) }
    }

    /// Builds an identifier from its 16 bytes.
    ///
    /// - Throws: ``EnvelopeError/invalidKeyIDLength(_:)`` when `data` is not 16 bytes long.
    public init(data: Data) throws {
        guard data.count == Self.byteCount else { throw EnvelopeError.invalidKeyIDLength(data.count) }
        self = data.withUnsafeBytes { KeyID(bytes: $0) }
    }

    /// Parses the 32-hex-digit form produced by ``hexString`` (either case). Returns nil for
    /// anything else.
    public init?(hexString: String) {
        let digits = Array(hexString.utf8)
        guard digits.count == Self.byteCount * 2 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, digit) in digits.enumerated() {
            let value: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = digit - UInt8(ascii: "A") + 10
            default: return nil
            }
            if index < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
        }
        self.init(high: high, low: low)
    }

    /// The 16 bytes.
    public var data: Data {
        var bytes = Data(count: Self.byteCount)
        bytes.withUnsafeMutableBytes { write(to: $0) }
        return bytes
    }

    /// The 32 lowercase hexadecimal digits, e.g. `"00112233445566778899aabbccddeeff"`.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(Self.byteCount * 2)
        for word in [high, low] {
            for shift in stride(from: 60, through: 0, by: -4) {
                text.append(digits[Int((word >> UInt64(shift)) & 0xF)])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Same as ``hexString``.
    public var description: String { hexString }

    /// Writes the 16 bytes to the start of `destination` (which must hold at least 16).
    func write(to destination: UnsafeMutableRawBufferPointer) {
        precondition(destination.count >= Self.byteCount)
        for index in 0..<8 {
            destination[index] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * index))
            destination[index + 8] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * index))
        }
    }
}
