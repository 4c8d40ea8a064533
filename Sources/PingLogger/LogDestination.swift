import Glibc
import Locking
import Synchronization

/// Where a ``StandardLogger``'s messages go: the systemd journal if there is one, else a file
/// descriptor (standard error).
///
/// Whether there is a journal is decided once, lazily, by the first message: the journal socket is
/// opened and that message sent to it; if the socket does not exist or refuses the datagram
/// (`ENOENT`, `ECONNREFUSED`, …) this destination writes to the fallback descriptor from then on,
/// starting with that message. If the journal accepted it, or was merely full (`EAGAIN`), the
/// journal is used from then on; a message the journal cannot take at once, or cannot take any more
/// (journald stopped), is dropped and counted in ``droppedCount`` rather than waited for or
/// redirected.
///
/// Thread-safety: `Sendable`; ``write(_:_:)`` may be called from any thread at the same time. The
/// lock is held for the first message only (one non-blocking send), so that concurrent first
/// messages wait for the decision; afterwards it is held only to read the decision, never during
/// I/O. Journal datagrams and standard-error lines are each one system call, so concurrent
/// messages never interleave within a message (a line to a pipe longer than `PIPE_BUF` excepted).
package final class LogDestination: Sendable {
    /// The destination of every ``StandardLogger`` created with `StandardLogger()`.
    package static let standard = LogDestination(journalSocketPath: "/run/systemd/journal/socket")

    /// The value of the `PINGSTORAGE_SUBSYSTEM` journal field (the iOS SDK's `OSLog` subsystem);
    /// `journalctl PINGSTORAGE_SUBSYSTEM=com.pingidentity.ios` shows the SDK's messages only.
    package static let subsystem = "com.pingidentity.ios"

    /// What the first message decided.
    package enum Route: Sendable, Equatable {
        /// No message yet.
        case undecided
        /// Messages go to the journal.
        case journal
        /// Messages go to the fallback descriptor.
        case fallback
    }

    private enum State: Sendable {
        case undecided
        case journal(JournalSocket)
        case fallback
    }

    private let journalSocketPath: String?
    private let fallbackDescriptor: Int32
    private let identifier: String
    private let datagramLimit: Int
    private let usesMemfd: Bool
    private let state = Locked<State>(.undecided)
    private let dropped = Atomic<Int>(0)

    /// A destination that tries the journal socket at `journalSocketPath` (none: `nil`) and else
    /// writes lines to `fallbackDescriptor`, which it does not own.
    ///
    /// - Parameters:
    ///   - identifier: the `SYSLOG_IDENTIFIER` field; by default the program's name.
    ///   - datagramLimit: a payload longer than this many bytes goes through a sealed memfd rather
    ///     than in the datagram (so does one the kernel refuses with `EMSGSIZE`).
    ///   - usesMemfd: `false` truncates such a message to fit `datagramLimit` instead (what happens
    ///     anyway when `memfd_create` is unavailable).
    package init(
        journalSocketPath: String?,
        fallbackDescriptor: Int32 = STDERR_FILENO,
        identifier: String = LogDestination.programName,
        datagramLimit: Int = JournalSocket.defaultDatagramLimit,
        usesMemfd: Bool = true
    ) {
        self.journalSocketPath = journalSocketPath
        self.fallbackDescriptor = fallbackDescriptor
        self.identifier = identifier
        self.datagramLimit = datagramLimit
        self.usesMemfd = usesMemfd
    }

    /// The program's name (the last component of `argv[0]`), the default `SYSLOG_IDENTIFIER`.
    package static let programName: String = {
        guard let first = CommandLine.arguments.first, let name = first.split(separator: "/").last else {
            return "unknown"
        }
        return String(name)
    }()

    /// Where messages go now.
    package var route: Route {
        switch state.withLock({ $0 }) {
        case .undecided: .undecided
        case .journal: .journal
        case .fallback: .fallback
        }
    }

    /// How many messages were dropped: the journal was full or gone, or the fallback write failed.
    package var droppedCount: Int { dropped.load(ordering: .relaxed) }

    /// The journal fields of a message, in the order they are sent.
    package func fields(_ level: LogLevel, _ message: String) -> [(name: String, value: String)] {
        [
            ("MESSAGE", message),
            ("PRIORITY", String(level.priority)),
            ("SYSLOG_IDENTIFIER", identifier),
            ("PINGSTORAGE_SUBSYSTEM", Self.subsystem),
        ]
    }

    /// Sends `message` at `level` to the journal or writes it to the fallback descriptor.
    package func write(_ level: LogLevel, _ message: String) {
        var current = state.withLock { $0 }
        if case .undecided = current {
            let (decided, delivered) = state.withLock { state -> (State, Bool) in
                guard case .undecided = state else { return (state, false) }
                if let path = journalSocketPath,
                    let journal = JournalSocket(path: path, datagramLimit: datagramLimit, usesMemfd: usesMemfd)
                {
                    switch journal.send(fields(level, message)) {
                    case .sent:
                        state = .journal(journal)
                        return (state, true)
                    case .dropped:
                        dropped.add(1, ordering: .relaxed)
                        state = .journal(journal)
                        return (state, true)
                    case .unreachable:
                        break
                    }
                }
                state = .fallback
                return (state, false)
            }
            if delivered { return }
            current = decided
        }
        switch current {
        case .journal(let journal):
            if journal.send(fields(level, message)) != .sent { dropped.add(1, ordering: .relaxed) }
        case .fallback, .undecided:
            writeLine(StderrLine.format(level, message))
        }
    }

    /// Writes `line` to the fallback descriptor in one `write(2)` (more if the kernel takes part).
    private func writeLine(_ line: String) {
        let bytes = Array(line.utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fallbackDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    dropped.add(1, ordering: .relaxed)
                    return
                }
            }
        }
    }
}
