import DBusTransport
import Waiting

/// SecretService's waits end on the transport's loop thread (``LoopThread``), as the transport's
/// own do: a prompt to dismiss is dismissed there.
extension OneShot where Failure == SecretServiceError {
    /// A SecretService wait: its deadline fires and its cancellation runs on the loop thread.
    convenience init(operation: String, deadline: Deadline) {
        self.init(operation: operation, deadline: deadline, timekeeper: LoopThread.timekeeper)
    }
}

extension SecretServiceError: WaitFailure {
    /// Whether the code is ``Code/timedOut``.
    package var isTimedOut: Bool { code == .timedOut }
}
