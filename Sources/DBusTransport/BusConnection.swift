internal import CGLib
import Locking
import Waiting

/// One D-Bus connection that a client holds: the one transport of the package. SecretService's
/// client, the Secret portal's and the TPM's name check stand on it.
///
/// A call is sent by the calling task itself (`g_dbus_connection_send_message` is thread-safe and
/// never blocks); a message filter, which GDBus runs on its reader thread as each message arrives,
/// hands the reply to the waiting call and tells the connection's ``BusObserver`` of every signal
/// and reply, in the order they came (``MessageRouter``). Replies are matched by serial within
/// this connection only.
///
/// The connection is private (not GLib's shared session-bus singleton) and never exits the
/// process when the bus closes: its calls fail with ``BusError/Code/closed``, and its owner opens a
/// new one.
package final class BusConnection: Sendable {
    let gdbus: GObjectOwner
    /// Our unique name on the bus, e.g. ":1.42".
    package let uniqueName: String
    package let router: MessageRouter
    private let filterID: guint
    private let closedHandler: gulong

    private init(gdbus: GObjectOwner, uniqueName: String, router: MessageRouter, filterID: guint, closedHandler: gulong) {
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

    /// Connects to `bus` (authentication and `Hello` included), tells `observer` of its traffic
    /// from the first message on, and asks the bus for the signals of `matchRules` (sent in order
    /// before any call, so no reply can overtake a signal they cover).
    /// - Throws: ``BusError/Code/noBus`` when there is no bus to connect to or it refuses us;
    ///   `.timedOut`, `.cancelled`.
    package static func open(_ bus: BusAddress, observer: (any BusObserver)? = nil, matchRules: [String] = [],
                             deadline: Deadline) async throws(BusError) -> BusConnection {
        let operation = "connect to the D-Bus session bus"
        guard let address = bus.resolved() else {
            throw BusError(.noBus, operation: operation,
                           text: "DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
        }
        let cancellable = GObjectOwner(adopting: g_cancellable_new())
        let opened = OneShot<GObjectOwner, BusError>(operation: operation, deadline: deadline)
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
                        opened.finish(.failure(BusError(.noBus, operation: operation,
                                                        text: "\(address): \(captured?.developerText ?? "no connection")")))
                    }
                })
            }
        }
        // Made on the loop thread and handed over through a lock, not through the continuation
        // alone: the lock orders the object's initialisation before every use here in a way
        // ThreadSanitizer sees (it reported the hand-over through the continuation as a race).
        let made = Locked<BusConnection?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            LoopThread.shared.perform {
                made.withLock { $0 = attach(to: connection, observer: observer) }
                continuation.resume()
            }
        }
        let bus = made.withLock { $0 }!
        for rule in matchRules { bus.addMatch(rule) }
        return bus
    }

    /// Orders each router's making (on the loop thread) before its use on GDBus's reader thread in
    /// a way ThreadSanitizer sees. GLib's own lock already orders them, but it is built on futexes
    /// TSan cannot see: a connection whose first message was a signal from another process, read
    /// before any call of ours woke the reader thread, was reported as a race. Taken once per
    /// connection made and once per message received (uncontended: tens of nanoseconds). It holds
    /// a count of the routers made, not `()`: TSan reported its own empty value as raced.
    private static let routerHandOver = Locked<UInt64>(0)

    /// Installs the filter and the `closed` handler (on the loop thread, so that `closed` is
    /// delivered here).
    private static func attach(to connection: GObjectOwner, observer: (any BusObserver)?) -> BusConnection {
        LoopThread.shared.assertCurrent("the closed signal is delivered on the context it was connected on")
        let raw = connection.opaque
        // The process must never get SIGTERM because the bus went away (GLib's shared session
        // bus connection has this on): say so explicitly on the connection we use.
        g_dbus_connection_set_exit_on_close(raw, 0)
        let uniqueName = String(cString: g_dbus_connection_get_unique_name(raw))
        let router = MessageRouter(busName: uniqueName, observer: observer)
        BusConnection.routerHandOver.withLock { $0 &+= 1 }
        let filterID = g_dbus_connection_add_filter(raw, { _, message, incoming, data in
            guard let message, incoming != 0 else { return message }
            _ = BusConnection.routerHandOver.withLock { $0 }
            let router = Unmanaged<MessageRouter>.fromOpaque(data!).takeUnretainedValue()
            return router.receive(message) ? nil : message
        }, Unmanaged.passRetained(router).toOpaque(), { data in
            Unmanaged<MessageRouter>.fromOpaque(data!).release()
        })
        let closedHandler = g_signal_connect_data(
            UnsafeMutableRawPointer(raw), "closed",
            unsafeBitCast({ (_: OpaquePointer?, _: gboolean, _: OpaquePointer?, data: gpointer?) in
                Unmanaged<MessageRouter>.fromOpaque(data!).takeUnretainedValue()
                    .connectionClosed(reason: "the bus closed the connection")
            } as @convention(c) (OpaquePointer?, gboolean, OpaquePointer?, gpointer?) -> Void, to: GCallback.self),
            Unmanaged.passRetained(router).toOpaque(), { data, _ in
                Unmanaged<MessageRouter>.fromOpaque(data!).release()
            }, GConnectFlags(rawValue: 0))
        return BusConnection(gdbus: connection, uniqueName: uniqueName, router: router, filterID: filterID,
                             closedHandler: closedHandler)
    }

    /// Asks the bus to route the signals matching `rule` to us.
    package func addMatch(_ rule: String) {
        sendWithoutReply(.bus(member: "AddMatch", arguments: .tuple([.string(rule)])))
    }

    /// Whether the bus closed the connection (then every call fails at once).
    package var isClosed: Bool { router.isClosed }

    /// Whether GLib would raise SIGTERM in this process when the bus closes the connection
    /// (GLib's shared session-bus connection does); always false for ours. For tests.
    package var exitsOnClose: Bool { g_dbus_connection_get_exit_on_close(gdbus.opaque) != 0 }

    /// Sends `call` and waits for its reply. `onReply` runs on GDBus's reader thread as the reply
    /// arrives, in order with the signals before it, before the caller resumes. A call that gets no
    /// reply by its deadline is handed to the observer (``BusObserver/noReply(to:)``).
    /// - Throws: the reply's error (``BusError/Code/remote``); `.timedOut` at `deadline` (its text
    ///   says which call waited how long); `.cancelled`; `.closed` when the connection closes (or
    ///   the observer ends calls to a peer that left the bus).
    package func call(_ call: MethodCall, operation: String, deadline: Deadline,
                      onReply: (@Sendable (IncomingReply) -> Void)? = nil) async throws(BusError) -> IncomingReply {
        let waiter = OneShot<IncomingReply, BusError>(operation: operation, deadline: deadline)
        let unanswered = Locked<MessageRouter.PendingReply?>(nil)
        do throws(BusError) {
            return try await waiter.value { waiter in
                let serial = send(call, operation: operation) { result in
                    if case .success(let reply) = result { onReply?(reply) }
                    waiter.finish(result)
                }
                if let serial {
                    waiter.onEnd { [router] result in
                        if case .failure(let error) = result, error.code == .timedOut {
                            unanswered.withLock { $0 = router.noReply(serial: serial) }
                        } else {
                            router.forget(serial: serial)
                        }
                    }
                }
            }
        } catch where error.code == .timedOut {
            guard let pending = unanswered.withLock({ $0 }) else { throw error }
            router.observer?.noReply(to: pending)
            throw error.with(text: "\(pending.callDescription) got no reply within \((ContinuousClock.now - pending.sent).secondsText) "
                + "(sent to \(pending.destination))")
        }
    }

    /// Sends `call`; `deliver` gets its reply or failure exactly once (or never, if
    /// ``MessageRouter/forget(serial:)`` is called first). Returns the serial, or nil when sending
    /// failed (`deliver` has then run).
    @discardableResult
    package func send(_ call: MethodCall, operation: String,
                      deliver: @escaping @Sendable (Result<IncomingReply, BusError>) -> Void) -> UInt32? {
        let message = call.message()
        defer { g_object_unref(UnsafeMutableRawPointer(message)) }
        let pending = MessageRouter.PendingReply(destination: call.destination, path: call.path.rawValue, interface: call.interface,
                                                 member: call.member, operation: operation, deliver: deliver)
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
        if let failure { deliver(.failure(failure.busError(operation: operation))) }
        return serial
    }

    /// Sends `call` with the no-reply-expected flag.
    package func sendWithoutReply(_ call: MethodCall) {
        let message = call.message()
        defer { g_object_unref(UnsafeMutableRawPointer(message)) }
        g_dbus_message_set_flags(message, G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED)
        g_dbus_connection_send_message(gdbus.opaque, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE, nil, nil)
    }

    /// The unique name of `name`'s owner, starting the service when the bus can (D-Bus activation,
    /// as a desktop session does on first use): the one owner lookup. `onAnswer` runs on GDBus's
    /// reader thread with the owner's name as the answer arrives, in order with the signals before it.
    /// - Throws: the bus's error when nothing owns the name and the bus cannot start it
    ///   (``BusError/Code/remote``: `ServiceUnknown`, or `Spawn.*` when the service failed to start);
    ///   connection errors, `.timedOut`, `.cancelled`.
    package func owner(of name: String, operation: String, deadline: Deadline,
                       onAnswer: (@Sendable (String) -> Void)? = nil,
                       activating: (@Sendable (Bool) -> Void)? = nil) async throws(BusError) -> String {
        let query = MethodCall.bus(member: "GetNameOwner", arguments: .tuple([.string(name)]))
        let record: @Sendable (IncomingReply) -> Void = { reply in
            if let body = reply.body, body.isOfType("(s)") { onAnswer?(body.child(0).string) }
        }
        do throws(BusError) {
            return try await call(query, operation: operation, deadline: deadline, onReply: record)
                .expecting("(s)", in: operation).child(0).string
        } catch where error.remoteName == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            // No owner now: ask the bus to start one (ServiceUnknown when it cannot).
            activating?(true)
            _ = try await call(.bus(member: "StartServiceByName", arguments: .tuple([.string(name), .uint32(0)])),
                               operation: operation, deadline: deadline)
            activating?(false)
            return try await call(query, operation: operation, deadline: deadline, onReply: record)
                .expecting("(s)", in: operation).child(0).string
        }
    }
}

/// A method call to send.
package struct MethodCall: Sendable {
    package var destination: String
    package var path: ObjectPath
    package var interface: String
    package var member: String
    package var arguments: Argument?
    /// File descriptors sent with the call (`.handle(i)` refers to the i-th); the message keeps
    /// duplicates of them, so the caller still owns and closes its own.
    package var fileDescriptors: [Int32] = []

    package init(destination: String, path: ObjectPath, interface: String, member: String, arguments: Argument? = nil) {
        (self.destination, self.path, self.interface, self.member, self.arguments) = (destination, path, interface, member, arguments)
    }

    /// A call to the bus itself.
    package static func bus(member: String, arguments: Argument?) -> MethodCall {
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

extension IncomingReply {
    /// The body, checked against `type`.
    /// - Throws: ``BusError/Code/unexpectedReply`` for an empty reply or another type.
    package func expecting(_ type: StaticString, in operation: String) throws(BusError) -> Variant {
        guard let body else { throw BusError(.unexpectedReply, operation: operation, text: "empty reply where \(type) was expected") }
        return try body.expecting(type, in: operation)
    }
}
