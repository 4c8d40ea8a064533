import Locking
import DBusTransport

/// One event a support engineer needs to see what the client did: which provider it reached and
/// how, what it retried, which provider quirk it handled, how long a connection or a prompt took.
/// Never secret bytes: messages name providers, operations, object paths and error kinds only.
public struct SecretServiceDiagnostic: Sendable, Hashable, CustomStringConvertible {
    /// How much it matters.
    public enum Level: Int, Sendable, Hashable, Comparable {
        /// Detail for a developer (each call's duration).
        case debug
        /// A normal event (connected, prompt answered, quirk handled).
        case info
        /// Something failed and was retried, or a call ran out of time.
        case warning

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    /// How much it matters.
    public let level: Level
    /// What happened, in a sentence.
    public let message: String

    /// Creates an event.
    public init(_ level: Level, _ message: String) {
        self.level = level
        self.message = message
    }

    /// `level: message`.
    public var description: String { "\(level): \(message)" }
}

/// Where SecretService's diagnostic events go: nowhere until a receiver is set (a layer above
/// sets one that forwards to its logger).
///
/// Thread-safety: set it from any thread; the receiver is called from any thread, including the
/// library's own D-Bus thread, so it must return quickly and never block.
public enum SecretServiceDiagnostics {
    /// The handler in a struct: see ``Locked`` on why a bare closure must not be stored there.
    private struct Receiver: Sendable {
        let receive: @Sendable (SecretServiceDiagnostic) -> Void
    }
    private static let receiver = Locked<Receiver?>(nil)

    /// The receiver of every event; nil (the default) drops them without building their messages.
    public static var handler: (@Sendable (SecretServiceDiagnostic) -> Void)? {
        get { receiver.withLock { $0 }?.receive }
        set { receiver.withLock { $0 = newValue.map(Receiver.init) } }
    }

    /// Sets `handler` unless one is set already; true when it was set.
    @discardableResult
    public static func setHandlerIfNone(_ handler: @escaping @Sendable (SecretServiceDiagnostic) -> Void) -> Bool {
        receiver.withLock { current in
            guard current == nil else { return false }
            current = Receiver(receive: handler)
            return true
        }
    }

    /// Reports an event; `message` is built only when someone listens.
    static func report(_ level: SecretServiceDiagnostic.Level, _ message: @autoclosure () -> String) {
        guard let handler = receiver.withLock({ $0 }) else { return }
        handler.receive(SecretServiceDiagnostic(level, message()))
    }
}

/// Milliseconds since `start`, for messages ("12.3 ms").
func elapsedMilliseconds(since start: ContinuousClock.Instant) -> String {
    let elapsed = ContinuousClock.now - start
    let microseconds = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
    return "\(microseconds / 1000).\(microseconds % 1000 / 100) ms"
}
