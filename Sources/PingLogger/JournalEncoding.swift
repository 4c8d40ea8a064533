/// The payload of one message in the systemd journal's native protocol.
///
/// One field per line, `NAME=value\n`; a value that contains a newline is written in the binary
/// form instead: `NAME\n`, the value's length as a 64-bit little-endian integer, the value's bytes,
/// `\n`. Field names are upper-case letters, digits and `_`, not starting with `_` or a digit.
package enum JournalEncoding {
    /// Appends one field to `payload`.
    package static func append(_ name: String, _ value: some StringProtocol, to payload: inout [UInt8]) {
        let bytes = value.utf8
        payload.append(contentsOf: name.utf8)
        if bytes.contains(UInt8(ascii: "\n")) {
            payload.append(UInt8(ascii: "\n"))
            withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { payload.append(contentsOf: $0) }
        } else {
            payload.append(UInt8(ascii: "="))
        }
        payload.append(contentsOf: bytes)
        payload.append(UInt8(ascii: "\n"))
    }

    /// The payload of `fields`, in order.
    package static func encode(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var payload: [UInt8] = []
        payload.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 10 })
        for field in fields { append(field.name, field.value, to: &payload) }
        return payload
    }

    /// `message` cut to at most `limit` UTF-8 bytes (never inside a character's encoding) followed
    /// by a marker that says how much was kept, when it is longer than `limit` bytes.
    package static func truncated(_ message: String, toBytes limit: Int) -> String {
        let bytes = Array(message.utf8)
        guard bytes.count > limit else { return message }
        var end = max(0, limit)
        // Back off from continuation bytes (10xxxxxx) so the cut falls between characters.
        while end > 0, end < bytes.count, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        let kept = String(decoding: bytes[..<end], as: UTF8.self)
        return kept + "\n[message truncated by PingLogger: kept \(end) of \(bytes.count) bytes]"
    }
}
