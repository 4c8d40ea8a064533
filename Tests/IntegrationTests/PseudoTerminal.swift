import Foundation
import Testing

/// A pseudo-terminal for a child process, as a user's terminal is: the child's stdin, stdout and
/// stderr are its slave side; the test types on the master side and reads what the terminal shows
/// (with echo on, what is typed is shown too). Blocking: use it off Swift's cooperative pool
/// (``offThePool(_:)``).
final class PseudoTerminal {
    let master: Int32
    let slave: Int32
    /// Everything the terminal has shown so far.
    private(set) var shown = Data()

    init() throws {
        var master: Int32 = -1, slave: Int32 = -1
        // Made close-on-exec under the lock children are spawned with: another test's child must
        // not inherit them.
        let opened = spawnLock.withLock { () -> Bool in
            guard openpty(&master, &slave, nil, nil, nil) == 0 else { return false }
            _ = fcntl(master, F_SETFD, FD_CLOEXEC)
            _ = fcntl(slave, F_SETFD, FD_CLOEXEC)
            return true
        }
        guard opened else { throw HarnessError("no pseudo-terminal: errno \(errno)") }
        self.master = master
        self.slave = slave
    }

    deinit {
        close(master)
        close(slave)
    }

    /// Starts `program` with the terminal as its stdin, stdout and stderr; its PID.
    func spawn(_ program: String, _ arguments: [String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for target: Int32 in [0, 1, 2] { posix_spawn_file_actions_adddup2(&actions, slave, target) }
        return try spawnWithCleanSignals([program] + arguments, environment: nil, actions: &actions)
    }

    /// Types `text` (as keys: the terminal's line discipline handles it).
    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Foundation.write(master, $0.baseAddress!, bytes.count) }
    }

    /// Whether the terminal echoes what is typed now.
    var echoes: Bool {
        var settings = termios()
        tcgetattr(slave, &settings)
        return settings.c_lflag & tcflag_t(ECHO) != 0
    }

    /// Reads what the terminal shows until it has shown `text`.
    /// - Throws: when it has not after `timeout` seconds.
    func waitUntilShown(_ text: String, timeout: TimeInterval) throws {
        let end = Date().addingTimeInterval(timeout)
        while !String(decoding: shown, as: UTF8.self).contains(text) {
            guard Date() < end else { throw HarnessError("the terminal never showed '\(text)'; it showed: \(String(decoding: shown, as: UTF8.self))") }
            drain(waiting: 0.1)
        }
    }

    /// The child's exit status (128 + N when signal N ended it), reading what it shows meanwhile.
    /// - Throws: when it has not ended after `timeout` seconds (it is killed then).
    func waitForExit(_ pid: pid_t, timeout: TimeInterval) throws -> Int32 {
        let end = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard Date() < end else {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                throw HarnessError("the child did not end within \(timeout) s")
            }
            drain(waiting: 0.05)
        }
        drain(waiting: 0)
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Reads what is there to read, waiting up to `seconds` for the first bytes.
    private func drain(waiting seconds: TimeInterval) {
        var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        var wait = Int32(seconds * 1000)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while poll(&descriptor, 1, wait) > 0, descriptor.revents & Int16(POLLIN) != 0 {
            let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress!, $0.count) }
            guard count > 0 else { return }
            shown.append(contentsOf: buffer[..<count])
            wait = 0
        }
    }
}

/// Runs blocking `body` on a thread of its own, never one of Swift's cooperative threads.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
