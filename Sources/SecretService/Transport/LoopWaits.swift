import Waiting

/// SecretService's waits end on its loop thread (``LoopThread``): a call that ends early ends
/// there, so what it has to undo (a prompt to dismiss, a `GCancellable` to cancel, a reply
/// registration) happens there, never on the caller's thread.
extension LoopThread: WaitExecutor {
    /// The deadlines of every SecretService wait: one timer on the loop thread.
    static let timekeeper = Timekeeper(executor: LoopThread.shared)
}

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
