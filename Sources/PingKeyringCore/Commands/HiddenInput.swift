#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// How `save` reads a value typed at a terminal, as secret-tool and Python keyring's getpass do: a
/// prompt on stderr, then one line with the terminal's echo off, so the secret never shows on the
/// screen (or in a screen recording, or a terminal's scrollback). Echo comes back when the line
/// ends, and when the process is interrupted (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) while waiting.
/// Blocks its thread: call it off Swift's cooperative pool.
public enum HiddenInput {
    /// What `save` prints before it waits for the value.
    public static let prompt = "ping-keyring: the value to save (typing is not shown; Enter ends it): "

    /// One line from the terminal `descriptor`, typed with echo off after `prompt` was written to
    /// `output`: its bytes with their final newline (none when the line ended with Ctrl-D), as a
    /// pipe would give them. A terminal line holds at most 4095 bytes (the kernel's limit in this
    /// mode): longer values go through a pipe. When `descriptor`'s settings cannot be read (no
    /// terminal after all), it reads the line with nothing changed.
    public static func readLine(from descriptor: Int32, prompt: String, output: Int32) -> Result<Data, PingKeyring.InputFailure> {
        var saved = termios()
        guard tcgetattr(descriptor, &saved) == 0 else {
            write(prompt, to: output)
            return readLineAsIs(descriptor)
        }
        var hidden = saved
        // No echo, but the newline that ends the line is shown, so the next output starts a line.
        hidden.c_lflag &= ~tcflag_t(ECHO)
        hidden.c_lflag |= tcflag_t(ECHONL)
        TerminalRestore.arm(descriptor: descriptor, settings: saved)
        defer { TerminalRestore.disarm() }
        // TCSAFLUSH: what was typed before the prompt (and shown, echo being on then) is dropped.
        guard tcsetattr(descriptor, TCSAFLUSH, &hidden) == 0 else {
            return .failure(PingKeyring.InputFailure(reason: "cannot turn the terminal's echo off: " + String(cString: strerror(errno))))
        }
        write(prompt, to: output)
        let line = readLineAsIs(descriptor)
        tcsetattr(descriptor, TCSANOW, &saved)
        if case .success(let bytes) = line, bytes.last != 0x0A { write("\n", to: output) }
        return line
    }

    /// Bytes up to and with the first newline, or to the end of input.
    private static func readLineAsIs(_ descriptor: Int32) -> Result<Data, PingKeyring.InputFailure> {
        var line = Data()
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count == 1 {
                line.append(byte)
                if byte == 0x0A { return .success(line) }
            } else if count == 0 {
                return .success(line)
            } else if errno != EINTR {
                return .failure(PingKeyring.InputFailure(reason: String(cString: strerror(errno))))
            }
        }
    }

    private static func write(_ text: String, to descriptor: Int32) {
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if result > 0 {
                written += result
            } else if result < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}

/// Puts the terminal's settings back when a signal ends the process while echo is off, then lets
/// the signal do what it would have done (the default action, re-raised).
private enum TerminalRestore {
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// The settings to put back and where, for the handler. A C signal handler cannot capture
    /// anything, so they are globals; `nonisolated(unsafe)` is sound here because they are written
    /// only while no handler is installed (before ``arm(descriptor:settings:)`` installs it and after
    /// ``disarm()`` removed it: sigaction orders the writes with the handler's reads), and the
    /// handler only reads them.
    nonisolated(unsafe) static var descriptor: Int32 = -1
    nonisolated(unsafe) static var settings = termios()
    nonisolated(unsafe) static var previous: [sigaction] = []

    static func arm(descriptor: Int32, settings: termios) {
        Self.descriptor = descriptor
        Self.settings = settings
        var action = sigaction()
        action.__sigaction_handler.sa_handler = restoreAndRaise
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        previous = signals.map { signal in
            var old = sigaction()
            sigaction(signal, &action, &old)
            return old
        }
    }

    static func disarm() {
        for (signal, old) in zip(signals, previous) {
            var old = old
            sigaction(signal, &old, nil)
        }
        previous = []
        descriptor = -1
    }
}

/// The handler: only async-signal-safe calls (tcsetattr, signal, raise).
private func restoreAndRaise(_ signal: Int32) {
    if TerminalRestore.descriptor >= 0 {
        var settings = TerminalRestore.settings
        tcsetattr(TerminalRestore.descriptor, TCSANOW, &settings)
    }
    Glibc.signal(signal, SIG_DFL)
    raise(signal)
}
