import Locking

/// The point in time by which a whole operation (connection, retries and prompts included) must
/// have ended.
package struct Deadline: Sendable, Hashable, Comparable {
    /// The timeout the deadline was made from, for messages.
    package let timeout: Duration
    package let instant: ContinuousClock.Instant

    /// The longest timeout honoured as given: beyond it (a hundred years), deadlines are clamped
    /// so that `.seconds(Int64.max)` neither traps nor overflows the clock.
    package static let longest = Duration.seconds(100 * 365 * 24 * 3600)

    /// A deadline `timeout` from now. Negative timeouts are already past.
    package init(timeout: Duration) {
        let clamped = min(max(timeout, .zero), Self.longest)
        self.timeout = clamped
        self.instant = .now + clamped
    }

    package init(instant: ContinuousClock.Instant, timeout: Duration) {
        self.instant = instant
        self.timeout = timeout
    }

    /// Time left, or nil when the deadline has passed.
    package var remaining: Duration? {
        let left = instant - .now
        return left > .zero ? left : nil
    }

    package static func < (a: Deadline, b: Deadline) -> Bool { a.instant < b.instant }
}

/// Every pending deadline of the waits that end on one ``WaitExecutor``, kept by one timer on it
/// that is armed for the earliest of them: the one deadline mechanism of those waits. Adding a
/// deadline later than the armed one costs a lock and no wake-up (most calls have the same timeout).
package final class Timekeeper: Sendable {
    private struct Entry {
        let instant: ContinuousClock.Instant
        let expire: @Sendable () -> Void
    }
    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        /// When the armed timer fires, if one is armed.
        var timerDue: ContinuousClock.Instant?
    }
    private let state = Locked(State())
    /// Where the deadlines fire and cancellations run.
    package let executor: any WaitExecutor

    /// The timekeeper of the waits that end on `executor`.
    package init(executor: any WaitExecutor) {
        self.executor = executor
    }

    /// The timekeeper of waits that undo nothing on a particular thread: a ``QueueExecutor`` of
    /// its own, started on first use (no GLib loop).
    package static let light = Timekeeper(executor: QueueExecutor(label: "com.pingidentity.waits"))

    /// Calls `expire` on the executor at `instant`, unless `owner` is removed first. Thread-safe.
    package func add(_ owner: AnyObject, at instant: ContinuousClock.Instant, expire: @escaping @Sendable () -> Void) {
        let arm = state.withLock { state -> Bool in
            state.entries[ObjectIdentifier(owner)] = Entry(instant: instant, expire: expire)
            if let due = state.timerDue, due <= instant { return false }
            state.timerDue = instant
            return true
        }
        if arm { armTimer(for: instant) }
    }

    /// Forgets `owner`'s deadline (harmless when it has none). Thread-safe.
    package func remove(_ owner: AnyObject) {
        _ = state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(owner)) }
    }

    /// Whether `owner` has a pending deadline (for tests).
    package func contains(_ owner: AnyObject) -> Bool { state.withLock { $0.entries[ObjectIdentifier(owner)] != nil } }

    private func armTimer(for instant: ContinuousClock.Instant) {
        executor.afterDelay(max(instant - .now, .zero)) { [self] in expireDue() }
    }

    /// Ends what is due and arms the timer for the next deadline (on the executor).
    private func expireDue() {
        let now = ContinuousClock.now
        let (due, next) = state.withLock { state -> ([Entry], ContinuousClock.Instant?) in
            let due = state.entries.filter { $0.value.instant <= now }
            for key in due.keys { state.entries[key] = nil }
            // An earlier timer may still be pending; forget only a due one.
            if let armed = state.timerDue, armed <= now { state.timerDue = nil }
            let next = state.entries.values.map(\.instant).min()
            if let next, state.timerDue.map({ next < $0 }) ?? true {
                state.timerDue = next
                return (Array(due.values), next)
            }
            return (Array(due.values), nil)
        }
        for entry in due { entry.expire() }
        if let next { armTimer(for: next) }
    }
}

extension Duration {
    /// "2.5 s", "250 ms": for messages.
    package var secondsText: String {
        let (seconds, attoseconds) = components
        let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow || seconds > 86_400 * 365 { return "\(seconds / 86_400) days" }
        let total = milliseconds + attoseconds / 1_000_000_000_000_000
        if total < 1000 { return "\(total) ms" }
        if total % 1000 == 0 { return "\(total / 1000) s" }
        return "\(total / 1000).\((total % 1000) / 100) s"
    }
}
