#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting
import DBusTransport

/// An asynchronous client of the freedesktop Secret Service (`org.freedesktop.secrets`): GNOME
/// Keyring, KWallet, KeePassXC.
///
/// A client holds its own D-Bus connection (to the session bus, or to any address), opened on
/// first use together with a transport session, and opened again by itself when the bus
/// connection closes or the provider restarts (a call that meets a stale session is retried on a
/// new one, twice at most, within its deadline). ``with(options:)`` gives clients that share one
/// connection. The provider must run as the same Unix user as the client.
///
/// Every call ends by its deadline (``Options/timeout``), throws only ``SecretServiceError``, and
/// never blocks the calling thread: calls go out from the calling task and their replies come back
/// through GDBus's reader thread.
///
/// ## Prompts
/// A prompt is the person's time. While one of this process's prompts is on screen on a bus, no
/// call's deadline there counts the time (the call that shows it, the calls that wait for it or
/// behind it keep the time they had left); the prompt has its own limit, ``Options/promptTimeout``
/// (default 5 minutes), at which it is dismissed and the call throws `.timedOut` saying that no
/// one answered the prompt. A prompt is dismissed too when its Task is cancelled. Concurrent calls
/// of this process that need one collection unlocked wait for one prompt, and share its answer.
/// A prompt that cannot be shown fails at once with `.promptDismissed` saying why, where something
/// tells: GNOME Keyring without a prompter it can start (no display for the session bus), KWallet
/// or KeePassXC running without a screen. GNOME Keyring's unlock prompts are never dismissed: GNOME
/// Keyring aborts when one is (``ProviderQuirks/dismissesPrompt(_:on:)``); one left unanswered stays
/// on screen until the person answers it.
///
/// ## The default collection
/// A call that names the `default` collection when the provider has none (a freshly started
/// gnome-keyring without a login keyring) creates it through the provider ("Default keyring",
/// alias `default`; the provider's prompt asks for its password) when ``Options/allowsPrompts`` is
/// true, once for concurrent first calls; otherwise, or when that prompt is dismissed, it throws
/// `.collectionNotFound` saying that no default keyring exists yet and how to create one.
///
/// ## Unlock policy
/// Locked is never reported as "not found". Where a call needs something unlocked, it asks the
/// provider to unlock it; when that needs a prompt and ``Options/allowsPrompts`` is false, the call
/// throws `.locked` (and nothing is shown).
///
/// | method | when its target is locked |
/// |---|---|
/// | ``searchItems(matching:in:)`` | unlocks nothing: reports locked items apart |
/// | ``findItems(matching:in:)``, ``uniqueItem(matching:in:)`` | unlocks the locked matches; when nothing matches in a locked collection (some providers hide its items), unlocks the collection and searches again |
/// | ``secret(of:)`` | unlocks the item (KWallet's empty answer when locked is recognised) |
/// | ``setSecret(_:of:)``, ``updateItem(_:label:attributes:)``, ``deleteItem(_:)`` | unlocks the item when the provider says it is locked, then tries again once |
/// | ``createItem(in:label:attributes:secret:replacing:)`` | unlocks the collection first |
/// | ``unlock(_:)`` | unlocks (that is its job) |
/// | ``itemInfo(_:)``, ``collectionInfo(_:)``, ``collections()``, ``provider()``, ``lock(_:)`` | never unlock |
///
/// Thread-safety: safe from any number of tasks.
public final class SecretServiceClient: Sendable {
    /// How calls behave.
    public struct Options: Sendable, Hashable {
        /// How long one call may take in all, connection and retries included; the time a prompt
        /// is on screen is not counted (``promptTimeout`` bounds it). Default 25 s.
        public var timeout: Duration
        /// How long a prompt may stay on screen unanswered: then it is dismissed (GNOME Keyring's
        /// unlock prompt excepted, which is left open) and the call throws `.timedOut`, saying that
        /// no one answered the prompt. Default 5 minutes.
        public var promptTimeout: Duration
        /// Whether a locked collection or item may be unlocked through the provider's prompt.
        /// When false, calls that need an unlock throw `.locked` at once.
        public var allowsPrompts: Bool
        /// Whether to accept a provider that only offers `plain` sessions (secrets unencrypted on
        /// the bus). Default false: calls that would send or receive a secret throw
        /// `.insecureTransport`, before it crosses the bus; searches, metadata and deletions, which
        /// carry none, go on.
        public var allowsPlainTransport: Bool

        /// Creates options; every parameter has the default described on its property.
        public init(timeout: Duration = .seconds(25), allowsPrompts: Bool = true, allowsPlainTransport: Bool = false,
                    promptTimeout: Duration = .seconds(300)) {
            self.timeout = timeout
            self.promptTimeout = promptTimeout
            self.allowsPrompts = allowsPrompts
            self.allowsPlainTransport = allowsPlainTransport
        }
    }

    /// How this client's calls behave.
    public let options: Options
    let link: ProviderLink
    /// When set, every call ends by this deadline too (an operation spanning several calls).
    let operationDeadline: Deadline?

