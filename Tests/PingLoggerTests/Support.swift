import Foundation
import Glibc
import Testing

/// A fresh directory under the system's temporary directory, removed with its contents at the end.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array((base + "/pinglogger-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXFailure(call: "mkdtemp", code: errno) }
        path = String(cString: made)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

struct POSIXFailure: Error {
    let call: String
    let code: Int32
}

/// A journald stand-in: a bound AF_UNIX datagram socket in a temporary directory.
final class DatagramReceiver: Sendable {
    let directory: TemporaryDirectory
    let path: String
    let descriptor: Int32

    /// - Parameter timeout: how long ``receive()`` waits for a datagram.
    init(timeout seconds: Int = 5) throws {
        directory = try TemporaryDirectory()
        path = directory.path + "/journal.socket"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXFailure(call: "socket", code: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw POSIXFailure(call: "sockaddr_un (path too long)", code: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw POSIXFailure(call: "bind", code: errno) }
        var wait = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(descriptor)
    }

    /// One received message: its payload, or the contents of the memfd passed with it.
    struct Received {
        /// The datagram's payload (empty when a memfd was passed).
        var datagram: [UInt8]
        /// The passed memfd's contents, if one was passed.
        var memfdContents: [UInt8]?
        /// The passed memfd's seals (`F_GET_SEALS`), if one was passed.
        var memfdSeals: Int32?

        /// The entry's payload, wherever it came.
        var payload: [UInt8] { memfdContents ?? datagram }
    }

    /// The next message; `nil` after the timeout.
    func receive() -> Received? {
        let capacity = 512 * 1024
        let data = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { data.deallocate() }
        let controlSize = 64
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlSize, alignment: 8)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: controlSize)
        var vector = iovec(iov_base: data, iov_len: capacity)
        let (count, controlLength) = withUnsafeMutablePointer(to: &vector) { vector -> (Int, Int) in
            var message = msghdr()
            message.msg_iov = vector
            message.msg_iovlen = 1
            message.msg_control = control
            message.msg_controllen = controlSize
            let count = recvmsg(descriptor, &message, Int32(MSG_CMSG_CLOEXEC))
            return (count, message.msg_controllen)
        }
        guard count >= 0 else { return nil }
        var received = Received(datagram: Array(UnsafeRawBufferPointer(start: data, count: count)))
        if controlLength >= MemoryLayout<cmsghdr>.size {
            let header = control.load(as: cmsghdr.self)
            if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                let passed = control.load(fromByteOffset: MemoryLayout<cmsghdr>.size, as: Int32.self)
                defer { close(passed) }
                let size = Int(lseek(passed, 0, SEEK_END))
                var contents = [UInt8](repeating: 0, count: size)
                let read = contents.withUnsafeMutableBytes { pread(passed, $0.baseAddress, size, 0) }
                received.memfdContents = Array(contents.prefix(max(0, read)))
                received.memfdSeals = fcntl(passed, 1024 + 10)  // F_GET_SEALS
            }
        }
        return received
    }
}

/// The fields of a native-protocol payload, decoded independently of the library; `nil` if the
/// payload is malformed.
func decodeJournalPayload(_ bytes: [UInt8]) -> [(name: String, value: [UInt8])]? {
    var fields: [(name: String, value: [UInt8])] = []
    var index = 0
    while index < bytes.count {
        guard let newline = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = bytes[index..<newline]
        if let equals = line.firstIndex(of: UInt8(ascii: "=")) {
            fields.append((String(decoding: line[..<equals], as: UTF8.self), Array(line[(equals + 1)...])))
            index = newline + 1
        } else {
            let start = newline + 1 + 8
            guard start <= bytes.count else { return nil }
            var length: UInt64 = 0
            for (shift, byte) in bytes[(newline + 1)..<start].enumerated() {
                length |= UInt64(byte) << (8 * UInt64(shift))
            }
            let end = start + Int(length)
            guard end < bytes.count, bytes[end] == UInt8(ascii: "\n") else { return nil }
            fields.append((String(decoding: line, as: UTF8.self), Array(bytes[start..<end])))
            index = end + 1
        }
    }
    return fields
}

/// `decodeJournalPayload` as a name → text dictionary (names must be unique).
func journalFields(_ bytes: [UInt8]) -> [String: String]? {
    guard let fields = decodeJournalPayload(bytes) else { return nil }
    var result: [String: String] = [:]
    for field in fields {
        guard result[field.name] == nil else { return nil }
        result[field.name] = String(decoding: field.value, as: UTF8.self)
    }
    return result
}

/// A pipe standing in for standard error; the read end is non-blocking.
final class Pipe {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw POSIXFailure(call: "pipe", code: errno) }
        readEnd = ends[0]
        writeEnd = ends[1]
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Everything written so far.
    func drain() -> String {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            result += buffer.prefix(count)
        }
        return String(decoding: result, as: UTF8.self)
    }
}

/// A file in a temporary directory, open for appending; stands in for standard error.
final class AppendOnlyFile {
    let directory: TemporaryDirectory
    let path: String
    let descriptor: Int32

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path + "/stderr.log"
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXFailure(call: "open", code: errno) }
    }

    deinit {
        close(descriptor)
    }

    /// Everything written so far. Read with read(2): FoundationEssentials' String(contentsOfFile:)
    /// leaks a buffer (LeakSanitizer, in the ASan run) when the file grows while it reads, as this
    /// one does while a logger writes.
    func contents() throws -> String {
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else { throw POSIXFailure(call: "open", code: errno) }
        defer { close(reader) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress!, $0.count) }
            if count > 0 {
                bytes += chunk[..<count]
            } else if count == 0 {
                return String(decoding: bytes, as: UTF8.self)
            } else if errno != EINTR {
                throw POSIXFailure(call: "read", code: errno)
            }
        }
    }
}
