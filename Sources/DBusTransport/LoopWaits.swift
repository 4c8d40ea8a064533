import Waiting

/// The transport's waits end on its loop thread (``LoopThread``): a call that ends early ends
/// there, so what it has to undo (a `GCancellable` to cancel, a reply registration, a prompt its
/// user dismisses) happens there, never on the caller's thread.
extension LoopThread: WaitExecutor {
    /// The deadlines of every wait on the transport: one timer on the loop thread.
    package static let timekeeper = Timekeeper(executor: LoopThread.shared)
}

extension OneShot where Failure == BusError {
    /// A transport wait: its deadline fires and its cancellation runs on the loop thread.
    package convenience init(operation: String, deadline: Deadline) {
        self.init(operation: operation, deadline: deadline, timekeeper: LoopThread.timekeeper)
    }
}

extension BusError: WaitFailure {
    /// The wait for `operation` reached its deadline.
    package static func timedOut(_ operation: String, after timeout: Duration) -> BusError {
        BusError(.timedOut, operation: operation, text: "waited \(timeout.secondsText), the whole timeout, to \(operation)")
    }

    /// The waiting task was cancelled.
    package static func cancelled(_ operation: String) -> BusError {
        BusError(.cancelled, operation: operation, text: "the task was cancelled")
    }

    /// Whether the code is ``Code/timedOut``.
    package var isTimedOut: Bool { code == .timedOut }
}
