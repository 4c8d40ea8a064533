import Waiting
import DBusTransport
// The words of SecretServiceError: what each failure means for a person and what they can do.
// Messages never name object paths, D-Bus names or this repository's tools; those go in `detail`.

extension SecretServiceError {
    /// How to unlock, whatever the desktop.
    static let unlockAdvice = "Unlock your keyring (log in to the desktop, or unlock it in your keyring manager: "
        + "Passwords and Keys on GNOME, KWallet Manager on KDE, or unlock the KeePassXC database), then try again."

    static func noSessionBus(_ operation: String, detail: String?) -> SecretServiceError {
        SecretServiceError(
            .noSessionBus, operation: operation, message: "There is no D-Bus session bus, so the keyring cannot be reached.",
            recovery: "Run the program inside a desktop session, or set DBUS_SESSION_BUS_ADDRESS to the address of one.",
            detail: detail)
    }

    static func noSecretService(_ operation: String, detail: String?, dbusErrorName: String? = nil) -> SecretServiceError {
        SecretServiceError(
            .noSecretService, operation: operation, message: "No keyring service (Secret Service) is running.",
            recovery: "Start your keyring: GNOME Keyring, KWallet with its Secret Service integration on, "
                + "or KeePassXC with Secret Service integration enabled.",
            detail: detail, dbusErrorName: dbusErrorName)
    }

    static func untrustedProvider(_ operation: String, providerUID: UInt32, ourUID: UInt32, detail: String?) -> SecretServiceError {
        SecretServiceError(
            .untrustedProvider, operation: operation,
            message: "The keyring service on the session bus runs as another user (uid \(providerUID), not \(ourUID)), "
                + "so no secret is sent to it.",
            recovery: "Make sure your own keyring service owns the Secret Service name on your session bus.",
            detail: detail)
    }

    static func locked(_ operation: String, promptsAllowed: Bool, detail: String?) -> SecretServiceError {
        SecretServiceError(
            .locked, operation: operation,
            message: promptsAllowed ? "The keyring is locked." : "The keyring is locked, and unlock prompts are turned off.",
            recovery: unlockAdvice, detail: detail)
    }

    static func promptDismissed(_ operation: String, detail: String?) -> SecretServiceError {
        SecretServiceError(
            .promptDismissed, operation: operation,
            message: "The keyring stayed locked: its prompt was dismissed or could not be shown.",
            recovery: unlockAdvice, detail: detail)
    }

    /// The call's deadline passed. The detail says what was waited for; waits that know more
    /// (a D-Bus call, a prompt) replace it with which call or prompt waited how long.
    package static func timedOut(_ operation: String, after timeout: Duration) -> SecretServiceError {
        SecretServiceError(
            .timedOut, operation: operation,
            message: "The keyring did not answer within \(timeout.secondsText).",
            recovery: "Check that the keyring service is running and not waiting on a prompt no one can see, "
                + "then try again or allow a longer timeout.",
            detail: "waited \(timeout.secondsText), the call's whole timeout, to \(operation)")
    }

    static func notResponding(_ operation: String, detail: String) -> SecretServiceError {
        SecretServiceError(
            .notResponding, operation: operation,
            message: "The keyring service has stopped answering: it did not answer an earlier call, and it still does not.",
            recovery: "Check that the keyring service is running and not stopped or frozen, and restart it if need be; "
                + "calls go through again as soon as it answers.",
            detail: detail)
    }

    package static func cancelled(_ operation: String) -> SecretServiceError {
        SecretServiceError(.cancelled, operation: operation, message: "The operation was cancelled.")
    }

    static func itemNotFound(_ operation: String, detail: String?, dbusErrorName: String? = nil) -> SecretServiceError {
        SecretServiceError(
            .itemNotFound, operation: operation,
            message: "The item no longer exists: another program deleted or replaced it.",
            detail: detail, dbusErrorName: dbusErrorName)
    }

    static func ambiguous(_ operation: String, count: Int, detail: String?) -> SecretServiceError {
        SecretServiceError(
            .ambiguous, operation: operation, message: "\(count) items match where one was expected.",
            recovery: "Delete the extra items in your keyring manager, or search with more attributes.", detail: detail)
    }

    static func insecureTransport(_ operation: String) -> SecretServiceError {
        SecretServiceError(
            .insecureTransport, operation: operation,
            message: "The keyring service only offers an unencrypted transport: secrets would cross the bus in clear text.",
            recovery: "Use a keyring with encrypted sessions (GNOME Keyring, KeePassXC, or KWallet with the QCA "
                + "plugins installed), or allow plain transport explicitly.")
    }

    static func invalidArgument(_ operation: String, _ message: String) -> SecretServiceError {
        SecretServiceError(.invalidArgument, operation: operation, message: message)
    }

    static func disconnected(_ operation: String, detail: String?, dbusErrorName: String? = nil) -> SecretServiceError {
        SecretServiceError(
            .disconnected, operation: operation,
            message: "The connection to the keyring service was lost (it exited or restarted).",
            recovery: "Try again: the connection is made again by itself.", detail: detail, dbusErrorName: dbusErrorName)
    }

    static func protocolError(_ operation: String, detail: String) -> SecretServiceError {
        SecretServiceError(
            .protocolError, operation: operation, message: "The keyring service answered in a way the Secret Service "
                + "specification does not allow.",
            recovery: "Update or restart the keyring service; report the details if it persists.", detail: detail)
    }

    static func providerError(_ operation: String, detail: String?, dbusErrorName: String?) -> SecretServiceError {
        SecretServiceError(
            .providerError, operation: operation, message: "The keyring service refused the request.",
            recovery: "Check the keyring service's own log or messages; try again.", detail: detail,
            dbusErrorName: dbusErrorName)
    }

    /// How to create a default collection, whatever the desktop.
    static let createDefaultAdvice = "Create one: run the program again with prompts allowed (the keyring service "
        + "asks for the new keyring's password), or create a keyring in your keyring manager and make it the default "
        + "(Passwords and Keys on GNOME; KeePassXC: expose a group under Secret Service Integration); "
        + "`secret-tool store` creates one too."

    /// `collection` does not exist. For `.default`: "no default keyring exists yet" (no collection
    /// but an in-memory `session` one, as on a freshly started gnome-keyring) or "no keyring is set
    /// as the default", with how to create one; `note` (in `detail`) says why none was created.
    package static func collectionNotFound(_ operation: String, _ collection: CollectionReference,
                                           known: [SecretCollectionInfo], note: String? = nil) -> SecretServiceError {
        let labels = known.map(\.label).filter { !$0.isEmpty }
        let listing = labels.isEmpty ? "." : "; it has: \(labels.joined(separator: ", "))."
        let message: String
        let fix: String
        if collection == .default {
            // gnome-keyring's `session` collection is in memory only: not a keyring one could use.
            let keyrings = known.filter { $0.path.rawValue.split(separator: "/").last != "session" }
            message = keyrings.isEmpty ? "No default keyring exists yet."
                : "No keyring is set as the default; it has: \(keyrings.map { $0.label.isEmpty ? "(no label)" : $0.label }.joined(separator: ", "))."
            fix = createDefaultAdvice
        } else {
            message = "The keyring has no collection for \(collection.description)" + listing
            fix = "Choose another collection, or create this one in your keyring manager."
        }
        let paths = "collections: " + (known.isEmpty ? "none" : known.map(\.path.description).joined(separator: ", "))
        return SecretServiceError(.collectionNotFound, operation: operation, message: message, recovery: fix,
                                  detail: note.map { "\($0); \(paths)" } ?? paths)
    }
}
