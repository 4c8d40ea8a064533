// A small GVariant codec for the few types the keyring uses: u, t, s, ay, arrays and tuples
// (dictionary entries serialize as tuples). Serialization follows the GVariant specification and
// GLib's gvariant-serialiser.c and produces normal form, byte for byte what
// `g_variant_get_normal_form` + `g_variant_get_data` give (the tests compare the two).
//
// Why not GLib's GVariant: the item plaintext holds the secret, and GLib copies serialized data
// into g_malloc'd buffers it frees without wiping; here every byte of a serialized item is written
// straight into secret memory (`SecretBytes`). Decoding checks every offset and fails on anything malformed,
// where GLib substitutes default values (and libsecret even loads the file as trusted data).

internal import Gcrypt

/// The shape of a GVariant type that serialization needs: its alignment and, for fixed-size
/// types, its size.
struct GVariantLayout: Equatable {
    let alignment: Int
    let fixedSize: Int?

    static let uint32 = GVariantLayout(alignment: 4, fixedSize: 4)
    static let uint64 = GVariantLayout(alignment: 8, fixedSize: 8)
    /// `s`, `ay`, and any array or tuple of variable-size members with alignment 1.
    static let variable = GVariantLayout(alignment: 1, fixedSize: nil)
}

/// A value to serialize.
indirect enum GVariantValue {
    case uint32(UInt32)
    case uint64(UInt64)
    /// `s`: must not contain NUL (callers check).
    case string(String)
    /// `ay` of public bytes.
    case bytes([UInt8])
    /// `ay` whose bytes are secret: copied buffer to buffer.
    case secretBytes(SecretBytes)
    /// `aT` where `element` is the layout of `T` (needed for empty arrays).
    case array(element: GVariantLayout, [GVariantValue])
    /// `(…)` or `{kv}`.
    case tuple([GVariantValue])

    var layout: GVariantLayout {
        switch self {
        case .uint32: .uint32
        case .uint64: .uint64
        case .string, .bytes, .secretBytes: .variable
        case .array(let element, _): GVariantLayout(alignment: element.alignment, fixedSize: nil)
        case .tuple(let members):
            Self.tupleLayout(members.map(\.layout))
        }
    }

    static func tupleLayout(_ members: [GVariantLayout]) -> GVariantLayout {
        let alignment = members.map(\.alignment).max() ?? 1
        guard members.allSatisfy({ $0.fixedSize != nil }) else { return GVariantLayout(alignment: alignment, fixedSize: nil) }
        var end = 0
        for member in members { end = align(end, member.alignment) + member.fixedSize! }
        return GVariantLayout(alignment: alignment, fixedSize: members.isEmpty ? 1 : align(end, alignment))
    }

    /// The number of bytes of the serialized value.
    var serializedSize: Int {
        switch self {
        case .uint32: return 4
        case .uint64: return 8
        case .string(let string): return string.utf8.count + 1
        case .bytes(let bytes): return bytes.count
        case .secretBytes(let bytes): return bytes.count
        case .array(let element, let items):
            if let fixed = element.fixedSize { return fixed * items.count }
            var end = 0
            for item in items { end = align(end, element.alignment) + item.serializedSize }
            return totalSize(body: end, offsets: items.count)
        case .tuple(let members):
            if let fixed = layout.fixedSize { return fixed }
            var end = 0
            for member in members { end = align(end, member.layout.alignment) + member.serializedSize }
            let offsets = members.dropLast().filter { $0.layout.fixedSize == nil }.count
            return totalSize(body: end, offsets: offsets)
        }
    }

    /// Serializes into a new zeroed buffer of exactly `serializedSize` bytes.
    func serialized() -> SecretBytes {
        SecretBytes(count: serializedSize) { (buffer: inout SecretBytes.Writer) in write(into: &buffer, at: 0) }
    }

    /// Writes the value at `start`; the buffer's bytes there are zero (padding stays zero).
    func write(into buffer: inout SecretBytes.Writer, at start: Int) {
        switch self {
        case .uint32(let value): buffer.write(littleEndian(UInt64(value), 4), at: start)
        case .uint64(let value): buffer.write(littleEndian(value, 8), at: start)
        case .string(let string): buffer.write(string.utf8, at: start)  // the NUL is already there
        case .bytes(let bytes): buffer.write(bytes, at: start)
        case .secretBytes(let bytes): buffer.write(bytes, at: start)
        case .array(let element, let items):
            let size = serializedSize
            var position = 0
            var ends: [Int] = []
            for item in items {
                position = align(position, element.alignment)
                item.write(into: &buffer, at: start + position)
                position += item.serializedSize
                ends.append(position)
            }
            guard element.fixedSize == nil else { return }
            let width = offsetSize(size)
            for (index, end) in ends.enumerated() {
                buffer.write(littleEndian(UInt64(end), width), at: start + position + index * width)
            }
        case .tuple(let members):
            var tableStart = serializedSize  // framing offsets go backwards from the end
            let width = offsetSize(tableStart)
            var position = 0
            for (index, member) in members.enumerated() {
                position = align(position, member.layout.alignment)
                member.write(into: &buffer, at: start + position)
                position += member.serializedSize
                if member.layout.fixedSize == nil && index != members.count - 1 {
                    tableStart -= width
                    buffer.write(littleEndian(UInt64(position), width), at: start + tableStart)
                }
            }
        }
    }
}

