import Dispatch
import Locking
import Waiting

/// A TPM failure: why, for a person (never secret bytes).
package struct TPMError: WaitFailure, Equatable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Sendable, Equatable {
        /// No TPM is reachable (``TPMChoice/none(reason:)``), or tpm2-tss cannot be loaded.
        case unavailable
        /// The TPM did not answer by the deadline (it may still be working on the command).
        case timedOut
        /// The TPM or tpm2-tss refused or failed the command.
        case failed
        /// The TPM refused to load a key's blobs as not its own (TPM_RC_INTEGRITY): they were made
        /// by another TPM, or by this one before it was cleared (new seeds).
        case foreignKey
        /// The waiting Task was cancelled (the command, if it started, runs to its end).
        case cancelled
    }
    package let kind: Kind
    package let message: String
    package var description: String { message }

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package static func timedOut(_ operation: String, after timeout: Duration) -> TPMError {
        TPMError(.timedOut, "cannot \(operation): the TPM did not answer within \(timeout) (it may be hung or very busy)")
    }

    package static func cancelled(_ operation: String) -> TPMError {
        TPMError(.cancelled, "cannot \(operation): cancelled")
    }

    package var isTimedOut: Bool { kind == .timedOut }
}

/// Runs TPM commands one at a time on a dispatch queue of their own (never Swift's cooperative
/// pool), each with a deadline: a caller waits at most `timeout`, then gets
/// ``TPMError/Kind/timedOut`` while the command, which tpm2-tss cannot cancel, goes on. While a
/// command runs that a caller gave up on (or that has run longer than the caller's timeout), later
/// callers fail at once instead of queueing behind it; a command whose caller gave up before its
/// turn came is not started.
///
/// Thread-safety: any thread; ``run(_:timeout:_:)`` blocks the caller's thread until the result or
/// the deadline, ``run(_:deadline:_:)`` suspends the caller's task instead (the one to use from
/// Swift concurrency).
final class TPMThread: Sendable {
    private let queue = DispatchQueue(label: "com.pingidentity.PingStorage.TPM")
    /// The command now running: when it started, and whether a caller gave up on it; nil when none runs.
    private let running = Locked<(since: DispatchTime, abandoned: Bool)?>(nil)

    /// `body`'s result, or ``TPMError/Kind/timedOut`` after `timeout`.
    func run<Value: Sendable>(
        _ operation: String, timeout: Duration, _ body: @escaping @Sendable () -> Result<Value, TPMError>
    ) -> Result<Value, TPMError> {
        if let stuck = stuck(operation, timeout: timeout) { return .failure(stuck) }
        let result = Locked<Result<Value, TPMError>?>(nil)
        let gaveUp = Locked(false)
        let done = DispatchSemaphore(value: 0)
        queue.async { [self] in
            guard !gaveUp.withLock({ $0 }) else { return }
            result.withLock { $0 = execute(body) }
            done.signal()
        }
        guard done.wait(timeout: .now() + .nanoseconds(Int(Self.nanoseconds(timeout)))) == .success, let value = result.withLock({ $0 }) else {
            gaveUp.withLock { $0 = true }
            abandon()
            return .failure(.timedOut(operation, after: timeout))
        }
        return value
    }

    /// `body`'s result, or ``TPMError/Kind/timedOut`` at `deadline`, or ``TPMError/Kind/cancelled``:
    /// the caller's task is suspended meanwhile (a ``OneShot`` resumed by the TPM queue), so no
    /// thread of Swift's pool waits for the TPM.
    func run<Value: Sendable>(
        _ operation: String, deadline: Deadline, _ body: @escaping @Sendable () -> Result<Value, TPMError>
    ) async -> Result<Value, TPMError> {
        if let stuck = stuck(operation, timeout: deadline.timeout) { return .failure(stuck) }
        let wait = OneShot<Value, TPMError>(operation: operation, deadline: deadline, timekeeper: .light)
        let result = await wait.wait { [self] wait in
            queue.async { [self] in
                // Ended already (deadline, cancellation) before its turn came: not started.
                guard !wait.hasEnded else { return }
                wait.finish(execute(body))
            }
        }
        if case .failure(let error) = result, error.kind == .timedOut { abandon() }
        return result
    }

    /// Runs `body` on the queue, recording that it runs.
    private func execute<Value>(_ body: () -> Result<Value, TPMError>) -> Result<Value, TPMError> {
        running.withLock { $0 = (.now(), false) }
        defer { running.withLock { $0 = nil } }
        return body()
    }

    /// A caller gave up waiting: the command now running (if any) is taken as hung.
    private func abandon() {
        running.withLock { $0?.abandoned = true }
    }

    /// A failure at once when the command now running was given up on, or has run longer than
    /// `timeout`: later callers do not queue behind a hung TPM.
    private func stuck(_ operation: String, timeout: Duration) -> TPMError? {
        guard let now = running.withLock({ $0 }),
              now.abandoned || DispatchTime.now().uptimeNanoseconds - now.since.uptimeNanoseconds > Self.nanoseconds(timeout) else {
            return nil
        }
        return TPMError(.timedOut, "cannot \(operation): the TPM has not answered an earlier command (a caller gave up after its "
                        + "deadline); it may be hung or very busy (try again later)")
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
