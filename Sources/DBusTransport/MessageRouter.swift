internal import CGLib
import Locking

/// What the message filter of one ``BusConnection`` does, and the state it keeps: the calls
/// waiting for replies (by serial: serials are per connection) and the signals awaited (a
/// prompt's `Completed`, a portal request's `Response`), each from one sender.
///
/// `receive` runs on GDBus's reader thread, one message at a time, in the order they arrived, and
/// tells the connection's ``BusObserver`` of each signal and each reply before it hands a reply
/// over: what a protocol counts from signals (SecretService's changes) is counted before the
/// reply that follows them is delivered.
///
/// Anyone can send a signal to our unique name. An awaited signal is delivered only when it comes
/// from the sender it was awaited from; the observer decides for itself whom it believes.
package final class MessageRouter: Sendable {
    /// A call waiting for its reply.
    package struct PendingReply: Sendable {
        package init(destination: String, path: String, interface: String, member: String, operation: String,
                     deliver: @escaping @Sendable (Result<IncomingReply, BusError>) -> Void) {
            (self.destination, self.path, self.interface, self.member, self.operation, self.deliver)
                = (destination, path, interface, member, operation, deliver)
        }

        /// Whom the call went to: a unique name, a well-known name, or the bus.
        package let destination: String
        /// The object, interface and method called, for messages.
        package let path: String
        package let interface: String
        package let member: String
        package let operation: String
        let deliver: @Sendable (Result<IncomingReply, BusError>) -> Void
        /// When it was sent (set when registered).
        package fileprivate(set) var sent = ContinuousClock.now

        /// "Secret.Item.GetSecret on /org/…/login/3 (read secret)", for messages.
        package var callDescription: String {
            let shortInterface = interface.hasPrefix("org.freedesktop.") ? String(interface.dropFirst("org.freedesktop.".count)) : interface
            return "\(shortInterface).\(member) on \(path) (\(operation))"
        }
    }

    /// A signal awaited from one process: a prompt's `Completed`, a portal request's `Response`.
    package struct AwaitedSignal: Sendable {
        /// The unique name of the process it must come from.
        package let sender: String
        package let interface: String
        package let member: String
        package let operation: String
        /// Gets the signal's body, or why it will not come.
        let deliver: @Sendable (Result<Variant, BusError>) -> Void

        package init(sender: String, interface: String, member: String, operation: String,
                     deliver: @escaping @Sendable (Result<Variant, BusError>) -> Void) {
            (self.sender, self.interface, self.member, self.operation, self.deliver) = (sender, interface, member, operation, deliver)
        }
    }

    private struct State {
        var replies: [UInt32: PendingReply] = [:]
        /// Awaited signals by object path.
        var awaited: [String: AwaitedSignal] = [:]
        var closed = false
        /// The members of the calls sent, in order (the last ``callLogLimit``), for tests.
        var callLog: [String] = []
    }
    private static let callLogLimit = 256

    /// Our own unique name on the bus.
    package let busName: String
    let observer: (any BusObserver)?
    private let state = Locked(State())

    package init(busName: String, observer: (any BusObserver)?) {
        self.busName = busName
        self.observer = observer
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `body` under the lock the filter takes, with whether the connection is closed and a
    /// function that registers a reply.
    package func registering<R>(_ body: (_ closed: Bool, _ register: (UInt32, PendingReply) -> Void) -> R) -> R {
        state.withLock { state in
            body(state.closed) { serial, pending in
                var pending = pending
                pending.sent = .now
                state.replies[serial] = pending
                state.callLog.append(pending.member)
                if state.callLog.count > Self.callLogLimit { state.callLog.removeFirst() }
            }
        }
    }

    /// The methods called since the last `takeCallLog` (the last 256 at most). For tests.
    package func takeCallLog() -> [String] { state.withLock { state in defer { state.callLog = [] }; return state.callLog } }

    /// Forgets the call with `serial`: its reply, if one comes, is dropped.
    package func forget(serial: UInt32) { _ = state.withLock { $0.replies.removeValue(forKey: serial) } }

    /// The call with `serial` reached its deadline without a reply: forgets it and returns it (when
    /// it was still waiting), for whoever judges what the silence means.
    package func noReply(serial: UInt32) -> PendingReply? {
        state.withLock { $0.replies.removeValue(forKey: serial) }
    }

    /// Awaits `signal` on `path`; false when the connection is closed.
    package func awaitSignal(_ signal: AwaitedSignal, on path: ObjectPath) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.awaited[path.rawValue] = signal
            return true
        }
    }

    /// Stops awaiting the signal on `path`.
    package func stopAwaiting(on path: ObjectPath) { _ = state.withLock { $0.awaited.removeValue(forKey: path.rawValue) } }

    /// Whether a signal of `interface` is awaited now.
    package func isAwaiting(interface: String) -> Bool {
        state.withLock { $0.awaited.values.contains { $0.interface == interface } }
    }

    /// Ends every call to `destination` and every signal awaited from it with `error(operation)`:
    /// it left the bus (the bus would leave them waiting for ever).
    package func fail(awaitingFrom destination: String, _ error: @escaping @Sendable (_ operation: String) -> BusError) {
        let (replies, signals) = state.withLock { state -> ([PendingReply], [AwaitedSignal]) in
            let replies = state.replies.filter { $0.value.destination == destination }
            for serial in replies.keys { state.replies[serial] = nil }
            let signals = state.awaited.filter { $0.value.sender == destination }
            for path in signals.keys { state.awaited[path] = nil }
            return (Array(replies.values), Array(signals.values))
        }
        guard !replies.isEmpty || !signals.isEmpty else { return }
        LoopThread.shared.perform {
            for pending in replies { pending.deliver(.failure(error(pending.operation))) }
            for awaited in signals { awaited.deliver(.failure(error(awaited.operation))) }
        }
    }

    /// Handles one incoming message; true when it was a reply to one of our calls (consumed:
    /// released here).
    package func receive(_ message: OpaquePointer) -> Bool {
        switch g_dbus_message_get_message_type(message) {
        case G_DBUS_MESSAGE_TYPE_METHOD_RETURN, G_DBUS_MESSAGE_TYPE_ERROR:
            return receiveReply(message)
        case G_DBUS_MESSAGE_TYPE_SIGNAL:
            receiveSignal(message)
            return false
        default:
            return false
        }
    }

    private func receiveReply(_ message: OpaquePointer) -> Bool {
        let serial = g_dbus_message_get_reply_serial(message)
        guard let pending = state.withLock({ $0.replies.removeValue(forKey: serial) }) else {
            return false  // not a reply to any call we sent
        }
        defer { g_object_unref(UnsafeMutableRawPointer(message)) }
        let isError = g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_ERROR
        let body = g_dbus_message_get_body(message).map(Variant.init(retaining:))
        let sender = g_dbus_message_get_sender(message).map { String(cString: $0) }
        observer?.reply(from: sender, isError: isError)
        if isError {
            let name = g_dbus_message_get_error_name(message).map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            let text = body.flatMap { $0.isOfType("(s)") ? $0.child(0).string : nil } ?? ""
            pending.deliver(.failure(CapturedError.remote(name: name, message: text).busError(operation: pending.operation)))
        } else {
            pending.deliver(.success(IncomingReply(body: body, sender: sender)))
        }
        return true
    }

    private func receiveSignal(_ message: OpaquePointer) {
        guard let sender = g_dbus_message_get_sender(message).map({ String(cString: $0) }),
              let interface = g_dbus_message_get_interface(message).map({ String(cString: $0) }),
              let member = g_dbus_message_get_member(message).map({ String(cString: $0) }) else { return }
        let body = g_dbus_message_get_body(message).map(Variant.init(retaining:))
        let path = g_dbus_message_get_path(message).map { String(cString: $0) } ?? ""
        observer?.signal(IncomingSignal(sender: sender, path: path, interface: interface, member: member, body: body))
        let awaited: AwaitedSignal? = state.withLock { state in
            guard let awaited = state.awaited[path], awaited.sender == sender, awaited.interface == interface,
                  awaited.member == member else { return nil }
            state.awaited[path] = nil
            return awaited
        }
        guard let awaited else { return }
        guard let body else {
            awaited.deliver(.failure(BusError(.unexpectedReply, operation: awaited.operation, text: "\(member) without arguments")))
            return
        }
        awaited.deliver(.success(body))
    }

    /// The connection is closed: everything waiting on it ends now, and nothing more is sent.
    package func connectionClosed(reason: String) {
        let (replies, signals) = state.withLock { state -> ([PendingReply], [AwaitedSignal]) in
            state.closed = true
            defer { state.replies = [:]; state.awaited = [:] }
            return (Array(state.replies.values), Array(state.awaited.values))
        }
        observer?.closed()
        guard !replies.isEmpty || !signals.isEmpty else { return }
        LoopThread.shared.perform {
            for pending in replies { pending.deliver(.failure(BusError(.closed, operation: pending.operation, text: reason))) }
            for awaited in signals { awaited.deliver(.failure(BusError(.closed, operation: awaited.operation, text: reason))) }
        }
    }
}

/// A reply to one of our calls: its body and who sent it.
package struct IncomingReply: Sendable {
    package let body: Variant?
    /// The unique name of the peer that answered (the bus's own name for its answers).
    package let sender: String?

    package init(body: Variant?, sender: String?) { (self.body, self.sender) = (body, sender) }
}

/// A signal as it arrived.
package struct IncomingSignal: Sendable {
    /// The unique name of its sender (`org.freedesktop.DBus` for the bus's).
    package let sender: String
    package let path: String
    package let interface: String
    package let member: String
    package let body: Variant?
}

/// What a protocol on a connection learns from its traffic, told on GDBus's reader thread in the
/// order the messages arrived, each before the reply that follows it is delivered. Implementations
/// keep their own state under their own lock, and must not block.
package protocol BusObserver: Sendable {
    /// A signal arrived (from anyone: the observer decides whom it believes).
    func signal(_ signal: IncomingSignal)
    /// A reply (or an error reply) to one of our calls arrived from `sender`.
    func reply(from sender: String?, isError: Bool)
    /// A call reached its deadline without any reply (the peer may have stopped answering).
    func noReply(to call: MessageRouter.PendingReply)
    /// The connection closed.
    func closed()
}
