import Locking
import Synchronization

/// A process-wide counter that lets callers cache which item holds what safely.
///
/// It advances whenever any client may have created or deleted an item (the provider's
/// `ItemCreated` / `ItemDeleted` signals) and whenever a connection is opened or dropped (signals may
/// have been missed). A provider sends the signal before it answers the call that caused it, and
/// the counter is advanced on GDBus's reader thread as the signal is read, before the reply is
/// handed to anyone, so a value read before and after a call tells whether anything was created or
/// deleted in between.
public enum ItemChanges {
    private static let counter = Atomic<UInt64>(1)

    /// The current value. Cheap (one atomic load); never blocks.
    public static var generation: UInt64 { counter.load(ordering: .acquiring) }

    static func advance() { counter.add(1, ordering: .releasing) }
}

/// A process-wide counter of changes of the provider: it advances whenever the bus reports that
/// `org.freedesktop.secrets` got a new owner or lost it (`NameOwnerChanged`).
///
/// GDBus proxies follow a well-known name to its new owner, so after a provider restart an old
/// connection keeps working for calls that need no session (searches, properties, deletes) and
/// fails only where the session matters — and some providers fail those badly: KeePassXC answers
/// with a prompt that it then dismisses (`NoSession` in its log), which libsecret 0.20.5 never
/// reports back, so the call would wait for its deadline. A connection is therefore dropped as
/// soon as the provider changed, before it is used again, rather than after a call failed.
enum ProviderChanges {
    private static let counter = Atomic<UInt64>(1)

    /// The current value. Cheap (one atomic load); never blocks.
    static var epoch: UInt64 { counter.load(ordering: .acquiring) }

    static func advance() { counter.add(1, ordering: .releasing) }
}

/// One live connection to the Secret Service: a `SecretService` proxy with its transport session,
/// plus what was learned through it (alias paths, item proxies). Dropped as a whole when the
/// provider goes away, so nothing stale survives a daemon restart.
final class ServiceConnection: Sendable {
    let service: LibSecret.Service
    /// `plain` or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    let transportAlgorithm: String
    /// The provider process (its unique bus name) this connection's session belongs to.
    let owner: String?
    /// Keeps ``ItemChanges`` and ``ProviderChanges`` current while this connection lives.
    let subscription: SignalSubscription
    /// ``ProviderChanges/epoch`` when the connection was opened: once it moves, the connection is
    /// not used for new calls.
    let providerEpoch: UInt64
    private let aliases = Locked<[String: String]>([:])
    private let itemProxies = Locked<[String: LibSecret.Item]>([:])

    init(service: LibSecret.Service, transportAlgorithm: String, owner: String?, subscription: SignalSubscription,
         providerEpoch: UInt64) {
        self.service = service
        self.transportAlgorithm = transportAlgorithm
        self.owner = owner
        self.subscription = subscription
        self.providerEpoch = providerEpoch
    }

    /// Whether the bus has reported a new owner (or none) for the provider's name since this
    /// connection was opened.
    var isOutdated: Bool { providerEpoch != ProviderChanges.epoch }

    /// Whether the provider this connection talked to has gone (exited, restarted, replaced).
    /// libsecret strips the D-Bus error name from most errors, so after a failed call this is how
    /// a stale session is told apart from an ordinary error.
    func providerChanged() async -> Bool {
        await LibSecret.nameOwner(service) != owner
    }

    func cachedAlias(_ alias: String) -> String? { aliases.withLock { $0[alias] } }
    func rememberAlias(_ alias: String, path: String) { aliases.withLock { $0[alias] = path } }

    /// The proxy for an item, created on first use (one GetAll round trip) and kept while the item
    /// exists: later writes to the same item cost one round trip.
    func itemProxy(_ path: String, deadline: Deadline) async throws -> LibSecret.Item {
        if let proxy = itemProxies.withLock({ $0[path] }) { return proxy }
        let proxy = try await LibSecret.itemProxy(service, path: path, deadline: deadline)
        return itemProxies.withLock { proxies in
            if let existing = proxies[path] { return existing }
            proxies[path] = proxy
            return proxy
        }
    }

    func forgetItem(_ path: String) { _ = itemProxies.withLock { $0.removeValue(forKey: path) } }
}

