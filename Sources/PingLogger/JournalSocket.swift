import Glibc

/// A datagram socket to journald's native-protocol socket (`/run/systemd/journal/socket`).
///
/// Every send is non-blocking (`MSG_DONTWAIT`) and addressed by path (`sendto`), so a restarted
/// journald is reached at its new socket. A payload too big for one datagram (over the limit given
/// at creation, or refused with `EMSGSIZE`) goes the way journald supports for large entries: it is
/// written to a memfd, which is sealed against any change (`F_SEAL_SHRINK|GROW|WRITE|SEAL`) and
/// whose descriptor is sent alone in an `SCM_RIGHTS` message. If no memfd can be made, the
/// `MESSAGE` field is cut to fit the limit and ends with the line
/// `[message truncated by PingLogger: kept K of N bytes]`.
///
/// Thread-safety: `Sendable`; the descriptor is never changed after creation and closed only in
/// `deinit`, and concurrent `sendto`/`sendmsg` on one datagram socket are safe.
package final class JournalSocket: Sendable {
    /// The payload size above which the memfd is used: well below the usual socket send buffer
    /// (`net.core.wmem_default`, 208 KiB), and big enough for any message a person reads.
    package static let defaultDatagramLimit = 64 * 1024

    /// What became of one message.
    enum Outcome: Equatable {
        /// The journal took it.
        case sent
        /// The journal is there but could not take it now (full), or it was too big.
        case dropped
        /// No journal at the path, or it refused the message.
        case unreachable
    }

    private let descriptor: Int32
    private let address: sockaddr_un
    private let datagramLimit: Int
    private let usesMemfd: Bool

    /// Opens a socket for the journal at `path`; `nil` if the path does not fit a `sockaddr_un` or
    /// no socket can be created. Sends nothing.
    init?(path: String, datagramLimit: Int, usesMemfd: Bool) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, !bytes.contains(0), bytes.count < MemoryLayout.size(ofValue: address.sun_path)
        else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.address = address
        self.datagramLimit = datagramLimit
        self.usesMemfd = usesMemfd
    }

    deinit {
        close(descriptor)
    }

    /// Sends one entry made of `fields` (see ``JournalEncoding``) without blocking.
    func send(_ fields: [(name: String, value: String)]) -> Outcome {
        let payload = JournalEncoding.encode(fields)
        if payload.count <= datagramLimit {
            let error = sendDatagram(payload)
            if error != EMSGSIZE { return Self.outcome(error) }
        }
        if usesMemfd, let memfd = Memfd(sealedCopyOf: payload) {
            defer { close(memfd.descriptor) }
            return Self.outcome(sendDescriptor(memfd.descriptor))
        }
        return sendTruncated(fields, payloadCount: payload.count)
    }

    /// Sends `fields` with `MESSAGE` cut so that the payload fits `datagramLimit`.
    private func sendTruncated(_ fields: [(name: String, value: String)], payloadCount: Int) -> Outcome {
        guard let index = fields.firstIndex(where: { $0.name == "MESSAGE" }) else { return .dropped }
        let messageBytes = fields[index].value.utf8.count
        // Room for the message: the limit less the other fields, the binary form's extra 8 bytes
        // (the marker adds a newline) and the marker itself (under 80 bytes).
        let room = datagramLimit - (payloadCount - messageBytes) - 8 - 80
        guard room > 0 else { return .dropped }
        var cut = fields
        cut[index].value = JournalEncoding.truncated(fields[index].value, toBytes: room)
        let error = sendDatagram(JournalEncoding.encode(cut))
        return error == EMSGSIZE ? .dropped : Self.outcome(error)
    }

    /// The outcome of a send that failed with `error` (0: it did not fail).
    private static func outcome(_ error: Int32) -> Outcome {
        switch error {
        case 0: .sent
        case EAGAIN, EWOULDBLOCK, ENOBUFS, ENOMEM, EMSGSIZE: .dropped
        default: .unreachable
        }
    }

    private static let sendFlags = Int32(MSG_DONTWAIT | MSG_NOSIGNAL)

    /// Sends `payload` as one datagram; 0 or the `errno` of the failure.
    private func sendDatagram(_ payload: [UInt8]) -> Int32 {
        withUnsafePointer(to: address) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                payload.withUnsafeBytes { bytes in
                    while true {
                        let sent = sendto(
                            descriptor, bytes.baseAddress, bytes.count, Self.sendFlags, address,
                            socklen_t(MemoryLayout<sockaddr_un>.size))
                        if sent >= 0 { return 0 }
                        if errno != EINTR { return errno }
                    }
                }
            }
        }
    }

    /// Sends `passed` alone in an `SCM_RIGHTS` message (no payload); 0 or the `errno`.
    private func sendDescriptor(_ passed: Int32) -> Int32 {
        // The control buffer holds one cmsghdr and one int, each padded as CMSG_SPACE pads them.
        func aligned(_ size: Int) -> Int {
            let alignment = MemoryLayout<Int>.size
            return (size + alignment - 1) & ~(alignment - 1)
        }
        let headerSize = aligned(MemoryLayout<cmsghdr>.size)
        let space = headerSize + aligned(MemoryLayout<Int32>.size)
        let control = UnsafeMutableRawPointer.allocate(byteCount: space, alignment: MemoryLayout<cmsghdr>.alignment)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: space)
        var header = cmsghdr()
        header.cmsg_len = headerSize + MemoryLayout<Int32>.size  // CMSG_LEN(sizeof(int))
        header.cmsg_level = SOL_SOCKET
        header.cmsg_type = Int32(SCM_RIGHTS)
        control.storeBytes(of: header, as: cmsghdr.self)
        control.storeBytes(of: passed, toByteOffset: headerSize, as: Int32.self)

        var address = self.address
        return withUnsafeMutablePointer(to: &address) { address in
            var message = msghdr()
            message.msg_name = UnsafeMutableRawPointer(address)
            message.msg_namelen = socklen_t(MemoryLayout<sockaddr_un>.size)
            message.msg_control = control
            message.msg_controllen = space
            while true {
                if sendmsg(descriptor, &message, Self.sendFlags) >= 0 { return 0 }
                if errno != EINTR { return errno }
            }
        }
    }
}

