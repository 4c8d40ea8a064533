import Foundation
import Testing
@testable import SecretService
import Waiting

/// The one waiter, its deadlines and its cancellation, on the real loop thread, without D-Bus.
@Suite("OneShot: deadlines, cancellation, exactly once")
struct WaiterTests {
    @Test func aWaitThatNeverEndsEndsAtItsDeadline() async {
        let started = ContinuousClock.now
        let result = await OneShot<Int, SecretServiceError>(operation: "never", deadline: Deadline(timeout: .milliseconds(200))).wait()
        guard case .failure(let error) = result else { Issue.record("expected a timeout"); return }
        #expect(error.code == .timedOut)
        #expect(error.message.contains("200 ms"))
        // Never early; "late" is only guarded against a hang (the machine may be busy).
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(190) && elapsed < .seconds(30))
    }

    /// A deadline paused by ``DeadlinePauses`` (a prompt on screen) stands still while the pause
    /// is open, and falls due once the time it had left has passed after it. (Lower bounds only:
    /// a loaded machine makes every sleep longer, never shorter.)
    @Test func aPausedDeadlineWaitsOutThePauseAndThenItsTimeLeft() async {
        let pauses = DeadlinePauses()
        pauses.begin()
        let waiter = OneShot<Int, SecretServiceError>(operation: "paused", deadline: Deadline(timeout: .milliseconds(300), pausedBy: pauses))
        let pause = Task {
            try? await Task.sleep(for: .milliseconds(1500))
            #expect(!waiter.hasEnded, "the deadline stood still during the pause")
            let ended = ContinuousClock.now
            pauses.end()
            return ended
        }
        let result = await waiter.wait()
        let woke = ContinuousClock.now
        let ended = await pause.value
        guard case .failure(let error) = result else { Issue.record("expected the deadline to end the wait"); return }
        #expect(error.code == .timedOut)
        let afterPause = woke - ended
        #expect(afterPause >= .milliseconds(290), "its 300 ms left counted only after the pause: \(afterPause)")
        #expect(!pauses.isPaused)
    }

    /// Overlapping pauses count their time once; a deadline made during a pause counts only the
    /// pause from then on. Bounds from the clock read around each step, not from the sleeps.
    @Test func overlappingPausesCountOnceAndALaterDeadlineOnlyWhatFollows() async throws {
        let pauses = DeadlinePauses()
        let beforeFirst = ContinuousClock.now
        pauses.begin()
        let afterFirst = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(100))
        let beforeMade = ContinuousClock.now
        let later = Deadline(timeout: .seconds(10), pausedBy: pauses)
        let instantWhenMade = later.instant
        let afterMade = ContinuousClock.now
        pauses.begin()
        try await Task.sleep(for: .milliseconds(200))
        pauses.end()
        try await Task.sleep(for: .milliseconds(100))
        let beforeLast = ContinuousClock.now
        pauses.end()
        let afterLast = ContinuousClock.now
        let total = pauses.total
        // Counted twice, the inner 200 ms would make the total longer than the time that passed.
        #expect(total >= beforeLast - afterFirst && total <= afterLast - beforeFirst, "one pause: \(total)")
        let moved = later.instant - instantWhenMade
        #expect(moved >= beforeLast - afterMade && moved <= afterLast - beforeMade, "moved by the pause after it was made: \(moved)")
        #expect(later.paused(by: pauses) == later, "already paused by them")
        let unpaused = Deadline(timeout: .seconds(10))
        #expect(unpaused.paused(by: pauses).instant == unpaused.instant, "moves on only from now")
    }

    @Test func aResultBeforeTheDeadlineIsReturned() async throws {
        let value = try await OneShot<Int, SecretServiceError>(operation: "quick", deadline: Deadline(timeout: .seconds(5))).value { $0.finish(.success(42)) }
        #expect(value == 42)
    }

    @Test func lateResultsAreDroppedAndEndHooksRunOnce() async {
        let ends = Counter()
        let waiter = OneShot<Int, SecretServiceError>(operation: "late", deadline: Deadline(timeout: .milliseconds(50)))
        waiter.onEnd { _ in ends.increment() }
        guard case .failure(let error) = await waiter.wait() else { Issue.record("expected the deadline to end the wait"); return }
        #expect(error.code == .timedOut)
        #expect(waiter.finish(.success(1)) == false, "the wait already ended")
        #expect(waiter.hasEnded)
        #expect(ends.value == 1)
    }

    @Test func cancellationEndsTheWaitOnTheLoopThreadAtOnce() async {
        let endedOnLoop = Counter()
        let waiter = OneShot<Int, SecretServiceError>(operation: "cancel", deadline: Deadline(timeout: .seconds(30)))
        waiter.onEnd { _ in if LoopThread.shared.isCurrent { endedOnLoop.increment() } }
        let task = Task { await waiter.wait() }
        try? await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        task.cancel()
        guard case .failure(let error) = await task.value else { Issue.record("expected cancellation"); return }
        #expect(error.code == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(20), "at once, not at the 30 s deadline")
        #expect(endedOnLoop.value == 1, "undoing a cancelled call (a prompt's Dismiss) happens on the loop thread")
    }

    @Test func anAlreadyCancelledTaskNeverStartsItsCall() async {
        let started = Counter()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await OneShot<Int, SecretServiceError>(operation: "pre-cancelled", deadline: Deadline(timeout: .seconds(30))).wait { _ in
                started.increment()
            }
        }
        guard case .failure(let error) = await task.value else { Issue.record("expected cancellation"); return }
        #expect(error.code == .cancelled)
        try? await Task.sleep(for: .milliseconds(50))
        #expect(started.value == 0)
    }

    @Test func thousandsOfConcurrentWaitsEachEndExactlyOnce() async throws {
        let waiters = (0..<5000).map { _ in OneShot<Int, SecretServiceError>(operation: "many", deadline: Deadline(timeout: .seconds(60))) }
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, waiter) in waiters.enumerated() {
                group.addTask {
                    try await waiter.value { waiter in LoopThread.shared.perform { waiter.finish(.success(index)) } }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == (0..<5000).reduce(0, +))
        #expect(!waiters.contains { LoopThread.timekeeper.contains($0) }, "ended waits leave no deadline behind")
    }

    @Test func anEnormousTimeoutNeitherTrapsNorExpires() async throws {
        #expect(LoopThread.milliseconds(.seconds(Int64.max)) == UInt32.max)
        #expect(LoopThread.milliseconds(.seconds(-5)) == 0)
        #expect(LoopThread.milliseconds(.nanoseconds(1)) == 1, "rounded up, never early")
        let deadline = Deadline(timeout: .seconds(Int64.max))
        #expect(deadline.remaining != nil)
        let value = try await OneShot<Int, SecretServiceError>(operation: "forever", deadline: deadline).value { waiter in
            LoopThread.shared.perform { waiter.finish(.success(7)) }
        }
        #expect(value == 7)
    }

    @Test func theLoopThreadHasAShortName() async throws {
        // Wait until the loop thread has run something: GLib names a thread from inside it, once it
        // runs, so reading the names right after starting it could miss the name (a flaky run).
        await withCheckedContinuation { continuation in LoopThread.shared.perform { continuation.resume() } }
        // A thread that ended between the listing and the read is the only name allowed to be missing.
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
            procFileText("/proc/self/task/\($0)/comm")?.trimmingCharacters(in: .newlines)
        }
        #expect(names.contains("secret-service"), "\(names)")
    }

    /// A small procfs file's text, or nil when it is gone (its thread ended).
    private func procFileText(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }
}

