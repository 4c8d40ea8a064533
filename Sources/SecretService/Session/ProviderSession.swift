import DBusTransport
import Locking
import Waiting
#if canImport(Glibc)
import Glibc
#endif

/// The process that owns `org.freedesktop.secrets`, checked, on one bus connection, with the
/// transport session negotiated with it and what was learned through it (alias paths, lock
/// states). Replaced as a whole when the connection closes or the provider changes, so nothing
/// stale survives a restart.
///
/// The transport (OpenSession, with a Diffie-Hellman key pair on each side: the slowest step of a
/// first call) is started as soon as the provider is trusted and negotiated in the background; only calls that
/// carry a secret wait for it (``transport(deadline:)``), so a first `get` resolves the alias and
/// searches while the keys are made.
final class ProviderSession: Sendable {
    let bus: ProviderBus
    let owner: String
    let processID: UInt32?
    private let userID: UInt32
    let executable: String?
    let kind: ProviderKind
    /// Collection paths by alias (and by the path given, once checked): read once per session; the
    /// two searches of a first `get` both resolve `default` and share the read.
    let aliases = RememberedReads<String, ObjectPath, SecretServiceError>(timekeeper: LoopThread.timekeeper, rememberingOnly: { $0 != .none })
    private let lockStates = Locked<[ObjectPath: (locked: Bool, token: ChangeToken)]>([:])
    /// The negotiated transport, once open: opened once at a time (gnome-keyring has crashed on
    /// concurrent OpenSession), opened again by the next caller when an opening failed.
    private let negotiated = Locked<SessionCrypto?>(nil)
    private let negotiation = SharedWork<SessionCrypto, SecretServiceError>(timekeeper: LoopThread.timekeeper)

    private init(bus: ProviderBus, owner: String, processID: UInt32?, userID: UInt32) {
        self.bus = bus
        self.owner = owner
        self.processID = processID
        self.userID = userID
        self.executable = processID.flatMap(Self.executable(ofProcess:))
        self.kind = ProviderKind(executable: executable)
    }

    /// Who the provider is, with the negotiated transport.
    func provider(transport: SessionCrypto) -> SecretServiceProvider {
        SecretServiceProvider(uniqueName: owner, processID: processID, userID: userID, executable: executable,
                              transportAlgorithm: transport.algorithm, clientName: bus.uniqueName)
    }

    /// "GNOME Keyring (pid 7, /usr/bin/gnome-keyring-daemon)", for logs.
    var description: String {
        "\(SecretServiceProvider.displayName(ofExecutable: executable)) (pid \(processID.map(String.init) ?? "?"), "
            + "\(executable ?? "executable unknown"))"
    }

    /// Whether calls may still go through this session: the connection is open and the bus has
    /// not reported another owner since.
    var isCurrent: Bool { !bus.isClosed && bus.traffic.owner == owner }

    /// The transport session: the one being negotiated (joined), or a new negotiation when the
    /// last one failed.
    /// - Throws: what ``ProviderQuirks/openSession(on:owner:deadline:)`` throws; `.timedOut` at the
    ///   caller's own deadline; `.cancelled`.
    func transport(deadline: Deadline) async throws(SecretServiceError) -> SessionCrypto {
        if let open = negotiated.withLock({ $0 }) { return open }
        return try await negotiation.value(operation: "open a session with the keyring", deadline: deadline) { [self] deadline throws(SecretServiceError) in
            if let open = negotiated.withLock({ $0 }) { return open }
            let started = ContinuousClock.now
            let crypto: SessionCrypto
            do throws(SecretServiceError) {
                crypto = try await ProviderQuirks.openSession(on: bus, owner: owner, deadline: deadline)
            } catch {
                SecretServiceDiagnostics.report(.warning, "Could not open a session with \(description): \(error.code) (\(error.message))")
                throw error
            }
            negotiated.withLock { $0 = crypto }
            SecretServiceDiagnostics.report(.info, "Opened a \(crypto.algorithm) session with \(description) in \(elapsedMilliseconds(since: started))")
            return crypto
        }
    }

    /// Forgets `crypto` if it is still the negotiated transport, and closes it on the provider:
    /// the next call that needs a transport negotiates another. For a transport the provider does
    /// not share the key of (``ProviderQuirks/verifiesWrites(_:)``); a call still using it meets
    /// NoSession and is retried on a new session, as after a restart.
    func discardTransport(_ crypto: SessionCrypto) {
        let discarded = negotiated.withLock { current -> Bool in
            guard current === crypto else { return false }
            current = nil
            return true
        }
        if discarded { crypto.close(on: bus, owner: owner) }
    }

    /// Starts negotiating the transport now, for the calls that will need it.
    func startNegotiating(deadline: Deadline) {
        Task(executorPreference: BlockingBridge.preferredExecutor) { [self] in _ = try? await transport(deadline: deadline) }
    }

