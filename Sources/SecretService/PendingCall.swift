internal import CLibSecret

/// One libsecret call in flight: bridges its GLib callback to a Swift continuation that is resumed
/// exactly once — by the callback, by the deadline, or by Task cancellation, whichever comes first.
///
/// When the deadline or cancellation wins, the call's `GCancellable` is cancelled so that libsecret
/// stops waiting (and dismisses a prompt it may have opened); its late callback then finds the call
/// already finished and only releases what it received.
final class PendingCall<Value: Sendable>: Sendable {
    private enum State {
        case notStarted
        case waiting(CheckedContinuation<Value, any Error>)
        case finished
    }

    private let state = Locked<State>(.notStarted)
    private let timeout = Locked<TimeoutHandle?>(nil)
    /// Cancelled when the call ends early. GCancellable is documented as thread-safe.
    let cancellable: GObjectOwner<GCancellable>

    init() {
        cancellable = GObjectOwner(adopting: g_cancellable_new())
    }

    /// Whether the call has already ended (its result is no longer wanted).
    var isFinished: Bool {
        state.withLock { if case .finished = $0 { return true } else { return false } }
    }

    /// Ends the call with `result` unless it has already ended. Thread-safe; returns whether this
    /// result was the one delivered.
    @discardableResult
    func finish(_ result: Result<Value, any Error>) -> Bool {
        let continuation: CheckedContinuation<Value, any Error>? = state.withLock { state in
            switch state {
            case .finished:
                return nil
            case .notStarted:
                state = .finished
                return nil
            case .waiting(let continuation):
                state = .finished
                return continuation
            }
        }
        timeout.withLock { $0?.cancel(); $0 = nil }
        guard let continuation else { return false }
        if case .failure = result { g_cancellable_cancel(cancellable.pointer) }
        continuation.resume(with: result)
        return true
    }

    /// Runs the call: `start` is invoked on the GLib loop thread and must start exactly one
    /// asynchronous libsecret operation that eventually calls `finish`. Throws the operation's
    /// error, `SecretServiceError.timedOut` at `deadline`, or `CancellationError`.
    @discardableResult
    static func run(
        operation: String,
        deadline: Deadline,
        _ start: @escaping @Sendable (PendingCall<Value>) -> Void
    ) async throws -> Value {
        let call = PendingCall<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let installed = call.state.withLock { state -> Bool in
                    guard case .notStarted = state else { return false }
                    state = .waiting(continuation)
                    return true
                }
                guard installed else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                guard let remaining = deadline.remaining else {
                    call.finish(.failure(SecretServiceError.timedOut(operation, after: deadline.timeout)))
                    return
                }
                GLibLoop.shared.perform {
                    guard !call.isFinished else { return }
                    // The timer runs on the loop; the loop never blocks, so it always fires on time.
                    // It holds the call strongly (no weak reference: those allocate a side table per
                    // call); `finish` cancels the timer, which releases it.
                    let handle = GLibLoop.shared.addTimeout(after: remaining) {
                        call.finish(.failure(SecretServiceError.timedOut(operation, after: deadline.timeout)))
                    }
                    call.timeout.withLock { $0 = handle }
                    start(call)
                }
            }
        } onCancel: {
            call.finish(.failure(CancellationError()))
        }
    }
}

/// The point in time by which a whole public call (connection, retries and prompts included)
/// must have finished.
struct Deadline: Sendable {
    let timeout: Duration
    let instant: ContinuousClock.Instant

    init(timeout: Duration) {
        self.timeout = timeout
        self.instant = .now + timeout
    }

    /// Time left, or nil when the deadline has passed.
    var remaining: Duration? {
        let left = instant - .now
        return left > .zero ? left : nil
    }
}