/// A GVariant that does not decode: the reason, without any data.
struct MalformedGVariant: Error {
    let reason: String
    /// True when it may be well formed but holds more than a cap the reader set (an array's
    /// `limit`, a string's `maximumLength`).
    var exceedsCap = false
}

/// Decoding: functions over one span of serialized data, working with absolute ranges of it.
enum GVariantReader {
    /// The ranges of a tuple's members, given their layouts.
    static func tuple(_ data: Span<UInt8>, _ range: Range<Int>, _ members: [GVariantLayout]) throws(MalformedGVariant) -> [Range<Int>] {
        let size = range.count
        let tupleLayout = GVariantValue.tupleLayout(members)
        if let fixed = tupleLayout.fixedSize, fixed != size {
            throw MalformedGVariant(reason: "a fixed-size tuple of \(size) bytes instead of \(fixed)")
        }
        let width = offsetSize(size)
        let offsetCount = members.dropLast().filter { $0.fixedSize == nil }.count
        let bodyEnd = size - offsetCount * width
        guard bodyEnd >= 0 else { throw MalformedGVariant(reason: "a tuple too short for its framing offsets") }
        var tableEnd = size
        var position = 0
        var result: [Range<Int>] = []
        for (index, member) in members.enumerated() {
            let start = align(position, member.alignment)
            let end: Int
            if let fixed = member.fixedSize {
                end = start + fixed
            } else if index == members.count - 1 {
                end = bodyEnd
            } else {
                tableEnd -= width
                end = readOffset(data, range.lowerBound + tableEnd, width)
            }
            guard start <= end, end <= bodyEnd else { throw MalformedGVariant(reason: "a tuple member out of bounds") }
            result.append((range.lowerBound + start)..<(range.lowerBound + end))
            position = end
        }
        return result
    }