/// A memfd holding a copy of some bytes, sealed so that nobody can change it any more.
///
/// `memfd_create` is looked up with `dlsym`: Swift's Glibc module is built without `_GNU_SOURCE`
/// and does not declare it, nor the sealing constants below (Linux UAPI values, which never change).
struct Memfd {
    /// The descriptor; the caller closes it.
    let descriptor: Int32

    private typealias Create = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
    private static let create: Create? = dlsym(nil, "memfd_create").map { unsafeBitCast($0, to: Create.self) }
    private static let closeOnExec: UInt32 = 0x0001  // MFD_CLOEXEC
    private static let allowSealing: UInt32 = 0x0002  // MFD_ALLOW_SEALING
    private static let addSeals: Int32 = 1024 + 9  // F_ADD_SEALS (F_LINUX_SPECIFIC_BASE + 9)
    /// F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE.
    private static let allSeals: Int32 = 0x1 | 0x2 | 0x4 | 0x8

    /// A sealed memfd with `bytes` in it; `nil` if memfds are unavailable or any step fails.
    init?(sealedCopyOf bytes: [UInt8]) {
        guard let create = Self.create else { return nil }
        let descriptor = create("pinglogger-journal-entry", Self.closeOnExec | Self.allowSealing)
        guard descriptor >= 0 else { return nil }
        let written = bytes.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count > 0 {
                    offset += count
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
        guard written, fcntl(descriptor, Self.addSeals, Self.allSeals) == 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
    }
}
