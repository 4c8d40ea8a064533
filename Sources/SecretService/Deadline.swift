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

/// Every pending deadline of the process, kept by one timer on the loop thread that is armed for
/// the earliest of them: the one deadline mechanism of SecretService. Adding a deadline later than
/// the armed one costs a lock and no wake-up of the loop (most calls have the same timeout).
final class Deadlines: Sendable {
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

    /// Calls `expire` on the loop thread at `instant`, unless `owner` is removed first. Thread-safe.
    func add(_ owner: AnyObject, at instant: ContinuousClock.Instant, expire: @escaping @Sendable () -> Void) {
        let arm = state.withLock { state -> Bool in
            state.entries[ObjectIdentifier(owner)] = Entry(instant: instant, expire: expire)
            if let due = state.timerDue, due <= instant { return false }
            state.timerDue = instant
            return true
        }
        if arm { armTimer(for: instant) }
    }

    /// Forgets `owner`'s deadline (harmless when it has none). Thread-safe.
    func remove(_ owner: AnyObject) {
        _ = state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(owner)) }
    }

    /// Whether `owner` has a pending deadline (for tests).
    func contains(_ owner: AnyObject) -> Bool { state.withLock { $0.entries[ObjectIdentifier(owner)] != nil } }

    private func armTimer(for instant: ContinuousClock.Instant) {
        LoopThread.shared.afterDelay(max(instant - .now, .zero)) { [self] in expireDue() }
    }

    /// Ends what is due and arms the timer for the next deadline (on the loop thread).
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
