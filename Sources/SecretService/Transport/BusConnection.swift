internal import CGLib
import Locking
import Waiting
#if canImport(Glibc)
import Glibc
#endif

/// Where a client connects: the session bus, or any D-Bus address (a test's private bus).
public struct BusAddress: Sendable, Hashable, CustomStringConvertible {
    let address: String?

    /// The session bus: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`. Never autolaunches
    /// a bus (no bus is `.noSessionBus` at once).
    public static let session = BusAddress(address: nil)

    /// A D-Bus address such as `unix:path=/run/user/1000/bus`.
    public static func address(_ address: String) -> BusAddress { BusAddress(address: address) }

    public var description: String { address ?? "the session bus" }

    /// The address to connect to, or nil when there is no session bus.
    func resolved() -> String? {
        if let address { return address }
        if let value = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }), !value.isEmpty {
            return value
        }
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty {
            var info = stat()
            let socket = runtime + "/bus"
            if stat(socket, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { return "unix:path=" + socket }
        }
        return nil
    }
}

/// One D-Bus connection that a client holds: the one transport of SecretService.
///
/// A call is sent by the calling task itself (`g_dbus_connection_send_message` is thread-safe and
/// never blocks); a message filter, which GDBus runs on its reader thread as each message arrives,
/// hands the reply to the waiting call and reads the signals that matter (``SignalRouter``), in
/// the order they came. Replies are matched by serial within this connection only.
///
/// The connection is private (not GLib's shared session-bus singleton) and never exits the
/// process when the bus closes: its calls fail with `.disconnected`, and the client opens a new one.
final class BusConnection: Sendable {
    let gdbus: GObjectOwner
    /// Our unique name on the bus, e.g. ":1.42".
    let uniqueName: String
    let router: SignalRouter
    private let filterID: guint
    private let closedHandler: gulong
    /// The probe of a provider that stopped answering, one at a time (``ensureResponding(_:operation:deadline:)``).
    let probing = SharedWork<Bool, SecretServiceError>(timekeeper: LoopThread.timekeeper)

    private init(gdbus: GObjectOwner, uniqueName: String, router: SignalRouter, filterID: guint, closedHandler: gulong) {
        self.gdbus = gdbus
        self.uniqueName = uniqueName
        self.router = router
        self.filterID = filterID
        self.closedHandler = closedHandler
    }

    deinit {
        let connection = LoopBound(gdbus.opaque)
        let (filter, handler) = (filterID, closedHandler)
        LoopThread.shared.perform {
            g_signal_handler_disconnect(UnsafeMutableRawPointer(connection.value), handler)
            g_dbus_connection_remove_filter(connection.value, filter)
            g_dbus_connection_close(connection.value, nil, nil, nil)
        }
        router.connectionClosed(reason: "the client released its connection")
    }

