internal import CGLib
import Locking

/// What the message filter of one ``BusConnection`` does, and the state it keeps: the calls
/// waiting for replies (by serial: serials are per connection), the signals awaited (a prompt's
/// `Completed`, a portal request's `Response`), who owns `org.freedesktop.secrets`, and the count
/// of changes behind ``ChangeToken``.
///
/// `receive` runs on GDBus's reader thread, one message at a time, in the order they arrived, so
/// a change signal is always counted before the reply that follows it is handed over.
///
/// Signals are believed only from whom they can come from: `NameOwnerChanged` from the bus
/// itself (`org.freedesktop.DBus`), Secret Service signals from the provider process this
/// connection knows as the owner, an awaited signal from the process it was awaited from. Anyone
/// can send a signal to our unique name; such signals are ignored.
final class SignalRouter: Sendable {
    struct PendingReply: Sendable {
        /// Whom the call went to: the provider's unique name, or the bus.
        let destination: String
        /// The object and interface called, for messages.
        var path: String = ""
        var interface: String = ""
        /// The method, e.g. `GetSecret`.
        let member: String
        let operation: String
        let phase: CallPhase
        /// A GetNameOwner of `org.freedesktop.secrets`: its answer sets the owner, in order.
        let isOwnerQuery: Bool
        /// A probe of a silent provider (``ProviderSilence/probe(to:)``).
        var isProbe = false
        let deliver: @Sendable (Result<Reply, SecretServiceError>) -> Void
        /// Set when registered: when it was sent, and how many prompts had been awaited by then.
        fileprivate(set) var sent = ContinuousClock.now
        fileprivate(set) var promptsAwaitedBefore: UInt64 = 0
    }

    /// A signal awaited from one process: a prompt's `Completed`, a portal request's `Response`.
    struct AwaitedSignal: Sendable {
        /// The unique name of the process it must come from.
        let sender: String
        let interface: String
        let member: String
        let operation: String
        /// Gets the signal's body, or why it will not come.
        let deliver: @Sendable (Result<Variant, SecretServiceError>) -> Void
    }

    private struct State {
        var replies: [UInt32: PendingReply] = [:]
        /// Awaited signals by object path.
        var awaited: [String: AwaitedSignal] = [:]
        var owner: String?
        var changes: UInt64 = 0
        var closed = false
        /// How many prompts' `Completed` have been awaited on this connection.
        var promptsAwaited: UInt64 = 0
        /// The provider that stopped answering, if it has (the one record of its health).
        var silence: ProviderSilence?
        /// The members of the calls sent, in order (the last ``callLogLimit``), for tests.
        var callLog: [String] = []
    }
    private static let callLogLimit = 256

    /// Tells tokens of different connections apart (random, so a new connection at the same
    /// address never matches an old one's tokens).
    let connectionID = UInt64.random(in: 1...UInt64.max)
    /// Our own unique name on the bus.
    let busName: String
    private let state = Locked(State())

    init(busName: String) { self.busName = busName }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// The provider's unique name as last reported by the bus, and the token now.
    var owner: String? { state.withLock { $0.owner } }

    /// The change token now.
    var token: ChangeToken { state.withLock { ChangeToken(connection: connectionID, count: $0.changes) } }

    /// Runs `body` under the lock the filter takes, with whether the connection is closed and a
    /// function that registers a reply.
    func registering<R>(_ body: (_ closed: Bool, _ register: (UInt32, PendingReply) -> Void) -> R) -> R {
        state.withLock { state in
            body(state.closed) { serial, pending in
                var pending = pending
                pending.sent = .now
                pending.promptsAwaitedBefore = state.promptsAwaited
                state.replies[serial] = pending
                state.callLog.append(pending.member)
                if state.callLog.count > Self.callLogLimit { state.callLog.removeFirst() }
            }
        }
    }