@Suite("SharedWork: one run, each joiner with its own deadline")
struct SharedWorkTests {
    /// Work that takes `duration`, or fails with `.timedOut` when `deadline` comes first.
    static func slowWork(_ duration: Duration, runs: Counter) -> @Sendable (Deadline) async throws(SecretServiceError) -> Int {
        { deadline throws(SecretServiceError) in
            runs.increment()
            let waiter = OneShot<Int, SecretServiceError>(operation: "open", deadline: deadline)
            return try await waiter.value { waiter in
                LoopThread.shared.afterDelay(duration) { waiter.finish(.success(runs.value)) }
            }
        }
    }

    @Test func aJoinerOutlivesTheFirstCallersShorterDeadline() async throws {
        let shared = SharedWork<Int, SecretServiceError>(timekeeper: LoopThread.timekeeper)
        let runs = Counter()
        let work = Self.slowWork(.milliseconds(400), runs: runs)
        async let first = shared.value(operation: "open", deadline: Deadline(timeout: .milliseconds(150)), work)
        try await Task.sleep(for: .milliseconds(20))
        async let second = shared.value(operation: "open", deadline: Deadline(timeout: .seconds(5)), work)
        do {
            _ = try await first
            Issue.record("the first caller's own deadline should have ended its wait")
        } catch let error as SecretServiceError {
            #expect(error.code == .timedOut)
        }
        #expect(try await second >= 1, "the second caller gets a result within its own deadline")
    }

    @Test func aCancelledJoinerLeavesTheOthersWaiting() async throws {
        let shared = SharedWork<Int, SecretServiceError>(timekeeper: LoopThread.timekeeper)
        let runs = Counter()
        let gate = Gate()
        // The work ends only when the test opens the gate, so "left at once" is checked by order, not by a clock.
        let work: @Sendable (Deadline) async throws(SecretServiceError) -> Int = { deadline throws(SecretServiceError) in
            runs.increment()
            let waiter = OneShot<Int, SecretServiceError>(operation: "open", deadline: deadline)
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
        } catch let error as SecretServiceError {
            #expect(error.code == .cancelled, "the cancelled caller leaves on its cancellation, not at a deadline")
        }
        #expect(!gate.isOpen, "the cancelled caller left while the work was still running")
        gate.open()
        #expect(try await other.value == 1, "the other caller gets the one run's result")
        #expect(runs.value == 1)
    }

    /// Every caller gave up: the run is cancelled (a prompt it shows is dismissed), and a caller
    /// who comes afterwards gets a run of its own, not that cancellation.
    @Test func aRunEveryCallerLeftIsCancelledAndTheNextCallerGetsItsOwn() async throws {
        let shared = SharedWork<Int, SecretServiceError>(timekeeper: LoopThread.timekeeper)
        let runs = Counter(), cancelledRuns = Counter()
        let gate = Gate()
        // The first run waits for the gate (which stays shut) until it is cancelled; later runs end at once.
        let work: @Sendable (Deadline) async throws(SecretServiceError) -> Int = { deadline throws(SecretServiceError) in
            runs.increment()
            if runs.value > 1 { return runs.value }
            let waiter = OneShot<Int, SecretServiceError>(operation: "open", deadline: deadline)
            do throws(SecretServiceError) {
                return try await waiter.value { waiter in gate.whenOpened { waiter.finish(.success(1)) } }
            } catch {
                if error.code == .cancelled { cancelledRuns.increment() }
                throw error
            }
        }
        let first = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(60)), work) }
        let second = Task { try await shared.value(operation: "open", deadline: Deadline(timeout: .seconds(60)), work) }
        while shared.waitingCallers < 2 { try await Task.sleep(for: .milliseconds(10)) }
        first.cancel()
        second.cancel()
        for caller in [first, second] {
            await #expect(throws: SecretServiceError.self) { _ = try await caller.value }
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
