import Locking

/// The point in time by which a whole operation (connection and retries included) must have ended;
/// with ``DeadlinePauses``, a point that moves on while time is paused (the time a person spends at a
/// prompt is theirs, not the operation's).
package struct Deadline: Sendable, Hashable, Comparable {
    /// The timeout the deadline was made from, for messages.
    package let timeout: Duration
    /// The instant, before any pause.
    private let start: ContinuousClock.Instant
    /// Time that does not count against this deadline, and how much of it had passed when the
    /// deadline was made.
    private let pauses: DeadlinePauses?
    private let pausedBefore: Duration

    /// The longest timeout honoured as given: beyond it (a hundred years), deadlines are clamped
    /// so that `.seconds(Int64.max)` neither traps nor overflows the clock.
    package static let longest = Duration.seconds(100 * 365 * 24 * 3600)

    /// A deadline `timeout` from now. Negative timeouts are already past.
    package init(timeout: Duration) {
        self.init(timeout: timeout, pausedBy: nil)
    }

    /// A deadline `timeout` from now that moves on by the time `pauses` is paused from now on.
    package init(timeout: Duration, pausedBy pauses: DeadlinePauses?) {
        let clamped = min(max(timeout, .zero), Self.longest)
        self.timeout = clamped
        self.start = .now + clamped
        self.pauses = pauses
        self.pausedBefore = pauses?.total ?? .zero
    }

    package init(instant: ContinuousClock.Instant, timeout: Duration) {
        self.start = instant
        self.timeout = timeout
        self.pauses = nil
        self.pausedBefore = .zero
    }

    /// The instant now: the start moved on by the time paused since the deadline was made.
    package var instant: ContinuousClock.Instant {
        guard let pauses else { return start }
        return start + (pauses.total - pausedBefore)
    }

    /// Time left, or nil when the deadline has passed.
    package var remaining: Duration? {
        let left = instant - .now
        return left > .zero ? left : nil
    }

    /// Whether the deadline stands still now (a pause of its ``DeadlinePauses`` is open).
    package var isPaused: Bool { pauses?.isPaused ?? false }

    /// The same deadline, moving on from now by the time `pauses` is paused (itself when it already
    /// does; a deadline paused by another ``DeadlinePauses`` keeps the instant it has now).
    package func paused(by pauses: DeadlinePauses) -> Deadline {
        if self.pauses === pauses { return self }
        return Deadline(start: instant, timeout: timeout, pauses: pauses, pausedBefore: pauses.total)
    }

    private init(start: ContinuousClock.Instant, timeout: Duration, pauses: DeadlinePauses?, pausedBefore: Duration) {
        self.start = start
        self.timeout = timeout
        self.pauses = pauses
        self.pausedBefore = pausedBefore
    }

    package static func < (a: Deadline, b: Deadline) -> Bool { a.instant < b.instant }

    package static func == (a: Deadline, b: Deadline) -> Bool {
        a.timeout == b.timeout && a.start == b.start && a.pausedBefore == b.pausedBefore && a.pauses === b.pauses
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(timeout)
        hasher.combine(start)
        hasher.combine(pausedBefore)
        hasher.combine(pauses.map(ObjectIdentifier.init))
    }
}

/// Time that does not count against the deadlines made with it (``Deadline/init(timeout:pausedBy:)``):
/// while a pause is open they move on with the clock, so their time left stays what it was. Pauses
/// may overlap; the time counts once while any is open. A wait whose deadline falls due during a
/// pause is not ended but given its new instant (``OneShot``).
///
/// Thread-safety: safe from any thread.
package final class DeadlinePauses: Sendable {
    private struct State {
        var closed: Duration = .zero
        var open = 0
        var openedAt: ContinuousClock.Instant?
    }
    private let state = Locked(State())

    package init() {}

    /// Opens a pause; every ``begin()`` is followed by one ``end()``.
    package func begin() {
        state.withLock { state in
            if state.open == 0 { state.openedAt = .now }
            state.open += 1
        }
    }

    /// Closes a pause opened by ``begin()``.
    package func end() {
        state.withLock { state in
            precondition(state.open > 0, "DeadlinePauses.end() without begin()")
            state.open -= 1
            if state.open == 0, let openedAt = state.openedAt {
                state.closed += .now - openedAt
                state.openedAt = nil
            }
        }
    }

    /// Whether a pause is open.
    package var isPaused: Bool { state.withLock { $0.open > 0 } }

    /// All the time paused so far, the open pause's included.
    package var total: Duration {
        state.withLock { state in state.closed + (state.openedAt.map { .now - $0 } ?? .zero) }
    }
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
