import Foundation
import Gcrypt

/// swtpm's wire log (`dbus-test/run --tpm` starts swtpm with `--log level=20`: dbus-test/README.md),
/// what a sniffer on a discrete TPM's bus sees: each command (` SWTPM_IO_Read: length N`) and its
/// response (` SWTPM_IO_Write: length N`), each followed by its bytes in hex, 16 a line. Anything
/// else in between (the control channel, a client that disconnected) is passed over, and a record
/// whose bytes are not all there (still being written) is dropped: the log is read as hostile input.
struct TPMWireLog {
    /// A command and the response that followed it (nil when none did yet).
    struct Exchange {
        let command: [UInt8]
        let response: [UInt8]?

        /// The command code (bytes 6..<10), or nil for a command shorter than a header.
        var code: UInt32? { command.count >= 10 ? Self.uint32(command, 6) : nil }

        static func uint32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
            bytes[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) }
        }
    }

    static let createPrimary: UInt32 = 0x131, load: UInt32 = 0x157, zgen: UInt32 = 0x154

    static var path: String { (ProcessInfo.processInfo.environment["DBUS_TEST_DIR"] ?? "/nonexistent") + "/swtpm-wire.log" }

    /// Where the log ends now: ``exchanges(since:)`` of it gives what comes after.
    static func mark() -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.uint64Value ?? 0
    }

    /// The exchanges logged after `offset` (a ``mark()``), in order.
    static func exchanges(since offset: UInt64 = 0) throws -> [Exchange] {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var exchanges: [Exchange] = [], pending: [UInt8]?
        var record: (isCommand: Bool, length: Int, bytes: [UInt8])?
        func finish() {
            guard let done = record else { return }
            record = nil
            guard done.bytes.count == done.length else { return }
            if done.isCommand {
                if let command = pending { exchanges.append(Exchange(command: command, response: nil)) }
                pending = done.bytes
            } else if let command = pending {
                exchanges.append(Exchange(command: command, response: done.bytes))
                pending = nil
            }
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let length = Self.length(trimmed, "SWTPM_IO_Read: length ") {
                finish()
                record = (true, length, [])
            } else if let length = Self.length(trimmed, "SWTPM_IO_Write: length ") {
                finish()
                record = (false, length, [])
            } else if record != nil, let bytes = Self.hexBytes(trimmed), record!.bytes.count + bytes.count <= record!.length {
                record!.bytes += bytes
                if record!.bytes.count == record!.length { finish() }
            } else {
                finish()
            }
        }
        finish()
        if let command = pending { exchanges.append(Exchange(command: command, response: nil)) }
        return exchanges
    }

    private static func length(_ line: String, _ prefix: String) -> Int? {
        line.hasPrefix(prefix) ? Int(line.dropFirst(prefix.count)) : nil
    }

    /// The bytes of a line of two-digit hex numbers; nil for any other line.
    private static func hexBytes(_ line: String) -> [UInt8]? {
        let tokens = line.split(separator: " ")
        guard !tokens.isEmpty, tokens.count <= 16 else { return nil }
        var bytes: [UInt8] = []
        for token in tokens {
            guard token.count == 2, let byte = UInt8(token, radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}

/// The parts of TPM 2.0 commands and responses the tests look at, read with bounds (nil when the
/// bytes are not that).
enum TPMBytes {
    /// The authorization sessions of a command with `handles` handles: each session's handle and
    /// attributes (TPMA_SESSION: 0x20 decrypt, 0x40 encrypt). Empty for a command without sessions
    /// (tag TPM_ST_NO_SESSIONS).
    static func sessions(of command: [UInt8], handles: Int) -> [(handle: UInt32, attributes: UInt8)]? {
        var reader = Reader(command)
        guard let tag = reader.uint16(), reader.skip(8), reader.skip(4 * handles) else { return nil }
        if tag == 0x8001 { return [] }
        guard tag == 0x8002, let size = reader.uint32(), var area = reader.take(Int(size)).map(Reader.init) else { return nil }
        var sessions: [(UInt32, UInt8)] = []
        while !area.isAtEnd {
            guard let handle = area.uint32(), area.sized() != nil, let attributes = area.take(1)?.first, area.sized() != nil else { return nil }
            sessions.append((handle, attributes))
        }
        return sessions
    }

    /// The response parameters of a successful response with `handles` handles, or nil.
    static func parameters(of response: [UInt8], handles: Int) -> [UInt8]? {
        var reader = Reader(response)
        guard let tag = reader.uint16(), reader.skip(4), reader.uint32() == 0, reader.skip(4 * handles) else { return nil }
        if tag == 0x8001 { return reader.rest }
        guard tag == 0x8002, let size = reader.uint32() else { return nil }
        return reader.take(Int(size))
    }

    /// TPM2_ECDH_ZGen's response parameter, a TPM2B_ECC_POINT, decoded as its TPMS_ECC_POINT:
    /// the uncompressed point (65 bytes) when it decodes as one of P-256's size, else nil.
    static func zgenPoint(_ response: [UInt8]) -> [UInt8]? {
        guard let parameters = parameters(of: response, handles: 0) else { return nil }
        var reader = Reader(parameters)
        guard let content = reader.sized() else { return nil }
        var point = Reader(content)
        guard let x = point.sized(), let y = point.sized(), point.isAtEnd, x.count == 32, y.count == 32 else { return nil }
        return [0x04] + x + y
    }

    /// The public point of TPM2_CreatePrimary's response (outPublic's unique field of an ECC key),
    /// in the clear whatever the session: the control that ``isOnP256(_:)`` can say yes.
    static func createPrimaryPoint(_ response: [UInt8]) -> [UInt8]? {
        guard let parameters = parameters(of: response, handles: 1) else { return nil }
        var reader = Reader(parameters)
        guard let outPublic = reader.sized() else { return nil }
        var area = Reader(outPublic)
        guard area.uint16() == 0x0023, area.skip(2 + 4), area.sized() != nil, let symmetric = area.uint16(),
              symmetric == 0x0010 || area.skip(4), let scheme = area.uint16(), scheme == 0x0010 || area.skip(2),
              area.uint16() == 0x0003, let kdf = area.uint16(), kdf == 0x0010 || area.skip(2),
              let x = area.sized(), let y = area.sized(), x.count == 32, y.count == 32 else { return nil }
        return [0x04] + x + y
    }

    /// Whether an uncompressed point is on P-256 (libgcrypt refuses an ECDH with any other).
    static func isOnP256(_ point: [UInt8]) -> Bool {
        (try? P256.ephemeralAgreement(with: point)) != nil
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var isAtEnd: Bool { offset == bytes.count }
        var rest: [UInt8] { Array(bytes[offset...]) }
        mutating func take(_ count: Int) -> [UInt8]? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }
        mutating func skip(_ count: Int) -> Bool { take(count) != nil }
        mutating func uint16() -> UInt16? { take(2).map { UInt16($0[0]) << 8 | UInt16($0[1]) } }
        mutating func uint32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
        /// A TPM2B: its size (2 bytes), then that many bytes.
        mutating func sized() -> [UInt8]? { uint16().flatMap { take(Int($0)) } }
    }
}
