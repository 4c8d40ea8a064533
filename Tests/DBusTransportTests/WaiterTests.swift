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

