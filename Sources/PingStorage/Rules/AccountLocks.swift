import Locking
import Waiting

/// Asynchronous locks by key, FIFO per key: operations under different keys run concurrently. A
/// caller waiting for a lock gives up at its deadline or when its Task is cancelled, without
/// disturbing the others (each waits on a ``OneShot``).
///
/// A place's locks (``KeychainPlace/locks``) serialize operations on the same account within the
/// process, so that a save (search, write, remove duplicates) never interleaves with another save
/// or delete of it.
///
/// The waits end on the toolkit's light timekeeper: a lock (a contended ``MemoryStorage`` with a
/// cache takes one) never starts the D-Bus transport's GLib loop thread.
final class AccountLocks: Sendable {
    /// Keys currently held, with the callers waiting for each.
    private let held = Locked<[String: [OneShot<Void, WaitError>]]>([:])

    /// Runs `body` while holding `key`.
    /// - Throws: `body`'s error; ``WaitError`` (`.timedOut` at `deadline`, `.cancelled`) while
    ///   waiting for the lock.
    nonisolated(nonsending) func withLock<Value: Sendable>(
        _ key: String, deadline: Deadline, _ body: nonisolated(nonsending) () async throws -> Value
    ) async throws -> Value {
        try await acquire(key, deadline: deadline)
        defer { release(key) }
        return try await body()
    }

    private func acquire(_ key: String, deadline: Deadline) async throws(WaitError) {
        let waiter = OneShot<Void, WaitError>(operation: "wait for another call on the same account", deadline: deadline,
                                             timekeeper: .light)
        let acquired = held.withLock { held -> Bool in
            guard held[key] != nil else {
                held[key] = []
                return true
            }
            held[key]!.append(waiter)
            return false
        }
        if acquired { return }
        // Ownership is handed over by `release` finishing this waiter with success; a waiter that
        // ended first (deadline, cancellation) refuses it, and `release` passes it on.
        try await waiter.value()
    }

    private func release(_ key: String) {
        while true {
            let next = held.withLock { held -> OneShot<Void, WaitError>? in
                guard var waiters = held[key], !waiters.isEmpty else {
                    held[key] = nil
                    return nil
                }
                let next = waiters.removeFirst()
                held[key] = waiters
                return next
            }
            guard let next else { return }
            if next.finish(.success(())) { return }
        }
    }
}
