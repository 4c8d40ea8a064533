internal import CLibSecret
import Locking

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
        InFlightCalls.shared.remove(self)
        guard let continuation else { return false }
        if case .failure = result { g_cancellable_cancel(cancellable.pointer) }
        continuation.resume(with: result)
        return true
    }

    /// Runs the call: `start` is invoked on the GLib loop thread and must start exactly one
    /// asynchronous libsecret operation that eventually calls `finish`. Throws the operation's
    /// error, `SecretServiceError.timedOut` at `deadline`, or `CancellationError`.
    ///
    /// A call that waits on the provider (`dependsOnProvider`, all but connecting to the bus) also
    /// ends, with `.disconnected`, as soon as the bus reports that the provider went away: a
    /// method call would get the bus's NoReply anyway, but libsecret 0.20.5 waits for a prompt's
    /// Completed signal forever when the provider vanishes in the middle of it.
    @discardableResult
    static func run(
        operation: String,
        deadline: Deadline,
        dependsOnProvider: Bool = true,
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
                    if dependsOnProvider {
                        InFlightCalls.shared.add(call) {
                            call.finish(.failure(SecretServiceError(
                                .disconnected, operation: operation,
                                message: "the Secret Service provider went away during the call.")))
                        }
                        // Cancelled from another thread since the check above: its `finish` may
                        // have run before the entry existed, which would then never be removed.
                        if call.isFinished { InFlightCalls.shared.remove(call) }
                    }
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

/// The provider-dependent calls in flight, so that they can end at once when the provider goes away.
final class InFlightCalls: Sendable {
    static let shared = InFlightCalls()

    private struct Entry {
        /// ``ProviderChanges/epoch`` when the call started.
        let epoch: UInt64
        let fail: @Sendable () -> Void
    }
    private let calls = Locked<[ObjectIdentifier: Entry]>([:])

    /// Registers `call` (removed again by `remove`, which `PendingCall.finish` calls).
    func add(_ call: AnyObject, fail: @escaping @Sendable () -> Void) {
        let entry = Entry(epoch: ProviderChanges.epoch, fail: fail)
        calls.withLock { $0[ObjectIdentifier(call)] = entry }
    }

    func remove(_ call: AnyObject) {
        _ = calls.withLock { $0.removeValue(forKey: ObjectIdentifier(call)) }
    }

    /// Fails every call that started before the provider change that made the epoch `epoch`.
    /// Runs on the loop thread: failing a call cancels its GCancellable, and libsecret's cancel
    /// handlers must run where libsecret runs.
    func providerWentAway(epoch: UInt64) {
        GLibLoop.shared.perform { [self] in
            let stale = calls.withLock { calls in calls.values.filter { $0.epoch < epoch } }
            for entry in stale { entry.fail() }
        }
    }
}
