#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a lock: the package's one lock type.
///
/// A pthread mutex rather than `Synchronization.Mutex`: on Linux the latter is built on raw futex
/// calls, which ThreadSanitizer cannot see, so every value it protected showed up as a data race
/// in the TSan run of the concurrency tests. An uncontended lock/unlock costs tens of nanoseconds.
///
/// Never make `Value` a bare closure type (or an optional one): `body` gets the value `inout`, and
/// converting a function between its concrete and its generic representation on the way in and
/// out wraps it in a new reabstraction thunk on every access. The stored closure becomes a chain
/// that grows by two frames each time it is read, and every call walks the whole chain (a process
/// that logged 20,000 messages this way ran 7x slower and held 10 MiB more). Put the closure in a
/// struct and store the struct (`LogTests.theSecretServiceHandlerStaysOneClosure` checks it).
///
/// `@unchecked Sendable`: `value` is only read or written inside `withLock`, while the mutex is
/// held; the mutex lives at a fixed address allocated for this object's whole life.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Do not call `withLock` on the same
    /// instance from inside `body`.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
