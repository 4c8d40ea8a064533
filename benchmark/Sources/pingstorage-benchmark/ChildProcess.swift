import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starting child processes with `posix_spawnp` and waiting with `waitpid`, blocking the calling
/// thread (use a ``BlockingThread``). Foundation's `Process` is avoided on purpose: its
/// `waitUntilExit` polls a run loop, which would add its polling interval to every measured
/// `secret-tool` call.
enum ChildProcess {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `arguments` (the first is looked up in `PATH`) to completion, with `input` on its
    /// standard input (or /dev/null) and its standard output discarded; standard error goes to
    /// ours. Returns the exit status.
    static func run(_ arguments: [String], input: Data? = nil) throws -> Int32 {
        var inputPipe: [Int32] = [-1, -1]
        if input != nil {
            try makePipe(&inputPipe)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)

        let pid = try spawn(arguments, actions: &actions)
        if let input {
            close(inputPipe[0])
            writeAll(inputPipe[1], input)
            close(inputPipe[1])
        }
        return try wait(pid)
    }

    /// A child that keeps running, talking over pipes: its standard input and output.
    final class Pipes: @unchecked Sendable {
        // @unchecked Sendable: used from one BlockingThread at a time.
        let pid: pid_t
        private let input: Int32
        private let output: Int32
        private var buffer = Data()

        fileprivate init(pid: pid_t, input: Int32, output: Int32) {
            self.pid = pid
            self.input = input
            self.output = output
        }

        /// Sends one line (a newline is added).
        func send(_ line: String) {
            writeAll(input, Data((line + "\n").utf8))
        }

        /// The next line of output without its newline; nil at end of file.
        func readLine() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    return line
                }
                var chunk = [UInt8](repeating: 0, count: 65536)
                let count = chunk.withUnsafeMutableBytes { Glibc.read(output, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return nil }
                buffer.append(contentsOf: chunk[0..<count])
            }
        }

        /// Closes its standard input and waits for it to exit.
        func finish() -> Int32? {
            close(input)
            let status = try? ChildProcess.wait(pid)
            close(output)
            return status
        }
    }

    /// Starts `arguments` with pipes on its standard input and output; standard error goes to ours.
    static func start(_ arguments: [String]) throws -> Pipes {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        try makePipe(&toChild)
        try makePipe(&fromChild)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        let pid = try spawn(arguments, actions: &actions)
        close(toChild[0])
        close(fromChild[1])
        return Pipes(pid: pid, input: toChild[1], output: fromChild[0])
    }

    /// A pipe whose ends are closed on exec (so no other child inherits them; posix_spawn's dup2
    /// gives the child its copy).
    private static func makePipe(_ ends: inout [Int32]) throws {
        guard pipe(&ends) == 0 else { throw Failure(description: "pipe failed: errno \(errno)") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    }

    /// Starts the child with no signal blocked and every signal at its default action: the
    /// threads that call this inherited the signal mask of Swift's thread pool, and we ignore
    /// SIGPIPE; a child (gnome-keyring restarted through $DBUS_TEST_CTL) must not inherit either,
    /// or SIGTERM would not stop it.
    private static func spawn(_ arguments: [String], actions: inout posix_spawn_file_actions_t) throws -> pid_t {
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard result == 0 else {
            throw Failure(description: "cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        return pid
    }

    fileprivate static func wait(_ pid: pid_t) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Failure(description: "waitpid failed: errno \(errno)") }
        }
        // WIFEXITED / WEXITSTATUS are macros Swift cannot see.
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

private func writeAll(_ fd: Int32, _ data: Data) {
    data.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
