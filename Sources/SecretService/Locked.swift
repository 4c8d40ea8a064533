import Foundation

/// A value behind a lock: the package's one lock type.
///
/// Not `Synchronization.Mutex`: on Linux that is built on raw futex calls, which
/// ThreadSanitizer cannot see, so every value it protects showed up as a data race in the TSan
/// run of the concurrency tests. `NSLock` is a pthread mutex, which TSan understands; an
/// uncontended lock/unlock costs tens of nanoseconds.
///
/// `@unchecked Sendable`: `value` is only read or written inside `withLock`, while `lock` is held.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. Do not call `withLock` on the same
    /// instance from inside `body`.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
