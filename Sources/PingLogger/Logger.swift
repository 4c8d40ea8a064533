// PingLogger for Linux
// ====================
//
// The logging API of the Ping SDK (module `PingLogger` of ForgeRock/ping-ios-sdk, folder `Logger/`),
// so that SDK code that logs compiles unchanged on Linux.
//
// Turning logging on
// ------------------
// Nothing is logged by default: `LogManager.logger` starts as `LogManager.none`. An app turns logging
// on once, early, from any thread:
//
//     import PingLogger
//     LogManager.logger = LogManager.standard   // info, warning and error (debug: PINGSTORAGE_LOG_DEBUG=1)
//     LogManager.logger = LogManager.warning    // warnings and errors only
//
// or assigns its own type conforming to `Logger`. Library code logs through `LogManager.logger`:
//
//     LogManager.logger.i("Opened the default collection")
//     LogManager.logger.w("Collection is locked, asking to unlock", error: nil)
//
// Debug messages
// --------------
// `StandardLogger` drops debug messages unless the user sets PINGSTORAGE_LOG_DEBUG=1 (or true, yes,
// on): the journal keeps debug by default, unlike iOS's unified log, and SDK modules log request
// and response bodies, tokens among them, at debug.
//
// Levels
// ------
//   d  debug    detail for a developer chasing a bug             journal PRIORITY 7
//   i  info     normal events a support engineer wants to see     journal PRIORITY 6
//   w  warning  something failed or was retried but we carry on   journal PRIORITY 4
//   e  error    an operation failed for the caller                journal PRIORITY 3
//
// Where `LogManager.standard` writes
// ----------------------------------
// To the systemd journal when there is one (the counterpart of the unified log on iOS), through the
// journal's native protocol on `/run/systemd/journal/socket`, without libsystemd:
//
//     journalctl --user -f PINGSTORAGE_SUBSYSTEM=com.pingidentity.ios   # or: journalctl -t <program>
//
// Otherwise to standard error, one line per message:
//
//     2025-01-31T09:41:07.123Z [PingStorage] INFO Opened the default collection
//
// (UTC time with milliseconds, the `[PingStorage]` tag, the level in capitals, the message as
// given; a message that contains newlines is written as it is.) Whether there is a journal is
// decided once, by the first message: the socket must exist and accept that datagram.
// Sending never blocks: a message the journal cannot take at once (its queue is full) is dropped.
// Fields: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER (the program's name), PINGSTORAGE_SUBSYSTEM; an
// entry over 64 KiB travels in a sealed memfd, as journald allows (see `JournalSocket.swift`).
//
// Secrets
// -------
// Log what a support engineer needs (which item, which step, which error) and never secret bytes:
// no passwords, keys, tokens or item contents, not even truncated or encoded.
//
// Thread-safety
// -------------
// Every type here is `Sendable`; every call may be made from any thread or task at the same time.
// The module does not use Foundation (start-up time of command-line tools).

import Locking

/// A destination for the SDK's log messages, with one method per level.
///
/// The API of `PingLogger.Logger` in the iOS SDK. Conforming types must be `Sendable`: the shared
/// ``LogManager/logger`` is called from any thread or task at the same time.
public protocol Logger: Sendable {
    /// Logs a debug message: detail for a developer chasing a bug.
    /// - Parameter message: The debug message to be logged.
    func d(_ message: String)

    /// Logs an informational message: a normal event a support engineer wants to see.
    /// - Parameter message: The message to be logged.
    func i(_ message: String)

    /// Logs a warning: something failed or was retried, and the operation carries on.
    /// - Parameters:
    ///   - message: The warning message to be logged.
    ///   - error: An optional error associated with the warning.
    func w(_ message: String, error: (any Error)?)

    /// Logs an error: an operation failed for its caller.
    /// - Parameters:
    ///   - message: The error message to be logged.
    ///   - error: An optional error associated with the error message.
    func e(_ message: String, error: (any Error)?)
}

/// Access to the shared logger and to the built-in loggers (``none``, ``standard``, ``warning``).
///
/// An `actor` with a private initializer, as in the iOS SDK: it is never instantiated, only its
/// static members are used. Thread-safety: every static member may be used from any thread.
public actor LogManager {
    /// The shared logger. A `Locked` value makes reads and writes from any thread safe; the lock is held
    /// only to copy the reference in or out, never while logging.
    private static let shared = Locked<any Logger>(NoneLogger())

    private init() {}

    /// The logger the SDK logs through. It is ``none`` (log nothing) until the app sets it, for
    /// example to ``standard``.
    ///
    /// Thread-safety: may be read and set from any thread or task at the same time; a reader gets
    /// either the old or the new logger, whole.
    public static var logger: any Logger {
        get { shared.withLock { $0 } }
        set { shared.withLock { $0 = newValue } }
    }
}
