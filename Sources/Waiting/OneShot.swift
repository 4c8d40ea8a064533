import Locking

/// One wait that ends exactly once: by its result, by its deadline, by Task cancellation, or by
/// whoever else calls ``finish(_:)`` first (the provider going away, the connection closing). The
/// one waiter of the package: every D-Bus call, prompt, session opening, account lock, shared wait,
/// file keyring call and TPM command waits through it. (A hop to a thread that answers at once,
/// such as the D-Bus loop thread attaching a connection, is not a wait.)
///
/// - The deadline is kept by the wait's ``Timekeeper`` (one timer on its executor).
/// - Cancellation always ends the wait on that executor: what has to be undone then (dismissing a
///   prompt, cancelling a `GCancellable`, for SecretService's waits on its loop thread) runs there too.
/// - ``onEnd`` runs once, right after the wait ended, on the thread that ended it; it is where a
///   starter undoes what it set up (a reply registration, a prompt).
package final class OneShot<Value: Sendable, Failure: WaitFailure>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Result<Value, Failure>, Never>)
        case ended(Result<Value, Failure>)
    }

    /// What the wait is for, in errors ("read secret").
    package let operation: String
    package let deadline: Deadline
    /// Where the deadline fires and cancellation runs.
    package let timekeeper: Timekeeper
    private let state = Locked<State>(.idle)
    private let endHook = Locked<(@Sendable (Result<Value, Failure>) -> Void)?>(nil)

    package init(operation: String, deadline: Deadline, timekeeper: Timekeeper) {
        self.operation = operation
        self.deadline = deadline
        self.timekeeper = timekeeper
    }

    /// Sets what to run when the wait ends (replacing any earlier hook). If it has already ended,
    /// `hook` runs at once. Thread-safe.
    package func onEnd(_ hook: @escaping @Sendable (Result<Value, Failure>) -> Void) {
        let endedWith: Result<Value, Failure>? = state.withLock { state in
            if case .ended(let result) = state { return result }
            endHook.withLock { $0 = hook }
            return nil
        }
        if let endedWith { hook(endedWith) }
    }

    /// Whether the wait has ended.
    package var hasEnded: Bool {
        state.withLock { if case .ended = $0 { true } else { false } }
    }

    /// Ends the wait with `result` unless it has already ended; returns whether this call ended
    /// it. Thread-safe.
    @discardableResult
    package func finish(_ result: Result<Value, Failure>) -> Bool {
        let (ended, continuation) = state.withLock { state -> (Bool, CheckedContinuation<Result<Value, Failure>, Never>?) in
            switch state {
            case .ended: return (false, nil)
            case .idle:
                state = .ended(result)
                return (true, nil)
            case .waiting(let continuation):
                state = .ended(result)
                return (true, continuation)
            }
        }
        guard ended else { return false }
        timekeeper.remove(self)
        let hook = endHook.withLock { hook in defer { hook = nil }; return hook }
        hook?(result)
        continuation?.resume(returning: result)
        return true
    }

    /// Waits for the end. `start` runs once the deadline is armed, on the calling thread, and
    /// must arrange for ``finish(_:)`` to be called; it does not run when the wait ended before
    /// (the deadline had passed, or the Task was cancelled).
    package func wait(_ start: (OneShot<Value, Failure>) -> Void = { _ in }) async -> Result<Value, Failure> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let earlier: Result<Value, Failure>? = state.withLock { state in
                    switch state {
                    case .idle:
                        state = .waiting(continuation)
                        return nil
                    case .ended(let result):
                        return result
                    case .waiting:
                        preconditionFailure("OneShot.wait called twice")
                    }
                }
                if let earlier {
                    continuation.resume(returning: earlier)
                    return
                }
                guard deadline.remaining != nil else {
                    finish(.failure(.timedOut(operation, after: deadline.timeout)))
                    return
                }
                // Cancelled already: the handler's finish is on its way to the loop thread; the
                // call is not started meanwhile.
                guard !Task.isCancelled else { return }
                armDeadline()
                start(self)
            }
        } onCancel: {
            timekeeper.executor.perform { [self] in finish(.failure(.cancelled(operation))) }
        }
    }

    /// Ends the wait at its deadline; a deadline that moved on meanwhile (``DeadlinePauses``: a
    /// prompt was on screen) is armed again for its new instant instead.
    private func armDeadline() {
        // While a pause is open the deadline cannot fall due: look again a second later at the
        // earliest, not every time its (unchanged) time left has passed.
        let instant = deadline.isPaused ? max(deadline.instant, .now + .seconds(1)) : deadline.instant
        timekeeper.add(self, at: instant) { [self] in
            if deadline.remaining != nil, !hasEnded {
                armDeadline()
            } else {
                finish(.failure(.timedOut(operation, after: deadline.timeout)))
            }
        }
    }

    /// ``wait(_:)``, returning the value or throwing the error.
    package func value(_ start: (OneShot<Value, Failure>) -> Void = { _ in }) async throws(Failure) -> Value {
        try await wait(start).get()
    }
}