    /// The methods called since the last `takeCallLog` (the last 256 at most). For tests.
    func takeCallLog() -> [String] { state.withLock { state in defer { state.callLog = [] }; return state.callLog } }

    func forget(serial: UInt32) { _ = state.withLock { $0.replies.removeValue(forKey: serial) } }

    /// The call with `serial` reached its deadline without a reply: forgets it, and records the
    /// provider as silent when the call went to it and no prompt was open at any time since it
    /// was sent (``ProviderSilence``). Returns what the call waited for and how long, for its error.
    @discardableResult
    func noReply(serial: UInt32) -> String? {
        state.withLock { state -> String? in
            guard let pending = state.replies.removeValue(forKey: serial) else { return nil }
            let waited = "got no reply within \((ContinuousClock.now - pending.sent).secondsText)"
            let promptOpen = state.promptsAwaited != pending.promptsAwaitedBefore
                || state.awaited.values.contains { $0.interface == "org.freedesktop.Secret.Prompt" }
            if let owner = state.owner, pending.destination == owner, !promptOpen {
                if var silence = state.silence, silence.provider == owner {
                    if pending.isProbe {
                        silence.probes += 1
                        silence.lastProbe = waited
                    }
                    state.silence = silence
                } else {
                    state.silence = ProviderSilence(provider: owner, since: pending.sent,
                                                    unansweredCall: "\(pending.callDescription) \(waited)")
                }
            }
            return "\(pending.callDescription) \(waited) (sent to \(pending.destination))"
        }
    }

    /// The provider's silence, when `owner` is the provider and it has been silent since a call
    /// it did not answer.
    func silence(of owner: String) -> ProviderSilence? {
        state.withLock { state in state.silence.flatMap { $0.provider == owner && state.owner == owner ? $0 : nil } }
    }

    /// Awaits `signal` on `path`; false when the connection closed, or when the signal is awaited
    /// from the Secret Service provider (`fromProvider`) and that provider changed already.
    func awaitSignal(_ signal: AwaitedSignal, on path: ObjectPath, fromProvider: Bool) -> Bool {
        state.withLock { state in
            guard !state.closed, !fromProvider || state.owner == signal.sender else { return false }
            state.awaited[path.rawValue] = signal
            if signal.interface == "org.freedesktop.Secret.Prompt" { state.promptsAwaited += 1 }
            return true
        }
    }

    func stopAwaiting(on path: ObjectPath) { _ = state.withLock { $0.awaited.removeValue(forKey: path.rawValue) } }

    /// Handles one incoming message; true when it was a reply to one of our calls (consumed:
    /// released here).
    func receive(_ message: OpaquePointer) -> Bool {
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
        let isError = g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_ERROR
        let body = g_dbus_message_get_body(message).map(Variant.init(retaining:))
        let sender = g_dbus_message_get_sender(message).map { String(cString: $0) }
        guard let (pending, token) = state.withLock({ state -> (PendingReply, ChangeToken)? in
            guard let pending = state.replies.removeValue(forKey: serial) else { return nil }
            // It answers (an error the bus sends in its name, such as NoReply, is no answer).
            if let sender, sender == state.owner { state.silence = nil }
            if pending.isOwnerQuery, !isError, let body, body.isOfType("(s)") {
                let owner = body.child(0).string
                if state.owner != owner {
                    state.owner = owner
                    state.changes += 1
                }
            }
            return (pending, ChangeToken(connection: connectionID, count: state.changes))
        }) else {
            return false  // not a reply to any call we sent
        }
        defer { g_object_unref(UnsafeMutableRawPointer(message)) }
        if isError {
            let name = g_dbus_message_get_error_name(message).map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            let text = body.flatMap { $0.isOfType("(s)") ? $0.child(0).string : nil } ?? ""
            pending.deliver(.failure(SecretServiceError.translating(
                .remote(name: name, message: text), operation: pending.operation, phase: pending.phase)))
        } else {
            pending.deliver(.success(Reply(body: body, token: token)))
        }
        return true
    }