/// Opens the process's connection on first use, shares it between all clients, and replaces it
/// after the provider went away. Connection setup is serialized: concurrent first calls wait for
/// one OpenSession instead of racing (gnome-keyring has crashed on concurrent OpenSession).
final class ConnectionManager: Sendable {
    static let shared = ConnectionManager()

    /// Either a connection, or the task opening one, or neither. Kept as two optionals rather
    /// than an enum with payloads: Swift stores an enum's case in the spare bits of the object
    /// pointer, which hides the pointer from valgrind's leak checker (it then reports the
    /// connection as lost).
    private struct State {
        var connected: ServiceConnection?
        var connecting: Task<ServiceConnection, any Error>?
    }
    private let state = Locked(State())

    /// The current connection, opening one if needed (also when the provider changed since the
    /// current one was opened).
    func connection(deadline: Deadline) async throws -> ServiceConnection {
        let (connection, task) = state.withLock { state -> (ServiceConnection?, Task<ServiceConnection, any Error>?) in
            if let connected = state.connected {
                if !connected.isOutdated { return (connected, nil) }
                state.connected = nil
                ItemChanges.advance()
            }
            if let connecting = state.connecting { return (nil, connecting) }
            let task = Task { try await Self.open(deadline: deadline) }
            state.connecting = task
            return (nil, task)
        }
        if let connection { return connection }
        do {
            let opened = try await task!.value
            state.withLock { state in
                if state.connecting == task {
                    state.connecting = nil
                    state.connected = opened
                }
            }
            return opened
        } catch {
            state.withLock { state in
                if state.connecting == task { state.connecting = nil }
            }
            throw error
        }
    }

    /// Forgets `connection` (if it is still the current one) so the next call opens a new one.
    func invalidate(_ connection: ServiceConnection) {
        state.withLock { state in
            if state.connected === connection { state.connected = nil }
        }
        ItemChanges.advance()
    }

    /// Drops whatever connection there is.
    func reset() {
        state.withLock { $0 = State() }
        ItemChanges.advance()
    }

    private static func open(deadline: Deadline) async throws -> ServiceConnection {
        // Read before anything is opened: a provider change during the opening makes the new
        // connection outdated at once (opened again on first use) rather than missed.
        let epoch = ProviderChanges.epoch
        do {
            try await LibSecret.busGet(deadline: deadline)
        } catch {
            throw SecretServiceError.from(error, operation: "connect to the session bus", phase: .connectingBus)
        }
        do {
            var service = try await openRetryingRejectedKeys(deadline: deadline)
            var algorithm = await LibSecret.sessionAlgorithms(service)
            // libsecret falls back to a plain session silently when the encrypted one fails to
            // negotiate; KWallet rejects about one client key in 256 ("Client public key size is
            // invalid"). A new session has a new key: try again a couple of times before settling
            // for plain (which calls then refuse unless the client allows it).
            for _ in 0..<2 where algorithm == "plain" {
                service = try await openRetryingRejectedKeys(deadline: deadline)
                algorithm = await LibSecret.sessionAlgorithms(service)
            }
            let owner = await LibSecret.nameOwner(service)
            let subscription = await LibSecret.subscribeToChanges(service)
            ItemChanges.advance()
            return ServiceConnection(service: service, transportAlgorithm: algorithm, owner: owner,
                                     subscription: subscription, providerEpoch: epoch)
        } catch {
            throw SecretServiceError.from(error, operation: "open a Secret Service session", phase: .openingSession)
        }
    }

    /// Opens a session, trying again (up to three times in all) when the provider rejects the
    /// client's DH public key: KWallet refuses keys shorter than 128 bytes ("Client public key size
    /// is invalid", InvalidArgs), which libsecret generates about one time in 256.
    private static func openRetryingRejectedKeys(deadline: Deadline) async throws -> LibSecret.Service {
        var attempt = 1
        while true {
            do {
                return try await LibSecret.serviceOpen(deadline: deadline)
            } catch let error as GLibError
                where attempt < 3 && (error.remoteName == "org.freedesktop.DBus.Error.InvalidArgs"
                                      || error.message.contains("public key")) {
                attempt += 1
            }
        }
    }
}
