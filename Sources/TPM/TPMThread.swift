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
/// command has been running longer than the caller's timeout, later callers fail at once instead
/// of queueing behind it.
///
/// Thread-safety: any thread; ``run(_:timeout:_:)`` blocks the caller's thread until the result or
/// the deadline, ``run(_:deadline:_:)`` suspends the caller's task instead (the one to use from
/// Swift concurrency).
final class TPMThread: Sendable {
    private let queue = DispatchQueue(label: "com.pingidentity.PingStorage.TPM")
    /// When the command now running started; nil when none runs.
    private let runningSince = Locked<DispatchTime?>(nil)

    /// `body`'s result, or ``TPMError/Kind/timedOut`` after `timeout`.
    func run<Value: Sendable>(
        _ operation: String, timeout: Duration, _ body: @escaping @Sendable () -> Result<Value, TPMError>
    ) -> Result<Value, TPMError> {
        let nanoseconds = Self.nanoseconds(timeout)
        if let stuck = stuck(operation, timeout: timeout) { return .failure(stuck) }
        let result = Locked<Result<Value, TPMError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        queue.async { [runningSince] in
            runningSince.withLock { $0 = .now() }
            let value = body()
            runningSince.withLock { $0 = nil }
            result.withLock { $0 = value }
            done.signal()
        }
        guard done.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success, let value = result.withLock({ $0 }) else {
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
        return await wait.wait { [queue, runningSince] wait in
            queue.async {
                // Ended already (deadline, cancellation) before its turn came: not started.
                guard !wait.hasEnded else { return }
                runningSince.withLock { $0 = .now() }
                let value = body()
                runningSince.withLock { $0 = nil }
                wait.finish(value)
            }
        }
    }

    /// A failure at once when the command now running has run longer than `timeout`: later callers
    /// do not queue behind a hung TPM.
    private func stuck(_ operation: String, timeout: Duration) -> TPMError? {
        guard let since = runningSince.withLock({ $0 }),
              DispatchTime.now().uptimeNanoseconds - since.uptimeNanoseconds > Self.nanoseconds(timeout) else { return nil }
        return TPMError(.timedOut, "cannot \(operation): the TPM has not answered an earlier command for more than \(timeout); "
                        + "it may be hung or very busy (try again later)")
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
