import Glibc

/// The logger behind ``LogManager/standard``: writes to the systemd journal when there is one,
/// otherwise to standard error (see the notes at the top of `Logger.swift`). Informational
/// messages, warnings and errors always; **debug messages only when the user turns them on** with
/// the environment variable `PINGSTORAGE_LOG_DEBUG=1`, as iOS's unified log keeps no debug message
/// unless enabled: the journal keeps debug messages by default, and SDK modules log request and
/// response bodies, tokens among them, at debug.
///
/// All `StandardLogger`s of the process share one journal connection, so creating them is cheap.
/// A message with an error gets `", Error: <description of the error>"` appended, as on iOS.
///
/// Thread-safety: safe from any thread or task at the same time. Logging never blocks on the
/// journal; a line to standard error is one `write(2)`.
///
/// `@unchecked Sendable` because the class is not `final` (``WarningLogger`` inherits from it, as
/// on iOS) and the compiler does not check non-final classes. It is safe: the stored properties
/// are `let`s of `Sendable` types, its own subclass adds no stored property, and the class is not
/// `open`, so no other module can subclass it except with `@testable` (as iOS's tests do); such a
/// subclass must keep its own state thread-safe, as every ``Logger`` must.
public class StandardLogger: Logger, @unchecked Sendable {
    /// Where the messages go.
    let destination: LogDestination
    /// Whether ``d(_:)`` logs: the environment's ``debugVariable`` for `StandardLogger()`.
    let logsDebugMessages: Bool

    /// The environment variable that turns debug messages on: `1`, `true`, `yes` or `on` (any
    /// case); unset or any other value leaves them off.
    public static let debugVariable = "PINGSTORAGE_LOG_DEBUG"

    /// Whether this process's environment turns debug messages on; read once, by the first
    /// `StandardLogger()`.
    static let debugTurnedOnByEnvironment: Bool = debugTurnedOn(by: getenv(debugVariable).map { String(cString: $0) })

    /// Whether `value` of ``debugVariable`` turns debug messages on.
    package static func debugTurnedOn(by value: String?) -> Bool {
        guard let value else { return false }
        return ["1", "true", "yes", "on"].contains(value.lowercased())
    }

    /// Creates a logger that writes to the process's shared journal-or-stderr destination, with
    /// debug messages when `PINGSTORAGE_LOG_DEBUG` turns them on (see ``debugVariable``).
    ///
    /// (The iOS initializer takes an optional `OSLog`, which does not exist on Linux.) Designated,
    /// as on iOS, so that a subclass in a test target inherits it.
    public init() {
        destination = .standard
        logsDebugMessages = Self.debugTurnedOnByEnvironment
    }

    /// Creates a logger that writes to `destination` (tests use their own socket or pipe).
    package init(destination: LogDestination, logsDebugMessages: Bool) {
        self.destination = destination
        self.logsDebugMessages = logsDebugMessages
    }

    /// Logs a debug message (journal priority 7, `DEBUG` on standard error) when debug messages
    /// are turned on (``debugVariable``); otherwise drops it.
    public func d(_ message: String) {
        guard logsDebugMessages else { return }
        destination.write(.debug, message)
    }

    /// Logs an informational message (journal priority 6, `INFO` on standard error).
    public func i(_ message: String) {
        destination.write(.info, message)
    }

    /// Logs a warning and the error, if any (journal priority 4, `WARNING` on standard error).
    public func w(_ message: String, error: (any Error)?) {
        destination.write(.warning, Self.text(message, error))
    }

    /// Logs an error message and the error, if any (journal priority 3, `ERROR` on standard error).
    public func e(_ message: String, error: (any Error)?) {
        destination.write(.error, Self.text(message, error))
    }

    /// `message`, then `", Error: "` and the error's description when there is an error.
    static func text(_ message: String, _ error: (any Error)?) -> String {
        guard let error else { return message }
        return message + ", Error: " + String(describing: error)
    }
}

/// The logger behind ``LogManager/warning``: a ``StandardLogger`` that drops debug and
/// informational messages and logs only warnings and errors.
///
/// Not `final`, as on iOS: a test target that imports the module with `@testable` may subclass it.
///
/// Thread-safety: as ``StandardLogger``; this subclass adds no state (`@unchecked Sendable` for
/// the reason given there).
public class WarningLogger: StandardLogger, @unchecked Sendable {
    /// Drops the message: this logger logs only warnings and errors.
    public override func d(_ message: String) {}

    /// Drops the message: this logger logs only warnings and errors.
    public override func i(_ message: String) {}
}

extension LogManager {
    /// A new ``StandardLogger``: info, warnings and errors, and debug messages when the user turns
    /// them on (`PINGSTORAGE_LOG_DEBUG=1`), to the systemd journal or else standard error.
    /// Thread-safety: safe from any thread; all standard loggers share one journal connection.
    public static var standard: any Logger { StandardLogger() }

    /// A new ``WarningLogger``: warnings and errors only, to the systemd journal or else standard
    /// error. Thread-safety: safe from any thread.
    public static var warning: any Logger { WarningLogger() }
}
