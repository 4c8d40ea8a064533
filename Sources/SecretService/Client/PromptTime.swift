import DBusTransport
import Locking
import Waiting

/// The time prompts of this process are on screen, by bus: the person's time, which no call's
/// deadline counts.
///
/// Every call's deadline on a bus (``SecretServiceClient/callDeadline()``, and an operation's
/// deadline given to ``SecretServiceClient/ending(by:)``) is paused by the bus's
/// ``DeadlinePauses`` while a prompt is on screen there (``Prompts``): the call that shows it, the
/// calls waiting for it (``SharedUnlocks``), and the calls queued behind it (another call on the
/// same account, a first connection, a default collection being created) keep the time they had
/// left when it appeared. A prompt has its own limit instead (``SecretServiceClient/Options/promptTimeout``).
///
/// By bus, not by connection or by call: two clients of one process on one bus wait for each
/// other's prompts (one person, one screen); a test's private bus is not paused by another's.
///
/// Thread-safety: safe from any thread.
package enum PromptTime {
    private static let byBus = Locked<[BusAddress: DeadlinePauses]>([:])

    /// The pauses of `bus`: open while a prompt of this process is on screen there.
    package static func pauses(on bus: BusAddress) -> DeadlinePauses {
        byBus.withLock { byBus in
            if let pauses = byBus[bus] { return pauses }
            let pauses = DeadlinePauses()
            byBus[bus] = pauses
            return pauses
        }
    }

    /// A deadline `timeout` from now on `bus` that does not count the time a prompt is on screen
    /// there: what an operation made of several calls (a KeychainStorage save) gives
    /// ``SecretServiceClient/ending(by:)`` and waits with meanwhile.
    package static func deadline(timeout: Duration, on bus: BusAddress) -> Deadline {
        Deadline(timeout: timeout, pausedBy: pauses(on: bus))
    }
}
