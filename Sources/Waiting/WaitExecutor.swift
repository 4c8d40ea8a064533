#if canImport(Dispatch)
import Dispatch
#endif

/// Where the waits of a ``Timekeeper`` end: the thread their deadlines fire on and their
/// cancellations run on, so that whatever a wait's end has to undo runs there too, never on the
/// caller's thread and never on Swift's cooperative pool. The toolkit does not build one in:
/// SecretService gives its GLib loop thread (D-Bus work undone on cancellation has to run there),
/// everything else ``QueueExecutor``.
package protocol WaitExecutor: Sendable {
    /// Runs `body` on the executor soon, in the order submitted. Callable from any thread.
    func perform(_ body: @escaping @Sendable () -> Void)
    /// Runs `fire` on the executor after `delay`. Callable from any thread.
    func afterDelay(_ delay: Duration, _ fire: @escaping @Sendable () -> Void)
}

/// A light ``WaitExecutor``: one serial Dispatch queue (a thread of its own while it has work,
/// not one of Swift's cooperative threads), for waits that undo nothing on a particular thread
/// (locks, shared work, remembered reads). Starting it starts no GLib loop.
package final class QueueExecutor: WaitExecutor {
    private let queue: DispatchQueue

    /// An executor on a new serial queue named `label`.
    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    package func perform(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    package func afterDelay(_ delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = delay.components
        // Clamped: a deadline a hundred years away (Deadline.longest) fits; more would overflow.
        let nanoseconds = seconds >= Int64.max / 1_000_000_000 ? Int64.max / 2 : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, nanoseconds))), execute: fire)
    }
}

/// The failures a wait can end with by itself, whatever the wait is for: a toolkit user's error
/// type conforms (SecretService's does), or uses ``WaitError``.
package protocol WaitFailure: Error, Sendable {
    /// The wait for `operation` reached its deadline, `timeout` after it was set.
    static func timedOut(_ operation: String, after timeout: Duration) -> Self
    /// The waiting Task was cancelled.
    static func cancelled(_ operation: String) -> Self
    /// Whether this is ``timedOut(_:after:)``.
    var isTimedOut: Bool { get }
}

/// The toolkit's own failure, for waits whose callers translate it themselves.
package enum WaitError: WaitFailure, Equatable {
    /// The wait for the operation reached its deadline, `after` the timeout it was given.
    case timedOut(String, after: Duration)
    /// The waiting Task was cancelled.
    case cancelled(String)

    package var isTimedOut: Bool {
        if case .timedOut = self { true } else { false }
    }
}
