internal import CLibSecret

/// Where in a call an error happened; the same GLib error means different things while connecting
/// (e.g. ServiceUnknown: no provider at all) and later (ServiceUnknown: the provider we talked to is
/// gone, so reconnect).
enum CallPhase: Sendable { case connectingBus, openingSession, call }

extension SecretServiceError {
    /// The one mapping from GLib/libsecret errors to ``SecretServiceError``, with a catch-all.
    static func from(_ error: any Error, operation: String, phase: CallPhase) -> any Error {
        if error is SecretServiceError || error is CancellationError { return error }
        guard let glib = error as? GLibError else {
            return SecretServiceError(.providerError, operation: operation, message: "\(error)")
        }
        let name = glib.remoteName
        func make(_ code: Code, _ message: String) -> SecretServiceError {
            SecretServiceError(code, operation: operation, message: message, dbusErrorName: name)
        }

        if phase == .connectingBus {
            return make(.noSessionBus,
                        "no D-Bus session bus (\(glib.message)). Run inside a desktop session, set "
                        + "DBUS_SESSION_BUS_ADDRESS, or run the program inside dbus-test/run.")
        }
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
             "org.freedesktop.DBus.Error.Spawn.ServiceNotFound", "org.freedesktop.DBus.Error.Spawn.ChildExited",
             "org.freedesktop.DBus.Error.Spawn.ExecFailed":
            if phase == .openingSession {
                return make(.noSecretService,
                            "no Secret Service on the session bus: start gnome-keyring or KeePassXC "
                            + "(with Secret Service integration on), or run inside dbus-test/run.")
            }
            return make(.disconnected, "the Secret Service provider went away (\(glib.message)).")
        case "org.freedesktop.Secret.Error.NoSession":
            return make(.disconnected, "the provider no longer knows our session; it was probably restarted.")
        case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.Secret.Error.NoSuchObject",
             // gnome-keyring answers calls on a deleted item with "No such interface … on object at path".
             "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface":
            return make(.itemNotFound, "the object no longer exists: \(glib.message)")
        case "org.freedesktop.Secret.Error.IsLocked":
            return make(.locked, "the collection or item is locked; unlock the keyring and try again.")
        case "org.freedesktop.DBus.Error.NoReply" where glib.message.contains("disconnected"):
            // "Message recipient disconnected from message bus without replying": the provider died mid-call.
            return make(.disconnected, "the Secret Service provider exited during the call (\(glib.message)).")
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
             "org.freedesktop.DBus.Error.TimedOut":
            return make(.timedOut, "the Secret Service did not answer: \(glib.message)")
        case "org.freedesktop.DBus.Error.Disconnected":
            return make(.disconnected, "the D-Bus connection closed: \(glib.message)")
        default:
            break
        }
        // libsecret strips the D-Bus name from most errors it passes on, so a session the provider
        // forgot (it restarted, or dropped our session) is only recognisable by its message:
        // gnome-keyring says "The session does not exist" / "The session wrapping the secret does
        // not exist", KWallet "Can't find session". A new session fixes it.
        let message = glib.message.lowercased()
        if message.contains("session"),
           message.contains("does not exist") || message.contains("no such session") || message.contains("find session") {
            return make(.disconnected, "the provider no longer knows our session (\(glib.message)).")
        }
        switch glib.domain {
        case .secret:
            if glib.code == Int32(SECRET_ERROR_PROTOCOL.rawValue), message.contains("invalid secret") {
                // libsecret could not decrypt what the provider sent with the session's key: the
                // two sides derived different keys (KWallet does, about one session in 200).
                return make(.disconnected, "the secret could not be decrypted with this session's key (\(glib.message)); "
                            + "a new session is needed.")
            }
            switch glib.code {
            case Int32(SECRET_ERROR_IS_LOCKED.rawValue):
                return make(.locked, "the collection or item is locked; unlock the keyring and try again.")
            case Int32(SECRET_ERROR_NO_SUCH_OBJECT.rawValue):
                return make(.itemNotFound, "the object no longer exists: \(glib.message)")
            default:
                return make(.providerError, "\(glib.message) (\(glib.domainName) \(glib.code))")
            }
        case .io:
            switch glib.code {
            case Int32(G_IO_ERROR_TIMED_OUT.rawValue):
                return make(.timedOut, "the Secret Service did not answer: \(glib.message)")
            case Int32(G_IO_ERROR_CLOSED.rawValue), Int32(G_IO_ERROR_BROKEN_PIPE.rawValue),
                 Int32(G_IO_ERROR_CONNECTION_CLOSED.rawValue):
                return make(.disconnected, "the D-Bus connection closed: \(glib.message)")
            case Int32(G_IO_ERROR_CANCELLED.rawValue):
                return CancellationError()
            default:
                return make(.providerError, "\(glib.message) (\(glib.domainName) \(glib.code))")
            }
        case .dbus, .other:
            return make(.providerError, "\(glib.message) (\(glib.domainName) \(glib.code))")
        }
    }
}
