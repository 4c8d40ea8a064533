import Dispatch
import Locking

/// The bridge for a synchronous API that must block its caller until async work ends
/// (``SecuredKey``'s, as iOS's `SecItem` calls do): the work runs as a Task that prefers an
/// executor of its own — one serial Dispatch queue, never one of Swift's cooperative threads — so
/// it ends even when every cooperative thread is blocked by such a caller (a caller on the pool
/// blocks its thread; with the work on the pool too, enough callers would leave it no thread).
///
/// Unstructured tasks do not inherit a task executor preference; work that starts one on behalf
/// of its caller (``SharedWork``, a transport negotiated ahead) gives it ``preferredExecutor``, a
/// task-local they do inherit: the bridge's executor inside bridged work, nil (the default, the
/// pool) elsewhere.
///
/// Thread-safety: any thread; ``run(backstop:_:)`` blocks the calling thread.
package enum BlockingBridge {
    private static let executor = QueueTaskExecutor(label: "com.pingidentity.blocking")

    /// The executor an unstructured task started on behalf of the current task should prefer:
    /// the bridge's inside bridged work, nil elsewhere.
    @TaskLocal package static var preferredExecutor: (any TaskExecutor)?

    /// Runs `body` on the bridge's executor and blocks the calling thread until it ends, or
    /// `backstop` passed (then nil, and the task is cancelled). `body`'s own deadlines should end it
    /// first; the backstop is for the bridge itself.
    package static func run<Value: Sendable>(
        backstop: Duration, _ body: @escaping @Sendable () async throws -> Value
    ) -> Result<Value, any Error>? {
        let outcome = Locked<Result<Value, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let executor = executor
        let task = Task(executorPreference: executor) {
            let result: Result<Value, any Error>
            do {
                result = .success(try await $preferredExecutor.withValue(executor) { try await body() })
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        let (seconds, attoseconds) = backstop.components
        let nanoseconds = max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        guard done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success, let result = outcome.withLock({ $0 }) else {
            task.cancel()
            return nil
        }
        return result
    }
}

/// A `TaskExecutor` on one serial Dispatch queue: its jobs run there, one at a time, on a
/// thread Dispatch gives that queue (not a cooperative one). Sendable: it holds only the queue.
final class QueueTaskExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
