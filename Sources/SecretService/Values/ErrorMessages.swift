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
            message: "The keyring stayed locked: its prompt was dismissed.",
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

    /// How the message of a prompt that could not be shown begins (a `.promptDismissed` error):
    /// for tools that add their own way out.
    package static let promptNotShownMessagePrefix = "The keyring could not show its prompt: "

    /// The keyring's prompt could not be shown (``PromptVisibility``): `reason` says why, the
    /// advice how to unlock it where it can be.
    static func promptNotShown(_ operation: String, reason: String, provider: ProviderKind, detail: String?) -> SecretServiceError {
        SecretServiceError(
            .promptDismissed, operation: operation, message: promptNotShownMessagePrefix + reason + ".",
            recovery: unlockWhereShownAdvice(provider), detail: detail)
    }

    /// No one answered the keyring's prompt within its limit (``SecretServiceClient/Options/promptTimeout``).
    static func promptTimedOut(_ operation: String, limit: Duration, dismissed: Bool, provider: ProviderKind,
                               detail: String?) -> SecretServiceError {
        SecretServiceError(
            .timedOut, operation: operation,
            message: "No one answered the keyring's prompt within \(limit.secondsText)"
                + (dismissed ? ", so it was closed." : "; it is still open, as GNOME Keyring does not let a program close it.")
                + " It may have been waiting where no one could see it.",
            recovery: "Answer the prompt when it appears, or allow it longer (the prompt timeout). A program that runs "
                + "where no one answers prompts should turn them off and find the keyring unlocked.",
            detail: detail)
    }

    /// How to unlock a keyring whose prompt could not be shown here, by provider.
    static func unlockWhereShownAdvice(_ provider: ProviderKind) -> String {
        let unattended = " A program that runs where no one answers prompts should turn them off and find the keyring unlocked."
        switch provider {
        case .gnomeKeyring:
            return "Unlock it from the desktop session, where its prompt can be shown (log in there, or use Passwords and Keys), "
                + "then try again; on a machine without a desktop, start GNOME Keyring unlocked: `gnome-keyring-daemon "
                + "--replace --unlock`, with the password on its standard input." + unattended
        case .kwallet:
            return "Open the wallet from the desktop session, where its dialog can be shown (KWallet Manager), then try again." + unattended
        case .keepassxc:
            return "Unlock the database in KeePassXC where its window can be seen, then try again." + unattended
        case .other:
            return "Unlock the keyring from the desktop session, where its prompt can be shown, then try again." + unattended
        }
    }

    /// Why the first call found no default collection and created none.
    package enum NoDefaultCollection: Sendable {
        /// Prompts are turned off.
        case promptsOff
        /// The provider's prompt could not be shown: why (``PromptVisibility``).
        case promptNotShown(String)
        /// The person dismissed the prompt.
        case promptDismissed
        /// The provider refused to create one: its words.
        case refused(String)

        /// For `detail`.
        package var note: String {
            switch self {
            case .promptsOff: "prompts are turned off, so none was created"
            case .promptNotShown(let reason): "the keyring service's prompt to create one could not be shown: \(reason)"
            case .promptDismissed: "the keyring service's prompt to create one was dismissed"
            case .refused(let words): "the keyring service refused to create one: \(words)"
            }
        }
    }

    /// How to create a default collection: what the person will see, by provider and by why none
    /// was created. nil `why`: the collection exists but is not the default.
    package static func createDefaultAdvice(_ provider: ProviderKind, _ why: NoDefaultCollection?) -> String {
        let promptsOff: Bool = if case .promptsOff = why { true } else { false }
        let notShown: Bool = if case .promptNotShown = why { true } else { false }
        switch provider {
        case .gnomeKeyring:
            let withoutDesktop = "on a machine without a desktop, start GNOME Keyring with a login keyring, which becomes the "
                + "default: `gnome-keyring-daemon --replace --unlock`, with its password on standard input."
            if notShown {
                return "Create one from the desktop session, where GNOME Keyring can ask for its password: run the program "
                    + "there once, or create a keyring in Passwords and Keys and make it the default; " + withoutDesktop
            }
            return "Create one: " + (promptsOff ? "run a program that allows prompts in the desktop session once"
                                                : "run the program again in the desktop session")
                + " (GNOME Keyring shows \"Choose password for new keyring\": type a password twice), or create a keyring in "
                + "Passwords and Keys and make it the default; " + withoutDesktop
        case .kwallet:
            return "Create one: " + (notShown ? "KWallet runs without a screen here, so do it from the desktop session: "
                                               : "")
                + "create a wallet in KWallet Manager and make it the default, or run a program that allows prompts in the "
                + "desktop session (KWallet's new-wallet assistant asks for the wallet's type, \"Classic, blowfish encrypted "
                + "file\", and its password); logging in to Plasma with pam_kwallet creates one by itself."
        case .keepassxc:
            return "Create one: in KeePassXC, open a database and expose a group under Database Settings > Secret Service "
                + "Integration; the first exposed database is the default."
        case .other:
            return "Create one: " + (promptsOff ? "run a program that allows prompts in the desktop session once"
                                                : "run the program again in the desktop session")
                + " (the keyring service asks for the new keyring's password), or create a keyring in your keyring "
                + "manager and make it the default."
        }
    }

    /// `collection` does not exist. For `.default`: "no default keyring exists yet" (no collection
    /// but an in-memory `session` one, as on a freshly started gnome-keyring) or "no keyring is set
    /// as the default", with how to create one on `provider`'s desktop; `why` (in `detail`) says
    /// why none was created.
    package static func collectionNotFound(_ operation: String, _ collection: CollectionReference,
                                           known: [SecretCollectionInfo], provider: ProviderKind = .other,
                                           why: NoDefaultCollection? = nil) -> SecretServiceError {
        let note = why?.note
        let labels = known.map(\.label).filter { !$0.isEmpty }
        let listing = labels.isEmpty ? "." : "; it has: \(labels.joined(separator: ", "))."
        let message: String
        let fix: String
        if collection == .default {
            // gnome-keyring's `session` collection is in memory only: not a keyring one could use.
            let keyrings = known.filter { $0.path.rawValue.split(separator: "/").last != "session" }
            message = keyrings.isEmpty ? "No default keyring exists yet."
                : "No keyring is set as the default; it has: \(keyrings.map { $0.label.isEmpty ? "(no label)" : $0.label }.joined(separator: ", "))."
            fix = createDefaultAdvice(provider, why)
        } else {
            message = "The keyring has no collection for \(collection.description)" + listing
            fix = "Choose another collection, or create this one in your keyring manager."
        }
        let paths = "collections: " + (known.isEmpty ? "none" : known.map(\.path.description).joined(separator: ", "))
        return SecretServiceError(.collectionNotFound, operation: operation, message: message, recovery: fix,
                                  detail: note.map { "\($0); \(paths)" } ?? paths)
    }
}