    /// Creates a client with a connection of its own to `bus`, opened on first use.
    public convenience init(bus: BusAddress = .session, options: Options = Options()) {
        self.init(link: ProviderLink(bus: bus), options: options, operationDeadline: nil)
    }

    init(link: ProviderLink, options: Options, operationDeadline: Deadline?) {
        self.link = link
        self.options = options
        self.operationDeadline = operationDeadline
    }

    /// A client with other options that shares this client's connection.
    public func with(options: Options) -> SecretServiceClient {
        SecretServiceClient(link: link, options: options, operationDeadline: operationDeadline)
    }

    /// A client sharing this one's connection whose calls all end by `deadline` (for an
    /// operation made of several calls that must end in time as a whole). The time a prompt is on
    /// screen on this client's bus does not count against it (``PromptTime``).
    package func ending(by deadline: Deadline) -> SecretServiceClient {
        SecretServiceClient(link: link, options: options, operationDeadline: deadline.paused(by: promptPauses))
    }

    /// What pauses this client's deadlines: the time a prompt is on screen on its bus.
    var promptPauses: DeadlinePauses { PromptTime.pauses(on: link.bus) }

    /// The bus this client connects to.
    public var bus: BusAddress { link.bus }

    /// The D-Bus methods this client's connection called since the last time this was asked (the
    /// last 256 at most): for tests that pin how many round trips an operation costs.
    package func takeCallLog() -> [String] { link.connection?.takeCallLog() ?? [] }

    /// Whether the open connection would make GLib raise SIGTERM when the bus closes (nil when
    /// none is open). For tests.
    package var connectionExitsOnClose: Bool? { link.connection?.connection.exitsOnClose }

    /// The change token of the open connection now, without any D-Bus traffic; nil when no
    /// connection is open (then anything may have changed).
    public var currentChangeToken: ChangeToken? { link.connection.map { $0.token } }

    /// How far the open connection's item announcements have come (``ItemAnnouncement``), without
    /// any D-Bus traffic; nil when no connection is open or it closed (then nothing is heard).
    public var announcementMark: AnnouncementMark? {
        guard let connection = link.connection, !connection.isClosed else { return nil }
        return connection.traffic.announcementMark
    }

    /// Whether the provider of the open session announces secrets written in place (`ItemChanged`
    /// after every SetSecret: KWallet; GNOME Keyring never does, KeePassXC not always), without any
    /// D-Bus traffic; nil when no session is open. Where it does not, another process's save of an existing item
    /// is heard by no announcement: what is remembered of it is checked by reading it again.
    public var announcesSecretChanges: Bool? {
        link.currentSession.map { ProviderQuirks.announcesSecretChanges($0.kind) }
    }

    /// The item announcements the open connection heard since `mark`, in order, without any D-Bus
    /// traffic; nil when they cannot be told (another connection's mark, too many since).
    public func announcements(since mark: AnnouncementMark) -> [ItemAnnouncement]? {
        link.connection?.traffic.announcements(since: mark)
    }

    /// What was announced between two change tokens of the open connection (one announcement per
    /// change, ``ChangeToken``), without any D-Bus traffic; nil when they are not this connection's,
    /// `later` is before `earlier`, or some of those announcements are no longer kept.
    public func announcements(between earlier: ChangeToken, and later: ChangeToken) -> [ItemAnnouncement]? {
        guard let count = later.changes(since: earlier),
              let heard = link.connection?.traffic.announcements(since: AnnouncementMark(connection: earlier.connection, count: earlier.count)),
              heard.count >= count else { return nil }
        return Array(heard.prefix(Int(count)))
    }

    /// Returns once every item announcement the bus routed to the open connection before this call
    /// has been heard: one round trip to the bus itself (`GetId` of `org.freedesktop.DBus`), whose
    /// reply comes after them on the connection. Cheap (the bus answers, not the provider). What
    /// the provider announced before answering another process's call that has returned is
    /// then counted (the bus routes the announcement before the answer). Returns at once when no
    /// connection is open.
    /// - Throws: `.timedOut` at the call's deadline, `.disconnected`, `.cancelled`.
    public func hearAnnouncementsRoutedSoFar() async throws(SecretServiceError) {
        guard let connection = link.connection, !connection.isClosed else { return }
        _ = try await connection.call(.bus(member: "GetId", arguments: nil), operation: "hear the keyring's announcements",
                                      phase: .call, deadline: callDeadline())
    }

    // MARK: The service

    /// Who provides the Secret Service, and the negotiated transport. Opens the connection.
    /// - Throws: the connection errors (`.noSessionBus`, `.noSecretService`, `.untrustedProvider`, …).
    public func provider() async throws(SecretServiceError) -> SecretServiceProvider {
        try await perform("identify the keyring service") { session, deadline throws(SecretServiceError) in
            session.provider(transport: try await transport(session, deadline, operation: "identify the keyring service",
                                                            refusingPlain: false))
        }
    }

