import Foundation
import Testing
@testable import DBusTransport
import Waiting

/// The one waiter, its deadlines and its cancellation, on the real loop thread, without D-Bus.
@Suite("OneShot: deadlines, cancellation, exactly once")
struct WaiterTests {
    @Test func aWaitThatNeverEndsEndsAtItsDeadline() async {
        let started = ContinuousClock.now
        let result = await OneShot<Int, BusError>(operation: "never", deadline: Deadline(timeout: .milliseconds(200))).wait()
        guard case .failure(let error) = result else { Issue.record("expected a timeout"); return }
        #expect(error.code == .timedOut)
        #expect(error.text.contains("200 ms"))
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
        let waiter = OneShot<Int, BusError>(operation: "paused", deadline: Deadline(timeout: .milliseconds(300), pausedBy: pauses))
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
        let value = try await OneShot<Int, BusError>(operation: "quick", deadline: Deadline(timeout: .seconds(5))).value { $0.finish(.success(42)) }
        #expect(value == 42)
    }

    @Test func lateResultsAreDroppedAndEndHooksRunOnce() async {
        let ends = Counter()
        let waiter = OneShot<Int, BusError>(operation: "late", deadline: Deadline(timeout: .milliseconds(50)))
        waiter.onEnd { _ in ends.increment() }
        guard case .failure(let error) = await waiter.wait() else { Issue.record("expected the deadline to end the wait"); return }
        #expect(error.code == .timedOut)
        #expect(waiter.finish(.success(1)) == false, "the wait already ended")
        #expect(waiter.hasEnded)
        #expect(ends.value == 1)
    }

    @Test func cancellationEndsTheWaitOnTheLoopThreadAtOnce() async {
        let endedOnLoop = Counter()
        let waiter = OneShot<Int, BusError>(operation: "cancel", deadline: Deadline(timeout: .seconds(30)))
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
            return await OneShot<Int, BusError>(operation: "pre-cancelled", deadline: Deadline(timeout: .seconds(30))).wait { _ in
                started.increment()
            }
        }
        guard case .failure(let error) = await task.value else { Issue.record("expected cancellation"); return }
        #expect(error.code == .cancelled)
        try? await Task.sleep(for: .milliseconds(50))
        #expect(started.value == 0)
    }

    @Test func thousandsOfConcurrentWaitsEachEndExactlyOnce() async throws {
        let waiters = (0..<5000).map { _ in OneShot<Int, BusError>(operation: "many", deadline: Deadline(timeout: .seconds(60))) }
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
        let value = try await OneShot<Int, BusError>(operation: "forever", deadline: deadline).value { waiter in
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
        #expect(names.contains("dbus-transport"), "\(names)")
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