    /// Calls `member` on the provider.
    func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: Argument? = nil,
              operation: String, deadline: Deadline) async throws(SecretServiceError) -> Reply {
        try await bus.call(MethodCall(destination: owner, path: path, interface: interface, member: member,
                                      arguments: arguments), operation: operation, deadline: deadline)
    }

    /// A collection's lock state, if it was read while nothing changed since (`Collection…`
    /// signals, which announce lock changes, move the token).
    func knownLockState(of collection: ObjectPath) -> Bool? {
        let now = bus.token
        return lockStates.withLock { states in
            guard let known = states[collection], now.isUnchanged(since: known.token) else { return nil }
            return known.locked
        }
    }

    func remember(locked: Bool, of collection: ObjectPath, at token: ChangeToken) {
        lockStates.withLock { $0[collection] = (locked, token) }
    }

    /// Finds the provider on `bus` and checks that it runs as our user; the transport is then
    /// negotiated in the background (``startNegotiating(deadline:)``). `activating`: see
    /// ``ProviderBus/owner(of:operation:deadline:activating:)``.
    /// - Throws: `.noSecretService`, `.untrustedProvider`, `.protocolError`, connection errors.
    static func open(on bus: ProviderBus, deadline: Deadline,
                     activating: (@Sendable (Bool) -> Void)? = nil) async throws(SecretServiceError) -> ProviderSession {
        let owner = try await bus.owner(of: "org.freedesktop.secrets", operation: "find the keyring service", deadline: deadline,
                                        activating: activating)
        let credentials = try await bus.call(
            .bus(member: "GetConnectionCredentials", arguments: .tuple([.string(owner)])),
            operation: "identify the keyring service", phase: .findingProvider, deadline: deadline
        ).body("(a{sv})", in: "identify the keyring service").child(0)
        let uid = credentials.lookup("UnixUserID", "u")?.uint32
        let pid = credentials.lookup("ProcessID", "u")?.uint32
        let ourUID = UInt32(getuid())
        guard let uid else {
            throw .protocolError("identify the keyring service", detail: "the bus did not tell the Unix user of \(owner)")
        }
        guard uid == ourUID else {
            throw .untrustedProvider("identify the keyring service", providerUID: uid, ourUID: ourUID,
                                     detail: "owner \(owner), pid \(pid.map(String.init) ?? "unknown")")
        }
        let session = ProviderSession(bus: bus, owner: owner, processID: pid, userID: uid)
        session.startNegotiating(deadline: deadline)
        return session
    }

    /// The target of `/proc/PID/exe`, or nil when it is not visible.
    private static func executable(ofProcess pid: UInt32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The bus connection and provider session a client holds: opened on first use, opened again
/// when the connection closed or the provider changed. Opening is shared (``SharedWork``):
/// concurrent first calls wait for one opening, each with its own deadline and cancellation, so
/// a connection has one session (its transport is negotiated once, see ``ProviderSession``).
final class ProviderLink: Sendable {
    let bus: BusAddress
    private struct State {
        var connection: ProviderBus?
        var session: ProviderSession?
        /// The current opening asked the bus to start the provider and the bus has not said it
        /// did: a timeout then means it started and never answered.
        var activating = false
    }
    private let state = Locked(State())
    private let opening = SharedWork<ProviderSession, SecretServiceError>(timekeeper: LoopThread.timekeeper)

    init(bus: BusAddress) { self.bus = bus }

    /// The current session, or a new one.
    /// - Throws: what opening throws; `.timedOut` at the caller's own deadline; `.cancelled`.
    func session(deadline: Deadline) async throws(SecretServiceError) -> ProviderSession {
        if let current = state.withLock({ $0.session }), current.isCurrent { return current }
        do throws(SecretServiceError) {
            return try await open(deadline: deadline)
        } catch where error.code == .timedOut && state.withLock({ $0.activating }) {
            throw .providerStartedButSilent("connect to the keyring", after: deadline.timeout, service: "org.freedesktop.secrets")
        }
    }

    /// Opens a session, or joins the opening under way (``SharedWork``).
    private func open(deadline: Deadline) async throws(SecretServiceError) -> ProviderSession {
        try await opening.value(operation: "connect to the keyring", deadline: deadline) { deadline throws(SecretServiceError) in
            self.state.withLock { $0.activating = false }
            let previous = self.state.withLock { $0.session }
            if let previous, previous.isCurrent { return previous }
            let started = ContinuousClock.now
            let connection = self.state.withLock { state in state.connection.flatMap { $0.isClosed ? nil : $0 } }
            let bus: ProviderBus
            if let connection { bus = connection } else { bus = try await ProviderBus.open(self.bus, deadline: deadline) }
            self.state.withLock { $0.connection = bus }
            let session: ProviderSession
            do throws(SecretServiceError) {
                session = try await ProviderSession.open(on: bus, deadline: deadline) { starting in
                    self.state.withLock { $0.activating = starting }
                }
            } catch {
                SecretServiceDiagnostics.report(.warning, "Could not connect to the keyring service on \(self.bus): \(error.code) (\(error.message))")
                throw error
            }
            self.state.withLock { $0.session = session }
            SecretServiceDiagnostics.report(.info, (previous == nil ? "Connected to " : "Reconnected (the keyring service restarted or the connection closed) to ")
                + "\(session.description) on \(self.bus) in \(elapsedMilliseconds(since: started))")
            return session
        }
    }

    /// The open bus connection, or a new one (without a Secret Service session: for the portal).
    func busConnection(deadline: Deadline) async throws(SecretServiceError) -> ProviderBus {
        if let open = state.withLock({ $0.connection }), !open.isClosed { return open }
        let opened = try await ProviderBus.open(bus, deadline: deadline)
        return state.withLock { state in
            if let open = state.connection, !open.isClosed { return open }
            state.connection = opened
            return opened
        }
    }

    /// Forgets `session` if it is still the current one, so the next call opens another.
    func invalidate(_ session: ProviderSession) {
        state.withLock { state in
            if state.session === session { state.session = nil }
            if state.connection?.isClosed == true { state.connection = nil }
        }
    }

    /// The connection, if one is open (for diagnostics and change tokens).
    var connection: ProviderBus? { state.withLock { $0.connection } }
    /// The current session, if one is open (no I/O).
    var currentSession: ProviderSession? { state.withLock { $0.session.flatMap { $0.isCurrent ? $0 : nil } } }
}
