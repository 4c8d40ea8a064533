import Foundation

/// A thread of its own for work that blocks: libsecret's `_sync` functions and waiting for child
/// processes. Jobs run one at a time in submission order; Swift's cooperative thread pool never
/// waits on them (callers suspend until the job's result arrives).
final class BlockingThread: @unchecked Sendable {
    // @unchecked Sendable: `jobs` is only read or written with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    /// Starts the thread. It lives as long as the process.
    init(name: String) {
        let thread = Thread { [self] in self.loop() }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the thread and returns its result (or rethrows its error).
    func run<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            enqueue {
                do {
                    continuation.resume(returning: try body())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }
}
