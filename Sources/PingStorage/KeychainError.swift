import Foundation
import SecretService

/// Errors of ``KeychainStorage``.
///
/// The first three cases are the iOS SDK's and exist so that code written for iOS compiles
/// unchanged; on Linux every failure has a specific case below them that says what happened and
/// what to do, so those three are not thrown. Messages never contain secret bytes.
public enum KeychainError: LocalizedError, Sendable, Hashable {
    /// iOS: the keychain refused a save. Linux throws the specific cases instead.
    case unableToSave
    /// iOS: the keychain refused a read. Linux throws the specific cases instead.
    case unableToRetrieve
    /// iOS: the keychain refused a delete. Linux throws the specific cases instead.
    case unableToDelete
    /// No D-Bus session bus could be reached.
    case noSessionBus(String)
    /// No Secret Service provider (gnome-keyring, KeePassXC, KWallet) on the session bus.
    case noSecretService(String)
    /// The configured collection (e.g. the `default` alias) does not exist. The message names the
    /// collections that do.
    case collectionNotFound(String)
    /// The keyring is locked and was not unlocked (prompts disabled, or no prompt possible).
    case locked(String)
    /// The user dismissed the unlock prompt.
    case promptDismissed(String)
    /// The keyring did not answer before the deadline.
    case timedOut(String)
    /// The stored item cannot be decoded into the expected type. It is left in the keyring as it is.
    case corruptItem(String)
    /// An argument was rejected before anything was sent (e.g. an empty account).
    case invalidArgument(String)
    /// The provider only offered a session that would send secrets unencrypted over D-Bus.
    case insecureTransport(String)
    /// The provider returned another error; `dbusErrorName` is its D-Bus name when it had one.
    case providerError(dbusErrorName: String?, message: String)

    /// What went wrong and what to do, for a person (the iOS SDK's property).
    public var errorMessage: String {
        switch self {
        case .unableToSave: "Unable to save the item in the keychain"
        case .unableToRetrieve: "Unable to retrieve the item from the keychain"
        case .unableToDelete: "Unable to delete the item from the keychain"
        case .noSessionBus(let message), .noSecretService(let message), .collectionNotFound(let message),
             .locked(let message), .promptDismissed(let message), .timedOut(let message),
             .corruptItem(let message), .invalidArgument(let message),
             .insecureTransport(let message):
            message
        case .providerError(let name, let message):
            name.map { "\(message) [\($0)]" } ?? message
        }
    }

    /// Same as ``errorMessage`` (the iOS SDK leaves this empty; here `localizedDescription` is useful).
    public var errorDescription: String? { errorMessage }
}

extension KeychainError {
    /// The ``KeychainError`` a Secret Service client error stands for, with its message (what
    /// happened and what to do): the one mapping between the two layers, for code that uses
    /// `SecretServiceClient` directly and wants KeychainStorage's errors.
    public init(_ error: SecretServiceError) {
        let message = "\(error.operation): \(error.message)"
        switch error.code {
        case .noSessionBus: self = .noSessionBus(message)
        case .noSecretService, .disconnected: self = .noSecretService(message)
        case .collectionNotFound: self = .collectionNotFound(message)
        case .locked: self = .locked(message)
        case .promptDismissed: self = .promptDismissed(message)
        case .timedOut: self = .timedOut(message)
        case .invalidArgument: self = .invalidArgument(message)
        case .insecureTransport: self = .insecureTransport(message)
        default: self = .providerError(dbusErrorName: error.dbusErrorName, message: message)
        }
    }

    /// Maps Secret Service client errors; `CancellationError` and errors of other layers pass
    /// through unchanged.
    static func from(_ error: any Error) -> any Error {
        guard let error = error as? SecretServiceError else { return error }
        return KeychainError(error)
    }
}
