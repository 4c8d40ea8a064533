import Synchronization

/// One live connection to the Secret Service: a `SecretService` proxy with its transport session,
/// plus what was learned through it (alias paths, item proxies). Dropped as a whole when the
/// provider goes away, so nothing stale survives a daemon restart.
final class ServiceConnection: Sendable {
    let service: LibSecret.Service
    /// `plain` or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    let transportAlgorithm: String
    /// The provider process (its unique bus name) this connection's session belongs to.
    let owner: String?
    private let aliases = Mutex<[String: String]>([:])
    private let itemProxies = Mutex<[String: LibSecret.Item]>([:])

    init(service: LibSecret.Service, transportAlgorithm: String, owner: String?) {
        self.service = service
        self.transportAlgorithm = transportAlgorithm
        self.owner = owner
    }

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

    private enum State {
        case idle
        case connecting(Task<ServiceConnection, any Error>)
        case connected(ServiceConnection)
    }
    private let state = Mutex<State>(.idle)

    /// The current connection, opening one if needed.
    func connection(deadline: Deadline) async throws -> ServiceConnection {
        let current: (ServiceConnection?, Task<ServiceConnection, any Error>?) = state.withLock { state in
            switch state {
            case .connected(let connection):
                return (connection, nil)
            case .connecting(let task):
                return (nil, task)
            case .idle:
                let task = Task { try await Self.open(deadline: deadline) }
                state = .connecting(task)
                return (nil, task)
            }
        }
        if let connection = current.0 { return connection }
        let task = current.1!
        do {
            let connection = try await task.value
            state.withLock { state in
                if case .connecting = state { state = .connected(connection) }
            }
            return connection
        } catch {
            state.withLock { state in
                if case .connecting(let current) = state, current == task { state = .idle }
            }
            throw error
        }
    }

    /// Forgets `connection` (if it is still the current one) so the next call opens a new one.
    func invalidate(_ connection: ServiceConnection) {
        state.withLock { state in
            if case .connected(let current) = state, current === connection { state = .idle }
        }
    }

    /// Drops whatever connection there is.
    func reset() { state.withLock { $0 = .idle } }

    private static func open(deadline: Deadline) async throws -> ServiceConnection {
        do {
            try await LibSecret.busGet(deadline: deadline)
        } catch {
            throw SecretServiceError.from(error, operation: "connect to the session bus", phase: .connectingBus)
        }
        do {
            let service = try await LibSecret.serviceOpen(deadline: deadline)
            let algorithm = await LibSecret.sessionAlgorithms(service)
            let owner = await LibSecret.nameOwner(service)
            return ServiceConnection(service: service, transportAlgorithm: algorithm, owner: owner)
        } catch {
            throw SecretServiceError.from(error, operation: "open a Secret Service session", phase: .openingSession)
        }
    }
}
