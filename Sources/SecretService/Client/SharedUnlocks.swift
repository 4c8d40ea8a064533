import DBusTransport
import Locking
import Waiting

/// The unlocks in progress in this process, by collection: concurrent calls that need one
/// collection unlocked wait for one prompt, not one each.
///
/// A call that needs an unlock claims its collections first (``claim(_:)``); a call that finds
/// one of them claimed waits for that claim's end (``wait(for:operation:deadline:)``, with its own
/// deadline, which a prompt on screen pauses, and its own cancellation), then either goes on (the
/// collection is unlocked now, or the claimant gave up without an answer: it asks again, and its
/// own Unlock tells) or fails as the prompt did (dismissed, not shown, not answered in time: the
/// person answered once for all of them).
///
/// Without this, five concurrent reads of a locked keyring queued five prompts in gnome-keyring
/// (each shown once the previous was answered or cancelled), and on KeePassXC and KWallet, five
/// unlock dialogs at once.
///
/// Thread-safety: safe from any thread.
final class SharedUnlocks: Sendable {
    /// The process's one record.
    static let shared = SharedUnlocks()

    /// A collection of one provider on one bus.
    struct Key: Hashable, Sendable {
        let bus: BusAddress
        let provider: String
        let collection: ObjectPath
    }

    /// How a claim ended, for the calls that waited for it.
    enum Outcome: Sendable {
        /// Ask again: the collection is unlocked, or the claimant ended without the person's answer.
        case askAgain
        /// The person's answer, or its absence, that holds for every waiting call.
        case failed(SecretServiceError)
    }

    /// One call's claim on its collections.
    final class Claim: Sendable {
        fileprivate let keys: Set<Key>
        fileprivate let state = Locked<(waiters: [OneShot<Outcome, SecretServiceError>], outcome: Outcome?)>(([], nil))
        fileprivate init(keys: Set<Key>) { self.keys = keys }
    }

    enum Claimed: Sendable {
        /// The caller holds the claim and must ``release(_:_:)`` it.
        case mine(Claim)
        /// Another call holds a claim on one of the collections.
        case another(Claim)
    }

    private let claims = Locked<[Key: Claim]>([:])

    /// The collection an unlock of `path` unlocks: the path itself for a collection
    /// (`/org/freedesktop/secrets/collection/NAME`), its collection for an item.
    static func collection(of path: ObjectPath) -> ObjectPath {
        let elements = path.rawValue.split(separator: "/", omittingEmptySubsequences: true)
        guard elements.count > 5, elements[0...3] == ["org", "freedesktop", "secrets", "collection"] else { return path }
        return ObjectPath(trusted: "/" + elements[0...4].joined(separator: "/"))
    }

    /// Claims every key, or none when another call holds one of them.
    func claim(_ keys: Set<Key>) -> Claimed {
        claims.withLock { claims in
            for key in keys { if let held = claims[key] { return .another(held) } }
            let claim = Claim(keys: keys)
            for key in keys { claims[key] = claim }
            return .mine(claim)
        }
    }

    /// Ends `claim` with `outcome`: the calls waiting for it go on.
    func release(_ claim: Claim, _ outcome: Outcome) {
        claims.withLock { claims in
            for key in claim.keys where claims[key] === claim { claims[key] = nil }
        }
        let waiters = claim.state.withLock { state in
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.finish(.success(outcome)) }
    }

    /// Waits for `claim` to end, by `deadline` (paused while a prompt is on screen) and until the
    /// calling Task is cancelled.
    /// - Throws: `.timedOut`, `.cancelled`.
    func wait(for claim: Claim, operation: String, deadline: Deadline) async throws(SecretServiceError) -> Outcome {
        let waiter = OneShot<Outcome, SecretServiceError>(operation: operation, deadline: deadline)
        let ended = claim.state.withLock { state -> Outcome? in
            if let outcome = state.outcome { return outcome }
            state.waiters.append(waiter)
            return nil
        }
        if let ended { return ended }
        return try await waiter.value()
    }
}
