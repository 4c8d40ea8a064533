import Foundation
import Testing
import Waiting

@Suite("SharedWork: one run, each joiner with its own deadline")
struct SharedWorkTests {
    /// Checked by order, not by a clock: the work ends only when the test opens the gate, which
    /// it does after the first caller's own short deadline ended its wait.
    @Test func aJoinerOutlivesTheFirstCallersShorterDeadline() async throws {
        let shared = SharedWork<Int, WaitError>(timekeeper: .light)
        let runs = Counter()
        let gate = Gate()
        let work: @Sendable (Deadline) async throws(WaitError) -> Int = { deadline throws(WaitError) in
            runs.increment()
            let waiter = OneShot<Int, WaitError>(operation: "open", deadline: deadline, timekeeper: .light)
            return try await waiter.value { waiter in gate.whenOpened { waiter.finish(.success(runs.value)) } }
        }
        let first = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .milliseconds(150)), work) }
        let second = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(600)), work) }
        do {
            _ = try await first.value
            Issue.record("the first caller's own deadline should have ended its wait")
        } catch let error as WaitError {
            #expect(error.isTimedOut)
        }
        gate.open()
        #expect(try await second.value >= 1, "the second caller gets a result within its own deadline")
    }

    @Test func aCancelledJoinerLeavesTheOthersWaiting() async throws {
        let shared = SharedWork<Int, WaitError>(timekeeper: .light)
        let runs = Counter()
        let gate = Gate()
        // The work ends only when the test opens the gate, so "left at once" is checked by order, not by a clock.
        let work: @Sendable (Deadline) async throws(WaitError) -> Int = { deadline throws(WaitError) in
            runs.increment()
            let waiter = OneShot<Int, WaitError>(operation: "open", deadline: deadline, timekeeper: .light)
            return try await waiter.value { waiter in gate.whenOpened { waiter.finish(.success(runs.value)) } }
        }
        let cancelled = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(60)), work) }
        try await Task.sleep(for: .milliseconds(20))
        let other = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(60)), work) }
        try await Task.sleep(for: .milliseconds(20))
        cancelled.cancel()
        do {
            _ = try await cancelled.value
            Issue.record("a cancelled caller gets no result")
        } catch let error as WaitError {
            #expect(error == .cancelled("open"), "the cancelled caller leaves on its cancellation, not at a deadline")
        }
        #expect(!gate.isOpen, "the cancelled caller left while the work was still running")
        gate.open()
        #expect(try await other.value == 1, "the other caller gets the one run's result")
        #expect(runs.value == 1)
    }

    /// Every caller gave up: the run is cancelled (a prompt it shows is dismissed), and a caller
    /// who comes afterwards gets a run of its own, not that cancellation.
    @Test func aRunEveryCallerLeftIsCancelledAndTheNextCallerGetsItsOwn() async throws {
        let shared = SharedWork<Int, WaitError>(timekeeper: .light)
        let runs = Counter(), cancelledRuns = Counter()
        let gate = Gate()
        // The first run waits for the gate (which stays shut) until it is cancelled; later runs end at once.
        let work: @Sendable (Deadline) async throws(WaitError) -> Int = { deadline throws(WaitError) in
            runs.increment()
            if runs.value > 1 { return runs.value }
            let waiter = OneShot<Int, WaitError>(operation: "open", deadline: deadline, timekeeper: .light)
            do throws(WaitError) {
                return try await waiter.value { waiter in gate.whenOpened { waiter.finish(.success(1)) } }
            } catch {
                if case .cancelled = error { cancelledRuns.increment() }
                throw error
            }
        }
        let first = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(60)), work) }
        let second = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(60)), work) }
        while shared.waitingCallers < 2 { try await Task.sleep(for: .milliseconds(10)) }
        first.cancel()
        second.cancel()
        for caller in [first, second] {
            await #expect(throws: WaitError.self) { _ = try await caller.value }
        }
        for _ in 0..<500 where cancelledRuns.value == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(cancelledRuns.value == 1, "the run no one waited for was cancelled")
        #expect(try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(60)), work) == 2,
                "a later caller gets a run of its own")
    }
}

/// Runs the actions given to it once the test opens it (at once, if already open).
final class Gate: @unchecked Sendable {
    // @unchecked Sendable: `opened` and `actions` are only touched under the lock.
    private let lock = NSLock()
    private var opened = false
    private var actions: [@Sendable () -> Void] = []
    var isOpen: Bool { lock.withLock { opened } }
    func whenOpened(_ action: @escaping @Sendable () -> Void) {
        let runNow = lock.withLock { () -> Bool in
            if opened { return true }
            actions.append(action)
            return false
        }
        if runNow { action() }
    }
    func open() {
        let waiting = lock.withLock { () -> [@Sendable () -> Void] in
            opened = true
            defer { actions = [] }
            return actions
        }
        waiting.forEach { $0() }
    }
}

final class Counter: @unchecked Sendable {
    // @unchecked Sendable: the count is only touched under the lock.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
