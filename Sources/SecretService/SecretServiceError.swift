import Foundation

/// An error from the Secret Service client: what failed, why, and what to do about it.
///
/// Compare ``code`` to tell failures apart; ``message`` is written for a person and never contains
/// secret bytes. New codes may be added in later versions, so switch over `code` with a `default`.
public struct SecretServiceError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The kind of failure. A growable set of values rather than an enum, so new kinds can be added
    /// without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// No D-Bus session bus could be reached (no `DBUS_SESSION_BUS_ADDRESS`, socket gone).
        public static let noSessionBus = Code("noSessionBus")
        /// The session bus has no `org.freedesktop.secrets` owner and cannot start one.
        public static let noSecretService = Code("noSecretService")
        /// The requested collection (alias or object path) does not exist.
        public static let collectionNotFound = Code("collectionNotFound")
        /// The collection or item is locked and could not be unlocked (prompts disabled or failed).
        public static let locked = Code("locked")
        /// The user dismissed an unlock or confirmation prompt.
        public static let promptDismissed = Code("promptDismissed")
        /// The call did not finish before its deadline.
        public static let timedOut = Code("timedOut")
        /// The item no longer exists (deleted or replaced by another client).
        public static let itemNotFound = Code("itemNotFound")
        /// Several items match where exactly one was required.
        public static let ambiguous = Code("ambiguous")
        /// The session negotiated with the provider would send secrets in clear text.
        public static let insecureTransport = Code("insecureTransport")
        /// An argument was rejected before anything was sent.
        public static let invalidArgument = Code("invalidArgument")
        /// The connection to the provider went away (daemon restarted or bus closed).
        /// The client reconnects on the next call by itself.
        public static let disconnected = Code("disconnected")
        /// The provider answered with an error not covered above; see ``SecretServiceError/dbusErrorName``.
        public static let providerError = Code("providerError")
    }

    /// What kind of failure this is.
    public let code: Code
    /// The operation that failed, e.g. `"search items"`.
    public let operation: String
    /// What happened and what to do, for a person. Never contains secret bytes.
    public let message: String
    /// The D-Bus error name the provider returned, when it returned one.
    public let dbusErrorName: String?

    /// Creates an error. Public so that tests and alternative backends can produce the same values.
    public init(_ code: Code, operation: String, message: String, dbusErrorName: String? = nil) {
        self.code = code
        self.operation = operation
        self.message = message
        self.dbusErrorName = dbusErrorName
    }

    public var description: String {
        var text = "\(operation): \(message)"
        if let dbusErrorName { text += " [\(dbusErrorName)]" }
        return text
    }

    public var errorDescription: String? { description }
}

extension SecretServiceError {
    static func timedOut(_ operation: String, after timeout: Duration) -> SecretServiceError {
        SecretServiceError(
            .timedOut, operation: operation,
            message: "no answer from the Secret Service within \(timeout.secondsText). The keyring "
                + "daemon may be hung, stopped, or waiting on a prompt no one can see; check that it "
                + "is running and not stopped (`ps -C gnome-keyring-daemon -o pid,stat`), or raise the timeout.")
    }

    static func locked(_ operation: String, what: String) -> SecretServiceError {
        SecretServiceError(
            .locked, operation: operation,
            message: "\(what) is locked and prompts are disabled; unlock the keyring (log in to the "
                + "desktop, open Seahorse or KeePassXC) or allow unlock prompts.")
    }
}

extension Duration {
    /// "2.5 s", "250 ms": for messages.
    var secondsText: String {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return String(format: "%.1f s", Double(milliseconds) / 1000)
    }
}