    /// The ranges of an array's elements, given the element layout. An array of more than `limit`
    /// elements fails (`exceedsCap`) before anything is allocated for them.
    static func array(_ data: Span<UInt8>, _ range: Range<Int>, _ element: GVariantLayout,
                      limit: Int = .max) throws(MalformedGVariant) -> [Range<Int>] {
        let size = range.count
        guard size > 0 else { return [] }
        if let fixed = element.fixedSize {
            guard size % fixed == 0 else { throw MalformedGVariant(reason: "a fixed-size array of uneven length") }
            guard size / fixed <= limit else { throw MalformedGVariant(reason: "more than \(limit) elements", exceedsCap: true) }
            return stride(from: range.lowerBound, to: range.upperBound, by: fixed).map { $0..<($0 + fixed) }
        }
        let width = offsetSize(size)
        let bodyEnd = readOffset(data, range.upperBound - width, width)
        guard bodyEnd >= 0, bodyEnd <= size, (size - bodyEnd) % width == 0 else {
            throw MalformedGVariant(reason: "an array whose framing offsets are out of bounds")
        }
        let count = (size - bodyEnd) / width
        guard count <= limit else { throw MalformedGVariant(reason: "more than \(limit) elements", exceedsCap: true) }
        var position = 0
        var result: [Range<Int>] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            let start = align(position, element.alignment)
            let end = readOffset(data, range.lowerBound + bodyEnd + index * width, width)
            guard start <= end, end <= bodyEnd else { throw MalformedGVariant(reason: "an array element out of bounds") }
            result.append((range.lowerBound + start)..<(range.lowerBound + end))
            position = end
        }
        return result
    }

    static func uint32(_ data: Span<UInt8>, _ range: Range<Int>) throws(MalformedGVariant) -> UInt32 {
        guard range.count == 4 else { throw MalformedGVariant(reason: "a 32-bit number of \(range.count) bytes") }
        return UInt32(readOffset(data, range.lowerBound, 4))
    }

    static func uint64(_ data: Span<UInt8>, _ range: Range<Int>) throws(MalformedGVariant) -> UInt64 {
        guard range.count == 8 else { throw MalformedGVariant(reason: "a 64-bit number of \(range.count) bytes") }
        var value: UInt64 = 0
        for index in range.reversed() { value = value << 8 | UInt64(data[index]) }
        return value
    }

    /// A string: NUL-terminated, no NUL inside, valid UTF-8. One of more than `maximumLength`
    /// bytes fails (`exceedsCap`) before it is copied.
    static func string(_ data: Span<UInt8>, _ range: Range<Int>, maximumLength: Int = .max) throws(MalformedGVariant) -> String {
        guard let last = range.last, data[last] == 0 else { throw MalformedGVariant(reason: "a string without its terminating NUL") }
        guard range.count - 1 <= maximumLength else {
            throw MalformedGVariant(reason: "a string of more than \(maximumLength) bytes", exceedsCap: true)
        }
        let bytes = bytes(data, range.dropLast())
        guard !bytes.contains(0), let string = String(validating: bytes, as: UTF8.self) else {
            throw MalformedGVariant(reason: "a string that is not valid UTF-8")
        }
        return string
    }

    /// The bytes of an `ay` (public data only: secrets go to `SecretBytes.slice`).
    static func bytes(_ data: Span<UInt8>, _ range: Range<Int>) -> [UInt8] {
        range.map { data[$0] }
    }

    private static func readOffset(_ data: Span<UInt8>, _ start: Int, _ width: Int) -> Int {
        var value = 0
        for index in (start..<(start + width)).reversed() { value = value << 8 | Int(data[index]) }
        return value
    }
}

/// `offset` rounded up to a multiple of `alignment` (a power of two).
func align(_ offset: Int, _ alignment: Int) -> Int {
    (offset + alignment - 1) & ~(alignment - 1)
}

/// The width of framing offsets in a container of `size` bytes (gvs_get_offset_size).
func offsetSize(_ size: Int) -> Int {
    switch size {
    case 0: 0
    case ...0xFF: 1
    case ...0xFFFF: 2
    case ...0xFFFF_FFFF: 4
    default: 8
    }
}

/// The size of a container of `body` bytes plus `offsets` framing offsets (gvs_calculate_total_size).
func totalSize(body: Int, offsets: Int) -> Int {
    if body + offsets <= 0xFF { return body + offsets }
    if body + 2 * offsets <= 0xFFFF { return body + 2 * offsets }
    if body + 4 * offsets <= 0xFFFF_FFFF { return body + 4 * offsets }
    return body + 8 * offsets
}

private func littleEndian(_ value: UInt64, _ width: Int) -> [UInt8] {
    (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}
