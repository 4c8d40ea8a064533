import Dispatch
import Foundation
import Testing
import Waiting

@Suite("RememberedReads: one read per key, however callers interleave")
struct RememberedReadsTests {
    /// The interleaving CI once hit on a busy machine (two ReadAlias calls in one first `get`): the
    /// read ends, and before its caller's task runs again, another caller asks for the key.
    @Test func aCallerArrivingBeforeTheReadersTaskResumesDoesNotReadAgain() async throws {
        let reads = RememberedReads<String, String, WaitError>(timekeeper: .light)
        let readCount = Counter()
        let gate = Gate()
        let read: @Sendable (Deadline) async throws(WaitError) -> String = { deadline throws(WaitError) in
            readCount.increment()
            let waiter = OneShot<String, WaitError>(operation: "read", deadline: deadline, timekeeper: .light)
            return try await waiter.value { waiter in gate.whenOpened { waiter.finish(.success("/collection/login")) } }
        }
        let executor = HoldingExecutor()
        let first = Task(executorPreference: executor) {
            try await reads.value(for: "default", operation: "read", deadline: Deadline(timeout: .seconds(60)), read: read)
        }
        try await waitUntil("the first caller's read started") { readCount.value == 1 }
        executor.hold()
        gate.open()
        // The read has ended and its callers were told: the first caller's task waits, held.
        try await waitUntil("the first caller's task held after the read ended") { executor.heldJobs > 0 }

        let second = try await reads.value(for: "default", operation: "read", deadline: Deadline(timeout: .seconds(60)), read: read)
        executor.release()
        #expect(try await first.value == "/collection/login")
        #expect(second == "/collection/login")
        #expect(readCount.value == 1, "the second caller found the value the first read remembered")
    }

    @Test func aValueNotWorthRememberingIsReadAgain() async throws {
        let reads = RememberedReads<String, String, WaitError>(timekeeper: .light, rememberingOnly: { !$0.isEmpty })
        let readCount = Counter()
        for _ in 0..<2 {
            let value = try await reads.value(for: "gone", operation: "read", deadline: Deadline(timeout: .seconds(60))) { _ throws(WaitError) in
                readCount.increment()
                return ""
            }
            #expect(value == "")
        }
        #expect(readCount.value == 2, "an alias that named nothing is read again: it may have been created since")
    }

    /// Returns once `condition` holds; throws, naming `what`, when it did not within 30 s.
    private func waitUntil(_ what: String, _ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw WaitFailed(description: "not within 30 s: \(what)") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    private struct WaitFailed: Error, CustomStringConvertible { let description: String }
}

/// A task executor whose jobs the test can hold back: a task preferring it stops at its next
/// suspension point until `release()`.
final class HoldingExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `held` and `pending` are only touched under the lock.
    private let lock = NSLock()
    private let queue = DispatchQueue(label: "holding-executor")
    private var held = false
    private var pending: [UnownedJob] = []

    var heldJobs: Int { lock.withLock { pending.count } }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let runNow = lock.withLock { () -> Bool in
            if held { pending.append(job) }
            return !held
        }
        if runNow { run(job) }
    }

    func hold() { lock.withLock { held = true } }

    func release() {
        let jobs = lock.withLock { () -> [UnownedJob] in
            held = false
            defer { pending = [] }
            return pending
        }
        jobs.forEach(run)
    }

    private func run(_ job: UnownedJob) {
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
