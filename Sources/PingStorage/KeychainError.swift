#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import SecretService

/// Errors of ``KeychainStorage`` and of ``SecuredKeyEncryptor``'s key storage.
///
/// The first three cases are the iOS SDK's and exist so that code written for iOS compiles
/// unchanged; on Linux every failure has a specific case below them, so those three are not
/// thrown. Each specific case carries ``Details``: what happened and what to do for the person
/// using the app (`errorDescription`, `failureReason`, `recoverySuggestion`), and what a developer
/// needs (``Details/detail``). Never contains secret bytes. Task cancellation is thrown as
/// `CancellationError`, not as a KeychainError.
public enum KeychainError: LocalizedError, Sendable, Hashable {
    /// What happened and what to do, for two audiences.
    public struct Details: Sendable, Hashable, CustomStringConvertible {
        /// What happened, for a person: no object paths, no D-Bus names.
        public var message: String
        /// What the person can do; nil when nothing.
        public var recovery: String?
        /// For developers: object paths, D-Bus error names, the provider's own text.
        public var detail: String?

        /// Creates details.
        public init(message: String, recovery: String? = nil, detail: String? = nil) {
            self.message = message
            self.recovery = recovery
            self.detail = detail
        }

        /// ``message`` followed by ``recovery``.
        public var description: String { [message, recovery].compactMap { $0 }.joined(separator: " ") }
    }

    /// iOS: the keychain refused a save. Linux throws the specific cases instead.
    case unableToSave
    /// iOS: the keychain refused a read. Linux throws the specific cases instead.
    case unableToRetrieve
    /// iOS: the keychain refused a delete. Linux throws the specific cases instead.
    case unableToDelete
    /// No D-Bus session bus could be reached.
    case noSessionBus(Details)
    /// No Secret Service provider (GNOME Keyring, KWallet, KeePassXC) on the bus.
    case noSecretService(Details)
    /// The Secret Service on the bus runs as another Unix user; nothing was sent to it.
    case untrustedProvider(Details)
    /// The configured collection (e.g. the `default` alias) does not exist.
    case collectionNotFound(Details)
    /// The keyring is locked and was not unlocked (prompts disabled, or no prompt possible).
    case locked(Details)
    /// The user dismissed the unlock prompt.
    case promptDismissed(Details)
    /// The keyring did not answer before the deadline.
    case timedOut(Details)
    /// The stored item cannot be decoded into the expected type. It is left in the keyring as it is.
    case corruptItem(Details)
    /// An argument was rejected before anything was sent (e.g. an empty account).
    case invalidArgument(Details)
    /// The provider only offered a session that would send secrets unencrypted over D-Bus.
    case insecureTransport(Details)
    /// The provider refused the request or answered unexpectedly; ``Details/detail`` says how.
    case providerError(Details)

    /// The details of a Linux case; nil for the three iOS cases.
    public var details: Details? {
        switch self {
        case .unableToSave, .unableToRetrieve, .unableToDelete: nil
        case .noSessionBus(let details), .noSecretService(let details), .untrustedProvider(let details),
             .collectionNotFound(let details), .locked(let details), .promptDismissed(let details),
             .timedOut(let details), .corruptItem(let details), .invalidArgument(let details),
             .insecureTransport(let details), .providerError(let details):
            details
        }
    }

    /// What went wrong and what to do, for a person (the iOS SDK's property).
    public var errorMessage: String {
        switch self {
        case .unableToSave: "Unable to save the item in the keychain"
        case .unableToRetrieve: "Unable to retrieve the item from the keychain"
        case .unableToDelete: "Unable to delete the item from the keychain"
        default: details!.description
        }
    }

    /// Same as ``errorMessage`` (the iOS SDK leaves this empty; here `localizedDescription` is useful).
    public var errorDescription: String? { errorMessage }
    /// What happened.
    public var failureReason: String? { details?.message ?? errorMessage }
    /// What to do about it.
    public var recoverySuggestion: String? { details?.recovery }
    /// For developers: object paths, D-Bus error names, the provider's own text.
    public var detail: String? { details?.detail }

    /// The case's name (`locked`, `timedOut`, …), for logs and tools.
    public var kind: String {
        switch self {
        case .unableToSave: "unableToSave"
        case .unableToRetrieve: "unableToRetrieve"
        case .unableToDelete: "unableToDelete"
        case .noSessionBus: "noSessionBus"
        case .noSecretService: "noSecretService"
        case .untrustedProvider: "untrustedProvider"
        case .collectionNotFound: "collectionNotFound"
        case .locked: "locked"
        case .promptDismissed: "promptDismissed"
        case .timedOut: "timedOut"
        case .corruptItem: "corruptItem"
        case .invalidArgument: "invalidArgument"
        case .insecureTransport: "insecureTransport"
        case .providerError: "providerError"
        }
    }

    static func invalidArgument(_ message: String) -> KeychainError { .invalidArgument(Details(message: message)) }
}

extension KeychainError {
    /// The ``KeychainError`` a Secret Service client error stands for: the one mapping between
    /// the two layers (messages, advice and developer detail carried over unchanged), for code
    /// that uses `SecretServiceClient` directly and wants KeychainStorage's errors.
    /// `.cancelled` becomes ``providerError(_:)`` here; KeychainStorage itself throws
    /// `CancellationError` for it.
    public init(_ error: SecretServiceError) {
        var details = Details(message: error.message, recovery: error.recovery, detail: error.detail)
        if let name = error.dbusErrorName, details.detail?.contains(name) != true {
            details.detail = details.detail.map { "\($0) [\(name)]" } ?? name
        }
        switch error.code {
        case .noSessionBus: self = .noSessionBus(details)
        case .noSecretService, .disconnected: self = .noSecretService(details)
        case .untrustedProvider: self = .untrustedProvider(details)
        case .collectionNotFound: self = .collectionNotFound(details)
        case .locked: self = .locked(details)
        case .promptDismissed: self = .promptDismissed(details)
        case .timedOut: self = .timedOut(details)
        case .invalidArgument: self = .invalidArgument(details)
        case .insecureTransport: self = .insecureTransport(details)
        default: self = .providerError(details)
        }
    }

    /// What a Storage method throws for `error`: `CancellationError` for cancellation, the
    /// matching ``KeychainError`` otherwise.
    static func thrown(_ error: SecretServiceError) -> any Error {
        error.code == .cancelled ? CancellationError() : KeychainError(error)
    }
}