    /// Connects to `bus` (authentication and `Hello` included).
    /// - Throws: `.noSessionBus` when there is no bus to connect to or it refuses us; `.timedOut`,
    ///   `.cancelled`.
    static func open(_ bus: BusAddress, deadline: Deadline) async throws(SecretServiceError) -> BusConnection {
        let operation = "connect to the D-Bus session bus"
        guard let address = bus.resolved() else {
            throw .noSessionBus(operation, detail: "DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
        }
        let cancellable = GObjectOwner(adopting: g_cancellable_new())
        let opened = OneShot<GObjectOwner, SecretServiceError>(operation: operation, deadline: deadline)
        opened.onEnd { result in
            if case .failure = result { g_cancellable_cancel(cancellable.typed(GCancellable.self)) }
        }
        let connection = try await opened.value { opened in
            LoopThread.shared.perform {
                let flags = GDBusConnectionFlags(rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                                                 | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
                g_dbus_connection_new_for_address(address, flags, nil, cancellable.typed(GCancellable.self), AsyncCallback.trampoline,
                                                  AsyncCallback.userData { result in
                    var error: UnsafeMutablePointer<GError>?
                    if let connection = g_dbus_connection_new_for_address_finish(result, &error) {
                        opened.finish(.success(GObjectOwner(adopting: connection)))
                    } else {
                        let captured = error.map(takeGError)
                        opened.finish(.failure(.noSessionBus(operation, detail: "\(address): \(captured?.developerText ?? "no connection")")))
                    }
                })
            }
        }
        return await withCheckedContinuation { continuation in
            LoopThread.shared.perform {
                continuation.resume(returning: attach(to: connection))
            }
        }
    }

    /// Installs the filter and the `closed` handler (on the loop thread, so that `closed` is
    /// delivered here) and subscribes to the signals the client reads.
    private static func attach(to connection: GObjectOwner) -> BusConnection {
        LoopThread.shared.assertCurrent("the closed signal is delivered on the context it was connected on")
        let raw = connection.opaque
        // The process must never get SIGTERM because the bus went away (GLib's shared session
        // bus connection has this on): say so explicitly on the connection we use.
        g_dbus_connection_set_exit_on_close(raw, 0)
        let uniqueName = String(cString: g_dbus_connection_get_unique_name(raw))
        let router = SignalRouter(busName: uniqueName)
        let filterID = g_dbus_connection_add_filter(raw, { _, message, incoming, data in
            guard let message, incoming != 0 else { return message }
            let router = Unmanaged<SignalRouter>.fromOpaque(data!).takeUnretainedValue()
            return router.receive(message) ? nil : message
        }, Unmanaged.passRetained(router).toOpaque(), { data in
            Unmanaged<SignalRouter>.fromOpaque(data!).release()
        })
        let closedHandler = g_signal_connect_data(
            UnsafeMutableRawPointer(raw), "closed",
            unsafeBitCast({ (_: OpaquePointer?, _: gboolean, _: OpaquePointer?, data: gpointer?) in
                Unmanaged<SignalRouter>.fromOpaque(data!).takeUnretainedValue()
                    .connectionClosed(reason: "the bus closed the connection")
            } as @convention(c) (OpaquePointer?, gboolean, OpaquePointer?, gpointer?) -> Void, to: GCallback.self),
            Unmanaged.passRetained(router).toOpaque(), { data, _ in
                Unmanaged<SignalRouter>.fromOpaque(data!).release()
            }, GConnectFlags(rawValue: 0))
        let bus = BusConnection(gdbus: connection, uniqueName: uniqueName, router: router, filterID: filterID,
                                closedHandler: closedHandler)
        // Signals reach the filter only if the bus routes them to us. Sent in order before any
        // call, so no reply can overtake a signal these rules cover. Provider signals are matched
        // by the well-known name (the bus resolves it to the current owner); the router then
        // believes only the owner it knows, and the bus itself for NameOwnerChanged.
        for rule in [
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.freedesktop.secrets'",
            "type='signal',sender='org.freedesktop.secrets',interface='org.freedesktop.Secret.Collection'",
            "type='signal',sender='org.freedesktop.secrets',interface='org.freedesktop.Secret.Service'",
            "type='signal',sender='org.freedesktop.secrets',interface='org.freedesktop.Secret.Prompt'",
        ] {
            bus.sendWithoutReply(.bus(member: "AddMatch", arguments: .tuple([.string(rule)])))
        }
        return bus
    }

    /// Whether the bus closed the connection (then every call fails at once).
    var isClosed: Bool { router.isClosed }

    /// Whether GLib would raise SIGTERM in this process when the bus closes the connection
    /// (GLib's shared session-bus connection does); always false for ours. For tests.
    package var exitsOnClose: Bool { g_dbus_connection_get_exit_on_close(gdbus.opaque) != 0 }

    /// Sends `call` and waits for its reply. A call to the provider that gets no reply by its
    /// deadline tells the router the provider may have stopped (``SignalRouter/noReply(serial:)``).
    /// - Throws: the reply's error, translated for `phase`; `.timedOut` at `deadline` (its detail
    ///   says which call waited how long); `.cancelled`; `.disconnected` when the connection closes
    ///   or (for calls to the provider) the provider goes away first.
    func call(_ call: MethodCall, operation: String, phase: CallPhase = .call,
              deadline: Deadline) async throws(SecretServiceError) -> Reply {
        let waiter = OneShot<Reply, SecretServiceError>(operation: operation, deadline: deadline)
        let unanswered = Locked<String?>(nil)
        do throws(SecretServiceError) {
            return try await waiter.value { waiter in
                let serial = send(call, operation: operation, phase: phase) { waiter.finish($0) }
                if let serial {
                    waiter.onEnd { [router] result in
                        if case .failure(let error) = result, error.code == .timedOut {
                            let waited = router.noReply(serial: serial)
                            unanswered.withLock { $0 = waited }
                        } else {
                            router.forget(serial: serial)
                        }
                    }
                }
            }
        } catch where error.code == .timedOut {
            guard let waited = unanswered.withLock({ $0 }) else { throw error }
            throw error.with(detail: waited)
        }
    }

    /// Sends `call`; `deliver` gets its reply or failure exactly once (or never, if ``SignalRouter/forget(serial:)``
    /// is called first). Returns the serial, or nil when sending failed (`deliver` has then run).
    @discardableResult
    func send(_ call: MethodCall, operation: String, phase: CallPhase,
              deliver: @escaping @Sendable (Result<Reply, SecretServiceError>) -> Void) -> UInt32? {
        let message = call.message()
        defer { g_object_unref(UnsafeMutableRawPointer(message)) }
        let pending = SignalRouter.PendingReply(destination: call.destination, path: call.path.rawValue, interface: call.interface,
                                                member: call.member, operation: operation, phase: phase,
                                                isOwnerQuery: call.isOwnerQuery, isProbe: call.isProbe, deliver: deliver)
        var failure: CapturedError?
        // Registered under the lock the filter takes: a reply that comes before send_message
        // returns still finds its entry.
        let serial: UInt32? = router.registering { closed, register in
            guard !closed else {
                failure = CapturedError(domain: .io, code: Int32(G_IO_ERROR_CLOSED.rawValue), message: "the connection is closed",
                                        remoteName: nil, domainName: "g-io-error-quark")
                return nil
            }
            var serial: guint32 = 0
            var error: UnsafeMutablePointer<GError>?
            guard g_dbus_connection_send_message(gdbus.opaque, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE, &serial, &error) != 0 else {
                failure = error.map(takeGError) ?? CapturedError(domain: .io, code: 0, message: "not sent", remoteName: nil, domainName: "")
                return nil
            }
            register(serial, pending)
            return serial
        }
        if let failure {
            deliver(.failure(SecretServiceError.translating(failure, operation: operation, phase: phase)))
        }
        return serial
    }

    /// Sends `call` with the no-reply-expected flag.
    func sendWithoutReply(_ call: MethodCall) {
        let message = call.message()
        defer { g_object_unref(UnsafeMutableRawPointer(message)) }
        g_dbus_message_set_flags(message, G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED)
        g_dbus_connection_send_message(gdbus.opaque, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE, nil, nil)
    }
}

extension BusConnection {
    /// The unique name of `name`'s owner, starting the service when the bus can (D-Bus activation,
    /// as a desktop session does on first use): the one owner lookup. `recordingOwner`: the name is
    /// `org.freedesktop.secrets`, whose answer the router records in order (``MethodCall/isOwnerQuery``).
    /// `activating` hears `true` when the bus is asked to start the service and `false` once it did.
    /// - Throws: `.noSecretService` when nothing owns the name and the bus cannot start it (its
    ///   ServiceUnknown); connection errors, `.timedOut`, `.cancelled`.
    func owner(of name: String, recordingOwner: Bool = false, operation: String, deadline: Deadline,
               activating: (@Sendable (Bool) -> Void)? = nil) async throws(SecretServiceError) -> String {
        var query = MethodCall.bus(member: "GetNameOwner", arguments: .tuple([.string(name)]))
        query.isOwnerQuery = recordingOwner
        do throws(SecretServiceError) {
            return try await call(query, operation: operation, phase: .findingProvider, deadline: deadline)
                .body("(s)", in: operation).child(0).string
        } catch where error.code == .noSecretService {
            // No owner now: ask the bus to start one (ServiceUnknown when it cannot).
            activating?(true)
            _ = try await call(.bus(member: "StartServiceByName", arguments: .tuple([.string(name), .uint32(0)])),
                               operation: operation, phase: .findingProvider, deadline: deadline)
            activating?(false)
            return try await call(query, operation: operation, phase: .findingProvider, deadline: deadline)
                .body("(s)", in: operation).child(0).string
        }
    }
}

/// A method call to send.
struct MethodCall: Sendable {
    var destination: String
    var path: ObjectPath
    var interface: String
    var member: String
    var arguments: Argument?
    /// A `GetNameOwner` of `org.freedesktop.secrets`, whose answer the router records in order.
    var isOwnerQuery = false
    /// A probe of a provider that stopped answering (``ProviderSilence/probe(to:)``).
    var isProbe = false
    /// File descriptors sent with the call (`.handle(i)` refers to the i-th); the message keeps
    /// duplicates of them, so the caller still owns and closes its own.
    var fileDescriptors: [Int32] = []

    /// A call to the bus itself.
    static func bus(member: String, arguments: Argument?) -> MethodCall {
        MethodCall(destination: "org.freedesktop.DBus", path: .bus, interface: "org.freedesktop.DBus",
                   member: member, arguments: arguments)
    }

    /// A new GDBusMessage (the caller unrefs it).
    func message() -> OpaquePointer {
        let message = g_dbus_message_new_method_call(destination, path.rawValue, interface, member)!
        if let arguments { g_dbus_message_set_body(message, arguments.build()) }
        if !fileDescriptors.isEmpty {
            let list = g_unix_fd_list_new()!
            defer { g_object_unref(UnsafeMutableRawPointer(list)) }
            for descriptor in fileDescriptors { _ = g_unix_fd_list_append(list, descriptor, nil) }
            g_dbus_message_set_unix_fd_list(message, list)
        }
        return message
    }
}

/// A method reply, with the change token at the moment the filter read it (in order with the
/// signals before it).
struct Reply: Sendable {
    let body: Variant?
    let token: ChangeToken

    /// The body, checked against `type`.
    func body(_ type: StaticString, in operation: String) throws(SecretServiceError) -> Variant {
        guard let body else { throw .protocolError(operation, detail: "empty reply where \(type) was expected") }
        return try body.expecting(type, in: operation)
    }
}