    private func receiveSignal(_ message: OpaquePointer) {
        guard let sender = g_dbus_message_get_sender(message).map({ String(cString: $0) }),
              let interface = g_dbus_message_get_interface(message).map({ String(cString: $0) }),
              let member = g_dbus_message_get_member(message).map({ String(cString: $0) }) else { return }
        let body = g_dbus_message_get_body(message).map(Variant.init(retaining:))
        if sender == "org.freedesktop.DBus" {
            if interface == "org.freedesktop.DBus", member == "NameOwnerChanged", let body, body.isOfType("(sss)"),
               body.child(0).string == "org.freedesktop.secrets" {
                ownerChanged(from: body.child(1).string, to: body.child(2).string)
            }
            return
        }
        let path = g_dbus_message_get_path(message).map { String(cString: $0) } ?? ""
        let awaited: AwaitedSignal? = state.withLock { state in
            if sender == state.owner {
                state.silence = nil  // it speaks
                switch (interface, member) {
                case ("org.freedesktop.Secret.Collection", "ItemCreated"), ("org.freedesktop.Secret.Collection", "ItemDeleted"):
                    state.changes += 1
                case ("org.freedesktop.Secret.Service", let member) where member.hasPrefix("Collection"):
                    // CollectionCreated/Deleted/Changed (lock state among others): KWallet, locked,
                    // still answers GetSecret with an empty secret, so nothing learned about a
                    // collection's items survives this.
                    state.changes += 1
                default:
                    break
                }
            }
            guard let awaited = state.awaited[path], awaited.sender == sender, awaited.interface == interface,
                  awaited.member == member else { return nil }
            state.awaited[path] = nil
            return awaited
        }
        guard let awaited else { return }
        guard let body else {
            awaited.deliver(.failure(.protocolError(awaited.operation, detail: "\(member) without arguments")))
            return
        }
        awaited.deliver(.success(body))
    }

    /// The bus says `org.freedesktop.secrets` changed hands: calls and prompts addressed to the
    /// old owner end now (libsecret and the bus would leave a prompt waiting forever).
    private func ownerChanged(from oldOwner: String, to newOwner: String) {
        let (replies, signals) = state.withLock { state -> ([PendingReply], [AwaitedSignal]) in
            state.owner = newOwner.isEmpty ? nil : newOwner
            state.changes += 1
            state.silence = nil
            guard !oldOwner.isEmpty else { return ([], []) }
            let replies = state.replies.filter { $0.value.destination == oldOwner }
            for serial in replies.keys { state.replies[serial] = nil }
            let signals = state.awaited.filter { $0.value.sender == oldOwner }
            for path in signals.keys { state.awaited[path] = nil }
            return (Array(replies.values), Array(signals.values))
        }
        guard !replies.isEmpty || !signals.isEmpty else { return }
        LoopThread.shared.perform {
            for pending in replies {
                pending.deliver(.failure(.disconnected(pending.operation, detail: "\(oldOwner) left the bus during the call")))
            }
            for awaited in signals {
                awaited.deliver(.failure(.disconnected(awaited.operation, detail: "\(oldOwner) left the bus before its \(awaited.member)")))
            }
        }
    }

    /// The connection is closed: everything waiting on it ends now, and nothing more is sent.
    func connectionClosed(reason: String) {
        let (replies, signals) = state.withLock { state -> ([PendingReply], [AwaitedSignal]) in
            state.closed = true
            state.changes += 1
            defer { state.replies = [:]; state.awaited = [:] }
            return (Array(state.replies.values), Array(state.awaited.values))
        }
        guard !replies.isEmpty || !signals.isEmpty else { return }
        LoopThread.shared.perform {
            for pending in replies { pending.deliver(.failure(.disconnected(pending.operation, detail: reason))) }
            for awaited in signals { awaited.deliver(.failure(.disconnected(awaited.operation, detail: reason))) }
        }
    }
}

