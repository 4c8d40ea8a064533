import DBusTransport
import Locking
import Waiting

/// A bus connection as SecretService uses it: the transport's ``BusConnection`` with the
/// provider's traffic read (``ProviderTraffic``), every reply stamped with the ``ChangeToken`` of
/// its moment, and every failure translated once into a ``SecretServiceError`` for its call's
/// phase.
final class ProviderBus: Sendable {
    let connection: BusConnection
    let traffic: ProviderTraffic
    /// The probe of a provider that stopped answering, one at a time (``ensureResponding(_:operation:deadline:)``).
    let probing = SharedWork<Bool, SecretServiceError>(timekeeper: LoopThread.timekeeper)

    private init(connection: BusConnection, traffic: ProviderTraffic) {
        self.connection = connection
        self.traffic = traffic
    }

    /// The signals the client reads. Provider signals are matched by the well-known name (the bus
    /// resolves it to the current owner); the traffic then believes only the owner it knows, and
    /// the bus itself for NameOwnerChanged.
    private static let matchRules = [
        "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.freedesktop.secrets'",
        "type='signal',sender='org.freedesktop.secrets',interface='org.freedesktop.Secret.Collection'",
        "type='signal',sender='org.freedesktop.secrets',interface='org.freedesktop.Secret.Service'",
        "type='signal',sender='org.freedesktop.secrets',interface='org.freedesktop.Secret.Prompt'",
    ]

    /// Connects to `bus`.
    /// - Throws: `.noSessionBus` when there is no bus to connect to or it refuses us; `.timedOut`,
    ///   `.cancelled`.
    static func open(_ bus: BusAddress, deadline: Deadline) async throws(SecretServiceError) -> ProviderBus {
        let traffic = ProviderTraffic()
        do throws(BusError) {
            let connection = try await BusConnection.open(bus, observer: traffic, matchRules: matchRules, deadline: deadline)
            traffic.attach(connection.router)
            return ProviderBus(connection: connection, traffic: traffic)
        } catch {
            throw SecretServiceError.translating(error, phase: .findingProvider, timeout: deadline.timeout)
        }
    }

    /// Our unique name on the bus.
    var uniqueName: String { connection.uniqueName }
    /// Whether the bus closed the connection.
    var isClosed: Bool { connection.isClosed }
    /// The change token now.
    var token: ChangeToken { traffic.token }

    /// Sends `call` and waits for its reply, stamped with the change token of its moment.
    /// - Throws: the reply's error, translated for `phase`; `.timedOut` at `deadline` (its detail
    ///   says which call waited how long); `.cancelled`; `.disconnected` when the connection closes
    ///   or (for calls to the provider) the provider goes away first.
    func call(_ call: MethodCall, operation: String, phase: CallPhase = .call,
              deadline: Deadline) async throws(SecretServiceError) -> Reply {
        let stamp = Locked<ChangeToken?>(nil)
        let traffic = traffic
        do throws(BusError) {
            let reply = try await connection.call(call, operation: operation, deadline: deadline) { _ in
                stamp.withLock { $0 = traffic.token }
            }
            return Reply(body: reply.body, token: stamp.withLock { $0 } ?? traffic.token)
        } catch {
            throw SecretServiceError.translating(error, phase: phase, timeout: deadline.timeout)
        }
    }

    /// Sends `call`; `deliver` gets its reply (stamped) or failure exactly once, on the transport's
    /// threads. Returns the serial, or nil when sending failed (`deliver` has then run).
    @discardableResult
    func send(_ call: MethodCall, operation: String, phase: CallPhase,
              deliver: @escaping @Sendable (Result<Reply, SecretServiceError>) -> Void) -> UInt32? {
        let traffic = traffic
        return connection.send(call, operation: operation) { result in
            deliver(result.map { Reply(body: $0.body, token: traffic.token) }
                .mapError { SecretServiceError.translating($0, phase: phase) })
        }
    }

    /// Sends `call` with the no-reply-expected flag.
    func sendWithoutReply(_ call: MethodCall) { connection.sendWithoutReply(call) }

    /// Forgets the call with `serial`: its reply, if one comes, is dropped.
    func forget(serial: UInt32) { connection.router.forget(serial: serial) }

    /// The unique name of `name`'s owner, starting it when the bus can. The answer for
    /// `org.freedesktop.secrets` is recorded as the provider, in order with the signals.
    /// - Throws: `.noSecretService` when nothing owns the name and the bus cannot start it;
    ///   connection errors, `.timedOut`, `.cancelled`.
    /// `activating` hears `true` when the bus is asked to start the service and `false` once it did.
    func owner(of name: String, operation: String, deadline: Deadline,
               activating: (@Sendable (Bool) -> Void)? = nil) async throws(SecretServiceError) -> String {
        let traffic = traffic
        do throws(BusError) {
            return try await connection.owner(of: name, operation: operation, deadline: deadline, onAnswer: { owner in
                if name == "org.freedesktop.secrets" { traffic.ownerAnswered(owner) }
            }, activating: activating)
        } catch {
            throw SecretServiceError.translating(error, phase: .findingProvider, timeout: deadline.timeout)
        }
    }

    /// Awaits the signal `member` of `interface` on `path` from `sender`; `deliver` gets its body,
    /// or why it will not come. False when the connection closed, or when the signal is awaited
    /// from the Secret Service provider (`fromProvider`) and that provider changed already.
    func awaitSignal(_ member: String, of interface: String, on path: ObjectPath, from sender: String, fromProvider: Bool,
                     operation: String, deliver: @escaping @Sendable (Result<Variant, SecretServiceError>) -> Void) -> Bool {
        let signal = MessageRouter.AwaitedSignal(sender: sender, interface: interface, member: member, operation: operation) {
            deliver($0.mapError { SecretServiceError.translating($0, phase: .call) })
        }
        if interface == "org.freedesktop.Secret.Prompt" { traffic.promptAwaited() }
        guard !fromProvider || traffic.owner == sender, connection.router.awaitSignal(signal, on: path) else { return false }
        // The owner may have changed between the check and the registration: checked again, so a
        // change the traffic saw meanwhile (and whose ending of awaited signals ran before this
        // one was there) does not leave it waiting.
        guard !fromProvider || traffic.owner == sender else {
            connection.router.stopAwaiting(on: path)
            return false
        }
        return true
    }

    /// Stops awaiting the signal on `path`.
    func stopAwaiting(on path: ObjectPath) { connection.router.stopAwaiting(on: path) }

    /// The methods called since the last `takeCallLog`. For tests.
    func takeCallLog() -> [String] { connection.router.takeCallLog() }
}

/// A method reply, with the change token at the moment the filter read it (in order with the
/// signals before it).
struct Reply: Sendable {
    let body: Variant?
    let token: ChangeToken

    /// The body, checked against `type`.
    func body(_ type: StaticString, in operation: String) throws(SecretServiceError) -> Variant {
        guard let body else { throw .protocolError(operation, detail: "empty reply where \(type) was expected") }
        return try body.checked(type, in: operation)
    }
}

extension Variant {
    /// Checks that a value has `type`, for a `.protocolError` that names the call.
    func checked(_ type: StaticString, in operation: String) throws(SecretServiceError) -> Variant {
        do throws(BusError) {
            return try expecting(type, in: operation)
        } catch {
            throw .protocolError(operation, detail: error.text)
        }
    }
}
