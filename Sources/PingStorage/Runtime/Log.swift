import Locking
import PingLogger

/// PingStorage's log: what a support engineer needs (the backend and why, the provider reached,
/// retries, provider quirks handled, items adopted or collapsed, failures, timings), through the
/// SDK's shared logger, `LogManager.logger`, which logs nothing until the app sets it.
/// SecretService's diagnostic events are forwarded here (by the Secret Service connection, ``SecretServiceConnection``). Never secret bytes: messages name
/// accounts, services, item paths, key ids and error kinds, never values or keys.
enum Log {
    /// Detail for a developer: each operation's duration.
    static func debug(_ message: @autoclosure () -> String) {
        emit(message) { $0.d($1) }
    }

    /// A normal event: the backend chosen, a connection, an item adopted.
    static func info(_ message: @autoclosure () -> String) {
        emit(message) { $0.i($1) }
    }

    /// Something failed, was retried or was repaired, and the operation goes on or fails. The
    /// logger appends the error's description, which for the library's errors is the iOS case's
    /// name alone (`unableToRetrieve(locked)`): what it says and the developer detail are added to
    /// the message here (they never hold secret bytes).
    static func warning(_ message: @autoclosure () -> String, error: (any Error)? = nil) {
        emit({ message() + (error.map(explanation) ?? "") }) { $0.w($1, error: error) }
    }

    /// `: what happened and what to do [detail]` for the library's errors; empty for others, whose
    /// description the logger prints.
    private static func explanation(_ error: any Error) -> String {
        switch error {
        case let error as KeychainError:
            guard let details = error.details else { return "" }
            return ": " + details.description + (details.detail.map { " [\($0)]" } ?? "")
        case let error as EncryptorError:
            return ": " + error.errorMessage
        default:
            return ""
        }
    }

    /// Also receive every message, as logged (tests check that no secret reaches the log). Several
    /// at once: suites that run in parallel each watch their own.
    private static let observers = Locked<[Int: LogObserver]>([:])
    private static let nextObserver = Locked(0)

    /// Sends every message from now on to `receive` too, until ``removeObserver(_:)`` with the
    /// returned id.
    package static func addObserver(_ receive: @escaping @Sendable (String) -> Void) -> Int {
        let id = nextObserver.withLock { id in defer { id += 1 }; return id }
        observers.withLock { $0[id] = LogObserver(receive: receive) }
        return id
    }

    package static func removeObserver(_ id: Int) {
        _ = observers.withLock { $0.removeValue(forKey: id) }
    }

    /// Whether `logger` drops everything: the exact ``NoneLogger``, the default. A subclass of it
    /// (which iOS-style tests write, `NoneLogger` not being final) may log.
    static func drops(_ logger: any Logger) -> Bool {
        type(of: logger) == NoneLogger.self
    }

    private static func emit(_ message: () -> String, _ send: (any Logger, String) -> Void) {
        let logger = LogManager.logger
        let observers = Self.observers.withLock { Array($0.values) }
        // Nothing is built when nobody listens.
        guard !observers.isEmpty || !drops(logger) else { return }
        let text = "PingStorage: " + message()
        send(logger, text)
        for observer in observers { observer.receive(text) }
    }
}

/// A receiver of every message ``Log`` emits (for tests). A struct, not a bare closure: see
/// ``Locked`` on why.
private struct LogObserver: Sendable {
    let receive: @Sendable (String) -> Void
}

extension Duration {
    /// "12.3 ms", for log messages.
    var milliseconds: String {
        let microseconds = components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
        return "\(microseconds / 1000).\(microseconds % 1000 / 100) ms"
    }
}
