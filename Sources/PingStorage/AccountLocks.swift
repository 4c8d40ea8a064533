import Locking
import SecretService

/// Serializes operations on the same item within the process, so that a save (search, write,
/// remove duplicates) never interleaves with another save or delete of the same account.
/// Operations on different accounts run concurrently. FIFO per key.
final class AccountLocks: Sendable {
    static let shared = AccountLocks()

    private struct Waiters {
        var queue: [CheckedContinuation<Void, Never>] = []
    }
    /// Keys currently held; the value holds the tasks waiting for that key.
    private let held = Locked<[String: Waiters]>([:])

    func withLock<Value: Sendable>(_ key: String, _ body: () async throws -> Value) async throws -> Value {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    private func acquire(_ key: String) async {
        let acquired = held.withLock { held -> Bool in
            if held[key] == nil {
                held[key] = Waiters()
                return true
            }
            return false
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let acquiredNow = held.withLock { held -> Bool in
                if held[key] == nil {
                    held[key] = Waiters()
                    return true
                }
                held[key]!.queue.append(continuation)
                return false
            }
            if acquiredNow { continuation.resume() }
        }
    }

    private func release(_ key: String) {
        let next = held.withLock { held -> CheckedContinuation<Void, Never>? in
            guard var waiters = held[key] else { return nil }
            if waiters.queue.isEmpty {
                held[key] = nil
                return nil
            }
            let next = waiters.queue.removeFirst()
            held[key] = waiters
            return next
        }
        // Ownership passes straight to the next waiter: the key stays held.
        next?.resume()
    }
}