    /// Resolves a collection reference to its object path.
    /// - Throws: `.collectionNotFound` (the message names the collections that exist), connection errors.
    public func collectionPath(_ collection: CollectionReference) async throws(SecretServiceError) -> ObjectPath {
        try await perform("find \(collection)") { session, deadline throws(SecretServiceError) in
            try await resolve(collection, session, deadline)
        }
    }

    /// Label and lock state of a collection, read fresh from the provider.
    /// - Throws: `.collectionNotFound`, connection errors.
    public func collectionInfo(_ collection: CollectionReference) async throws(SecretServiceError) -> SecretCollectionInfo {
        try await perform("read \(collection)") { session, deadline throws(SecretServiceError) in
            try await collectionInfo(at: try await resolve(collection, session, deadline), session, deadline)
        }
    }

    /// Every collection the provider publishes.
    /// - Throws: connection errors.
    public func collections() async throws(SecretServiceError) -> [SecretCollectionInfo] {
        try await perform("list collections") { session, deadline throws(SecretServiceError) in
            try await listCollections(session, deadline)
        }
    }

    /// Locks collections or items. Never unlocks anything; runs the provider's prompt if it shows
    /// one (KeePassXC does) and prompts are allowed.
    /// - Throws: `.promptDismissed` when locking needs a prompt that is dismissed or not allowed.
    public func lock(_ paths: [ObjectPath]) async throws(SecretServiceError) {
        try await perform("lock") { session, deadline throws(SecretServiceError) in
            let reply = try await session.call(.service, "org.freedesktop.Secret.Service", "Lock",
                                               .tuple([.objectPaths(paths)]), operation: "lock", deadline: deadline)
            let prompt = ObjectPath(trusted: try reply.body("(aoo)", in: "lock").child(1).string)
            guard prompt != .none else { return }
            _ = try await promptIfAllowed(prompt, .other, resultType: "ao", session, deadline, operation: "lock", refusal:
                .promptDismissed("lock", detail: "locking needs a prompt, and prompts are turned off"))
        }
    }

    /// Unlocks collections or items, through the provider's prompt if it shows one.
    /// - Throws: `.locked` when a prompt is needed and prompts are turned off, `.promptDismissed`.
    public func unlock(_ paths: [ObjectPath]) async throws(SecretServiceError) {
        try await perform("unlock") { session, deadline throws(SecretServiceError) in
            try await unlock(paths, session, deadline, operation: "unlock")
        }
    }

    // MARK: Running calls

    /// The deadline of a call starting now.
    func callDeadline() -> Deadline {
        let own = Deadline(timeout: options.timeout, pausedBy: promptPauses)
        guard let operationDeadline else { return own }
        return min(own, operationDeadline)
    }

    /// The session's transport, once negotiated, for `operation` (a call that carries a secret,
    /// unless `refusingPlain` is false).
    /// - Throws: `.insecureTransport` when it is `plain` and the options do not allow that; what
    ///   ``ProviderSession/transport(deadline:)`` throws, as an error of `operation`.
    func transport(_ session: ProviderSession, _ deadline: Deadline, operation: String,
                   refusingPlain: Bool = true) async throws(SecretServiceError) -> SessionCrypto {
        let crypto: SessionCrypto
        do throws(SecretServiceError) {
            crypto = try await session.transport(deadline: deadline)
        } catch {
            throw error.during(operation)
        }
        if refusingPlain, crypto.isPlain, !options.allowsPlainTransport { throw .insecureTransport(operation) }
        return crypto
    }

    /// Runs `body` with the current session and the call's deadline; opens a new session and runs
    /// it again (twice at most, within the deadline) when the provider went away or forgot the
    /// session. When the provider stopped answering (an earlier call got no reply at all), `body`
    /// runs only once a quick probe is answered; else the call fails at once with `.notResponding`.
    func perform<Value: Sendable>(
        _ operation: String,
        _ body: (ProviderSession, Deadline) async throws(SecretServiceError) -> Value
    ) async throws(SecretServiceError) -> Value {
        let deadline = callDeadline()
        var attempt = 0
        while true {
            attempt += 1
            let session: ProviderSession
            do throws(SecretServiceError) {
                session = try await link.session(deadline: deadline)
            } catch {
                throw error.during(operation)
            }
            do throws(SecretServiceError) {
                let started = ContinuousClock.now
                try await session.bus.ensureResponding(session.owner, operation: operation, deadline: deadline)
                let value = try await body(session, deadline)
                SecretServiceDiagnostics.report(.debug, "\(operation): \(elapsedMilliseconds(since: started))")
                return value
            } catch where error.code == .disconnected && attempt < 3 {
                SecretServiceDiagnostics.report(.warning, "\(operation): the connection was lost (\(error.detail ?? error.message)); trying again")
                link.invalidate(session)
            } catch {
                SecretServiceDiagnostics.report(error.code == .itemNotFound ? .debug : .warning, "\(operation) failed: \(error.code) (\(error.message))")
                throw error
            }
        }
    }
}
