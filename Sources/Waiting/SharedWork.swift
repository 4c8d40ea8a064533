import Locking

/// Work that many callers wait for but that runs once at a time: opening a connection, creating
/// an encryption key. Each caller waits with its own deadline and its own cancellation
/// (``OneShot``): one caller giving up never ends another's wait, and a run that ran out of an
/// earlier caller's time does not count against a caller who still has time (it runs again for
/// them). A run that every caller has given up is cancelled (a prompt it shows is dismissed: no
/// one waits for the answer); a caller who arrives meanwhile gets a run of its own.
package final class SharedWork<Value: Sendable, Failure: WaitFailure>: Sendable {
    /// One run of the work.
    private final class Run: Sendable {
        let task = Locked<Task<Void, Never>?>(nil)
        /// Every caller gave up on it: it was cancelled.
        let abandoned = Locked(false)
    }
    private struct State {
        /// The callers waiting for the current run, and the run (nil when nothing runs).
        var waiters: [OneShot<Value, Failure>] = []
        var run: Run?
    }
    private let state = Locked(State())
    /// Where the callers' deadlines fire and their cancellations run.
    private let timekeeper: Timekeeper

    package init(timekeeper: Timekeeper) {
        self.timekeeper = timekeeper
    }

    /// How many callers wait for the current run (none when nothing runs). For tests that must
    /// know a caller has joined before they go on.
    package var waitingCallers: Int { state.withLock { $0.waiters.count } }

    /// Waits for the current run, or starts one. `work` gets the deadline of the caller who
    /// started the run.
    /// - Throws: the run's error; `.timedOut` at the caller's own deadline; `.cancelled`.
    package func value(operation: String, deadline: Deadline,
                       _ work: @escaping @Sendable (Deadline) async throws(Failure) -> Value) async throws(Failure) -> Value {
        while true {
            let waiter = OneShot<Value, Failure>(operation: operation, deadline: deadline, timekeeper: timekeeper)
            let (run, start) = state.withLock { state -> (Run, Bool) in
                state.waiters.append(waiter)
                if let run = state.run { return (run, false) }
                let run = Run()
                state.run = run
                return (run, true)
            }
            if start {
                // The caller's executor preference, when it has one (BlockingBridge): the run must
                // not need a thread of the pool its callers may all be blocking.
                let task = Task(executorPreference: BlockingBridge.preferredExecutor) { [self] in
                    let result: Result<Value, Failure>
                    do throws(Failure) { result = .success(try await work(deadline)) } catch { result = .failure(error) }
                    let waiters = state.withLock { state -> [OneShot<Value, Failure>] in
                        defer { state.waiters = []; state.run = nil }
                        return state.waiters
                    }
                    for waiter in waiters { waiter.finish(result) }
                }
                run.task.withLock { $0 = task }
                if run.abandoned.withLock({ $0 }) { task.cancel() }
            }
            let result = await waiter.wait()
            guard case .failure(let error) = result else { return try result.get() }
            // Gave up (its deadline, its cancellation) or the run failed. A run no one waits for
            // any more is cancelled.
            let abandon = state.withLock { state -> Bool in
                state.waiters.removeAll { $0 === waiter }
                guard state.run === run, state.waiters.isEmpty else { return false }
                run.abandoned.withLock { $0 = true }
                return true
            }
            if abandon { run.task.withLock { $0 }?.cancel() }
            if error.isTimedOut, deadline.remaining != nil { continue }
            // Joined a run others had given up on (so it was cancelled): this caller has not.
            if !abandon, run.abandoned.withLock({ $0 }), !Task.isCancelled, !error.isTimedOut { continue }
            throw error
        }
    }
}

/// Values read once per key and then remembered for good: callers of a key not read yet share one
/// read (``SharedWork``). The value is remembered inside the read, before any caller resumes, and a
/// read that starts after another one ended looks again first; so a caller arriving at any moment
/// finds the value or joins the read, and a key is read once, however its callers interleave.
package final class RememberedReads<Key: Hashable & Sendable, Value: Sendable, Failure: WaitFailure>: Sendable {
    private struct State {
        var values: [Key: Value] = [:]
        var reads: [Key: SharedWork<Value, Failure>] = [:]
    }
    private let state = Locked(State())
    private let isWorthRemembering: @Sendable (Value) -> Bool
    private let timekeeper: Timekeeper

    /// - Parameters:
    ///   - timekeeper: where the callers' deadlines fire and their cancellations run.
    ///   - isWorthRemembering: false for a value the next caller must read again (an alias that
    ///     named nothing, say).
    package init(timekeeper: Timekeeper, rememberingOnly isWorthRemembering: @escaping @Sendable (Value) -> Bool = { _ in true }) {
        self.timekeeper = timekeeper
        self.isWorthRemembering = isWorthRemembering
    }

    /// The value remembered for `key`, or nil when it has not been read.
    package func remembered(_ key: Key) -> Value? { state.withLock { $0.values[key] } }

    /// The value for `key`: remembered, or read by `read` (once, shared by concurrent callers).
    /// - Throws: what `read` throws; `.timedOut` at the caller's own deadline; `.cancelled`.
    package func value(for key: Key, operation: String, deadline: Deadline,
                       read: @escaping @Sendable (Deadline) async throws(Failure) -> Value) async throws(Failure) -> Value {
        if let value = remembered(key) { return value }
        let shared = state.withLock { state in
            if let shared = state.reads[key] { return shared }
            let shared = SharedWork<Value, Failure>(timekeeper: timekeeper)
            state.reads[key] = shared
            return shared
        }
        return try await shared.value(operation: operation, deadline: deadline) { [self] deadline throws(Failure) in
            if let value = remembered(key) { return value }
            let value = try await read(deadline)
            if isWorthRemembering(value) { state.withLock { $0.values[key] = value } }
            return value
        }
    }
}
