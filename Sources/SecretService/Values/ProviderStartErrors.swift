// The words of a provider the bus starts on demand (D-Bus activation, as a desktop session does
// on first use) and that does not come up: told apart from "no provider at all", because the
// fix is the provider's own, and from a plain hang, because only the deadline ends the wait.

extension SecretServiceError {
    /// The bus tried to start the provider and reported at once that it failed
    /// (`org.freedesktop.DBus.Error.Spawn.*`: it exited with an error status or a signal before it
    /// took the name, or could not be run). `.noSecretService`, naming the failure; `busText` (the
    /// bus's own words, which name the service) goes to `detail`.
    static func providerFailedToStart(_ operation: String, busText: String, dbusErrorName: String) -> SecretServiceError {
        SecretServiceError(
            .noSecretService, operation: operation,
            message: "The keyring service could not be started: \(startFailure(dbusErrorName, busText)).",
            recovery: "Start it by hand to see why (its D-Bus service file names the command the bus runs), "
                + "or start another keyring: GNOME Keyring, KWallet with its Secret Service integration on, "
                + "or KeePassXC with Secret Service integration enabled.",
            detail: "\(busText) (\(dbusErrorName))", dbusErrorName: dbusErrorName)
    }

    /// The call's deadline passed while the bus was starting the provider: it was started (or is
    /// being started) and has not taken its name. The bus cannot tell such a provider from one
    /// that exited with status 0 (a daemon that forked), so only the deadline ends the wait.
    static func providerStartedButSilent(_ operation: String, after timeout: Duration, service: String) -> SecretServiceError {
        SecretServiceError(
            .timedOut, operation: operation,
            message: "The keyring service was started but did not answer within \(timeout.secondsText), the call's whole "
                + "timeout: it is hung, waiting on something no one can see, or it exited without an error.",
            recovery: "Start it by hand to see what it does (its D-Bus service file names the command the bus runs), "
                + "then try again.",
            detail: "StartServiceByName(\(service)) got no answer within \(timeout.secondsText): the bus was starting the "
                + "service (D-Bus activation) and it had not taken the name")
    }

    /// What a `Spawn` error says happened, in words without D-Bus names: "it exited with status 1
    /// before it answered".
    static func startFailure(_ name: String, _ busText: String) -> String {
        func number(after words: String) -> String? {
            guard let range = busText.firstRange(of: words) else { return nil }
            let digits = busText[range.upperBound...].prefix { $0.isNumber }
            return digits.isEmpty ? nil : String(digits)
        }
        switch name.split(separator: ".").last.map(String.init) ?? "" {
        case "ChildExited":
            return number(after: "exited with status ").map { "the bus started it and it exited with status \($0) before it answered" }
                ?? "the bus started it and it exited before it answered"
        case "ChildSignaled":
            return number(after: "received signal ").map { "the bus started it and it was ended by signal \($0) before it answered" }
                ?? "the bus started it and it was ended by a signal before it answered"
        case "ExecFailed":
            return "the bus could not run its program"
        case "ServiceNotFound":
            return "the bus could not find the service it is started as"
        case "ConfigInvalid", "ServiceInvalid", "FileInvalid", "PermissionsInvalid":
            return "its D-Bus service file is not valid"
        default:
            return "the bus could not start it"
        }
    }
}
