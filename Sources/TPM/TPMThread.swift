import Dispatch
import Locking

/// A TPM failure: why, for a person (never secret bytes).
package struct TPMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Sendable, Equatable {
        /// No TPM is reachable (``TPMChoice/none(reason:)``), or tpm2-tss cannot be loaded.
        case unavailable
        /// The TPM did not answer by the deadline (it may still be working on the command).
        case timedOut
        /// The TPM or tpm2-tss refused or failed the command.
        case failed
    }
    package let kind: Kind
    package let message: String
    package var description: String { message }

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}

/// Runs TPM commands one at a time on a dispatch queue of their own (never Swift's cooperative
/// pool), each with a deadline: a caller waits at most `timeout`, then gets
/// ``TPMError/Kind/timedOut`` while the command, which tpm2-tss cannot cancel, goes on. While a
/// command has been running longer than the caller's timeout, later callers fail at once instead
/// of queueing behind it.
///
/// Thread-safety: any thread; the caller's thread blocks until the result or the deadline.
final class TPMThread: Sendable {
    private let queue = DispatchQueue(label: "com.pingidentity.PingStorage.TPM")
    /// When the command now running started; nil when none runs.
    private let runningSince = Locked<DispatchTime?>(nil)

    /// `body`'s result, or ``TPMError/Kind/timedOut`` after `timeout`.
    func run<Value: Sendable>(
        _ operation: String, timeout: Duration, _ body: @escaping @Sendable () -> Result<Value, TPMError>
    ) -> Result<Value, TPMError> {
        let nanoseconds = UInt64(timeout.components.seconds) * 1_000_000_000 + UInt64(timeout.components.attoseconds / 1_000_000_000)
        if let since = runningSince.withLock({ $0 }), DispatchTime.now().uptimeNanoseconds - since.uptimeNanoseconds > nanoseconds {
            return .failure(TPMError(.timedOut, "cannot \(operation): the TPM has not answered an earlier command for more than \(timeout); "
                                     + "it may be hung or very busy (try again later)"))
        }
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
            return .failure(TPMError(.timedOut, "cannot \(operation): the TPM did not answer within \(timeout) (it may be hung or very busy)"))
        }
        return value
    }
}
