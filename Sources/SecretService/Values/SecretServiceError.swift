import DBusTransport
/// An error of the Secret Service client, written for two audiences.
///
/// - For people: ``message`` says what happened and ``recovery`` what to do, with no object paths
///   or D-Bus names (`errorDescription`, `failureReason` and `recoverySuggestion` of
///   `LocalizedError` are these).
/// - For developers: ``detail`` holds the object paths, the provider's own error text and the
///   D-Bus error name (`debugDescription` shows everything).
///
/// Compare ``code`` to tell failures apart. New codes may be added in later versions, so switch
/// over `code` with a `default`. Never contains secret bytes.
public struct SecretServiceError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure: a growable set of values rather than an enum, so new kinds can be
    /// added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// No D-Bus session bus could be reached (no `DBUS_SESSION_BUS_ADDRESS`, socket gone).
        public static let noSessionBus = Code("noSessionBus")
        /// The bus has no `org.freedesktop.secrets` owner and cannot start one.
        public static let noSecretService = Code("noSecretService")
        /// The program that owns `org.freedesktop.secrets` runs as another Unix user.
        public static let untrustedProvider = Code("untrustedProvider")
        /// The requested collection (alias or object path) does not exist.
        public static let collectionNotFound = Code("collectionNotFound")
        /// The collection or item is locked and was not unlocked (prompts disabled).
        public static let locked = Code("locked")
        /// The person dismissed an unlock or confirmation prompt, or it could not be shown (no
        /// display for the provider's prompts: the message says so, and why).
        public static let promptDismissed = Code("promptDismissed")
        /// The call did not end before its deadline, or no one answered a prompt within its own
        /// limit (``SecretServiceClient/Options/promptTimeout``: the message says so).
        public static let timedOut = Code("timedOut")
        /// The provider stopped answering: an earlier call to it got no reply at all by its deadline
        /// (while no prompt was open), and it has not answered since, a quick probe included. The
        /// call failed at once without being sent; ``SecretServiceError/detail`` says since when
        /// and what was tried. Calls go through again as soon as the provider answers.
        public static let notResponding = Code("notResponding")
        /// The calling Task was cancelled.
        public static let cancelled = Code("cancelled")
        /// The item no longer exists (deleted or replaced by another client).
        public static let itemNotFound = Code("itemNotFound")
        /// Several items match where exactly one was required.
        public static let ambiguous = Code("ambiguous")
        /// The session negotiated with the provider would send secrets in clear text.
        public static let insecureTransport = Code("insecureTransport")
        /// An argument was rejected before anything was sent.
        public static let invalidArgument = Code("invalidArgument")
        /// The provider went away or the connection closed during the call. The client reconnects
        /// on the next call by itself.
        public static let disconnected = Code("disconnected")
        /// The provider answered in a way the Secret Service specification does not allow.
        public static let protocolError = Code("protocolError")
        /// A written secret did not read back as written (the provider stored something else, or
        /// refused the write for its session), also when written again through new sessions: the
        /// write is not done. Checked on providers that can corrupt a write (KWallet) and on
        /// providers not known.
        public static let writeNotVerified = Code("writeNotVerified")
        /// The provider answered with an error not covered above; see ``SecretServiceError/detail``.
        public static let providerError = Code("providerError")
    }

    /// What kind of failure this is.
    public let code: Code
    /// The operation that failed, e.g. `"read secret"`.
    public let operation: String
    /// What happened, for a person: no object paths, no D-Bus names, no secret bytes.
    public let message: String
    /// What the person can do about it; nil when there is nothing to do.
    public let recovery: String?
    /// For developers: object paths, the provider's own error text. Never secret bytes.
    public let detail: String?
    /// The D-Bus error name the provider returned, when it returned one.
    public let dbusErrorName: String?

    /// Creates an error. Public so that tests and alternative backends can produce the same values.
    public init(_ code: Code, operation: String, message: String, recovery: String? = nil,
                detail: String? = nil, dbusErrorName: String? = nil) {
        self.code = code
        self.operation = operation
        self.message = message
        self.recovery = recovery
        self.detail = detail
        self.dbusErrorName = dbusErrorName
    }

    /// "operation: message recovery".
    public var description: String {
        [operation + ":", message, recovery].compactMap { $0 }.joined(separator: " ")
    }

    /// ``description`` with ``detail`` and the D-Bus error name.
    public var debugDescription: String {
        var text = "\(description) [code \(code)"
        if let detail { text += "; \(detail)" }
        if let dbusErrorName { text += "; \(dbusErrorName)" }
        return text + "]"
    }

    /// The same error for another operation (what the caller was doing).
    func during(_ operation: String) -> SecretServiceError {
        SecretServiceError(code, operation: operation, message: message, recovery: recovery, detail: detail,
                           dbusErrorName: dbusErrorName)
    }
}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Foundation's roles, so that advice is shown once: `localizedDescription` (``errorDescription``)
/// says what happened and ``recoverySuggestion`` what to do, as an alert built from an error shows
/// them; ``description`` is the one-line form with both.
extension SecretServiceError: LocalizedError {
    /// ``message``: what happened, without the advice.
    public var errorDescription: String? { message }
    /// ``message``.
    public var failureReason: String? { message }
    /// ``recovery``.
    public var recoverySuggestion: String? { recovery }
}
