import DBusTransport

/// Where in its life a call failed: the same D-Bus error means different things while looking
/// for the provider (ServiceUnknown: there is none) and later (ServiceUnknown: the provider we
/// talked to is gone, so reconnect).
enum CallPhase: Sendable {
    /// Asking the bus who owns `org.freedesktop.secrets`, or starting it.
    case findingProvider
    /// Opening a transport session with the provider.
    case openingSession
    /// Any later call to the provider.
    case call
}

extension SecretServiceError {
    /// The one translation of what the transport reports (``BusError``: what the bus or the
    /// provider answered, or why no answer came) into a ``SecretServiceError``, for the phase of
    /// the call. Everything above the transport sees only its result.
    static func translating(_ error: BusError, phase: CallPhase, timeout: Duration? = nil) -> SecretServiceError {
        let operation = error.operation
        switch error.code {
        case .remote:
            return translatingRemote(name: error.remoteName ?? "org.freedesktop.DBus.Error.Failed", text: error.text,
                                     operation: operation, phase: phase)
        case .timedOut:
            let timedOut = timeout.map { SecretServiceError.timedOut(operation, after: $0) }
                ?? SecretServiceError(.timedOut, operation: operation, message: "The keyring did not answer.",
                                      recovery: "Check that the keyring service is running, then try again.")
            return timedOut.with(detail: error.text)
        case .cancelled: return .cancelled(operation)
        case .closed: return .disconnected(operation, detail: error.text)
        case .noBus: return .noSessionBus(operation, detail: error.text)
        case .unexpectedReply: return .protocolError(operation, detail: error.text)
        case .failed: return .providerError(operation, detail: error.text, dbusErrorName: nil)
        }
    }

    /// An error reply named `name`, with its `text`.
    private static func translatingRemote(name: String, text: String, operation: String, phase: CallPhase) -> SecretServiceError {
        let detail = "\(text) (\(name))"
        // Providers name a session they forgot in their own ways, so it is recognised by its text
        // first, whatever the error's name: gnome-keyring "The session does not exist", KWallet
        // "Can't find session" (InvalidObjectPath from CreateItem, UnknownObject from SetSecret,
        // which is not an item that is gone). A new session fixes it.
        let lowered = text.lowercased()
        if lowered.contains("session"),
           lowered.contains("does not exist") || lowered.contains("no such session") || lowered.contains("find session") {
            return .disconnected(operation, detail: "the provider no longer knows our session: \(detail)", dbusErrorName: name)
        }
        // The bus started the provider and says at once why it did not come up: named, not a wait.
        if phase == .findingProvider, name.hasPrefix("org.freedesktop.DBus.Error.Spawn.") {
            return .providerFailedToStart(operation, busText: text, dbusErrorName: name)
        }
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
             "org.freedesktop.DBus.Error.Spawn.ServiceNotFound", "org.freedesktop.DBus.Error.Spawn.ChildExited",
             "org.freedesktop.DBus.Error.Spawn.ExecFailed", "org.freedesktop.DBus.Error.Spawn.Failed":
            return phase == .findingProvider
                ? .noSecretService(operation, detail: detail, dbusErrorName: name)
                : .disconnected(operation, detail: detail, dbusErrorName: name)
        case "org.freedesktop.Secret.Error.NoSession":
            return .disconnected(operation, detail: "the provider no longer knows our session: \(detail)", dbusErrorName: name)
        case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.Secret.Error.NoSuchObject",
             // gnome-keyring answers calls on a deleted item with "No such interface … on object at path".
             "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface":
            return .itemNotFound(operation, detail: detail, dbusErrorName: name)
        case "org.freedesktop.Secret.Error.IsLocked":
            return SecretServiceError.locked(operation, promptsAllowed: true, detail: detail).with(dbusErrorName: name)
        case "org.freedesktop.DBus.Error.NoReply" where text.contains("disconnected"):
            // "Message recipient disconnected from message bus without replying": it died mid-call.
            return .disconnected(operation, detail: detail, dbusErrorName: name)
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
             "org.freedesktop.DBus.Error.TimedOut":
            return SecretServiceError(.timedOut, operation: operation, message: "The keyring did not answer.",
                                      recovery: "Check that the keyring service is running, then try again.",
                                      detail: detail, dbusErrorName: name)
        case "org.freedesktop.DBus.Error.Disconnected":
            return .disconnected(operation, detail: detail, dbusErrorName: name)
        default:
            return .providerError(operation, detail: detail, dbusErrorName: name)
        }
    }

    func with(dbusErrorName name: String?) -> SecretServiceError {
        SecretServiceError(code, operation: operation, message: message, recovery: recovery, detail: detail, dbusErrorName: name)
    }

    /// The same error with `detail` in place of its own.
    func with(detail: String) -> SecretServiceError {
        SecretServiceError(code, operation: operation, message: message, recovery: recovery, detail: detail, dbusErrorName: dbusErrorName)
    }
}
