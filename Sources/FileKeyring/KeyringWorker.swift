#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The one thread a ``FileKeyring``'s async calls run on: file I/O, AES and the wait for another
/// writer's lock block a thread, and Swift's cooperative threads must never block.
///
/// Jobs run one at a time, in the order they were submitted, each on this thread. A job that
/// cannot go on yet (a transaction whose lock another process holds) says so and is tried again a
/// little later (1 ms, doubling to 16 ms), the other jobs running meanwhile: one caller waiting for
/// the lock never delays another caller's read. The thread starts with the first job and ends
/// after ``idleExit`` without work, so an idle keyring holds no thread.
///
/// `@unchecked Sendable`: `jobs` and `isRunning` are read and written only while `mutex` is held;
/// `mutex` and `condition` are allocated once and live at fixed addresses until `deinit`, which
/// runs only when no thread holds the worker (the thread holds it while it runs).
final class KeyringWorker: @unchecked Sendable {
    /// What a job's try did.
    enum Attempt {
        /// Finished (its caller was answered).
        case done
        /// Cannot go on yet: try again a little later.
        case again
    }

    /// How long the thread waits for work before it ends.
    static let idleExit: Duration = .seconds(2)

    private struct Job {
        /// The try; its argument counts the tries before it.
        let attempt: @Sendable (Int) -> Attempt
        var tries = 0
        var notBefore: ContinuousClock.Instant = .now
        var pause: Duration = .milliseconds(1)
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var jobs: [Job] = []
    private var isRunning = false

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// How many queued jobs have been tried and wait to be tried again (tests).
    var jobsWaitingToTryAgain: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return jobs.filter { $0.tries > 0 }.count
    }

    /// Queues `attempt`, starting the thread when it is not running; false (nothing queued) when
    /// no thread could be started.
    func submit(_ attempt: @escaping @Sendable (Int) -> Attempt) -> Bool {
        pthread_mutex_lock(mutex)
        jobs.append(Job(attempt: attempt))
        let start = !isRunning
        isRunning = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        guard start else { return true }
        if POSIX.startThread({ self.run() }) { return true }
        pthread_mutex_lock(mutex)
        jobs.removeLast()
        isRunning = false
        pthread_mutex_unlock(mutex)
        return false
    }

    /// The thread: the first job whose time has come, one at a time, until idle for ``idleExit``.
    private func run() {
        pthread_mutex_lock(mutex)
        while true {
            let now = ContinuousClock.now
            if let index = jobs.firstIndex(where: { $0.notBefore <= now }) {
                var job = jobs.remove(at: index)
                pthread_mutex_unlock(mutex)
                let attempt = job.attempt(job.tries)
                pthread_mutex_lock(mutex)
                if case .again = attempt {
                    job.tries += 1
                    job.notBefore = .now + job.pause
                    job.pause = min(job.pause * 2, .milliseconds(16))
                    jobs.append(job)
                }
                continue
            }
            let wake = jobs.map(\.notBefore).min()
            wait(until: wake ?? now + Self.idleExit)
            if jobs.isEmpty, wake == nil {
                isRunning = false
                pthread_mutex_unlock(mutex)
                return
            }
        }
    }

    /// Waits (the mutex held) until signalled or `instant`.
    private func wait(until instant: ContinuousClock.Instant) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: instant).components
        let delay = max(0, seconds) * 1_000_000_000 + (seconds >= 0 ? attoseconds / 1_000_000_000 : 0)
        var total = Int64(now.tv_nsec) + delay
        var until = timespec(tv_sec: now.tv_sec + Int(total / 1_000_000_000), tv_nsec: 0)
        total %= 1_000_000_000
        until.tv_nsec = Int(total)
        pthread_cond_timedwait(condition, mutex, &until)
    }
}
