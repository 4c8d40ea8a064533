internal import CGLib

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
    /// The one translation of what the C side reports (a `GError`, or an error reply read by the
    /// transport) into a ``SecretServiceError``, with a catch-all. Everything above the C
    /// boundary sees only its result.
    static func translating(_ error: CapturedError, operation: String, phase: CallPhase) -> SecretServiceError {
        let name = error.remoteName
        let detail = error.developerText
        // Providers name a session they forgot in their own ways, so it is recognised by its text
        // first, whatever the error's name: gnome-keyring "The session does not exist", KWallet
        // "Can't find session" (InvalidObjectPath from CreateItem, UnknownObject from SetSecret,
        // which is not an item that is gone). A new session fixes it.
        let text = error.message.lowercased()
        if text.contains("session"),
           text.contains("does not exist") || text.contains("no such session") || text.contains("find session") {
            return .disconnected(operation, detail: "the provider no longer knows our session: \(detail)", dbusErrorName: name)
        }
        // The bus started the provider and says at once why it did not come up: named, not a wait.
        if phase == .findingProvider, let name, name.hasPrefix("org.freedesktop.DBus.Error.Spawn.") {
            return .providerFailedToStart(operation, busText: error.message, dbusErrorName: name)
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
        case "org.freedesktop.DBus.Error.NoReply" where error.message.contains("disconnected"):
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
            break
        }
        switch error.domain {
        case .io:
            switch error.code {
            case Int32(G_IO_ERROR_CANCELLED.rawValue):
                return .cancelled(operation)
            case Int32(G_IO_ERROR_TIMED_OUT.rawValue):
                return SecretServiceError(.timedOut, operation: operation, message: "The keyring did not answer.",
                                          recovery: "Check that the keyring service is running, then try again.", detail: detail)
            case Int32(G_IO_ERROR_CLOSED.rawValue), Int32(G_IO_ERROR_BROKEN_PIPE.rawValue),
                 Int32(G_IO_ERROR_CONNECTION_CLOSED.rawValue):
                return .disconnected(operation, detail: detail)
            default:
                return .providerError(operation, detail: detail, dbusErrorName: name)
            }
        case .dbus, .other:
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
