#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Errors of ``KeychainStorage`` and of ``SecuredKeyEncryptor``'s key storage.
///
/// The iOS SDK's three cases, each carrying the specific ``Reason`` Linux knows (locked, timed
/// out, no provider, …), so that code written for iOS compiles and behaves the same:
///
/// ```swift
/// switch error {                               // exhaustive, as on iOS
/// case .unableToSave: …
/// case .unableToRetrieve: …
/// case .unableToDelete: …
/// }
/// catch KeychainError.unableToRetrieve { … }   // any reason
/// throw KeychainError.unableToSave             // the reason is .unspecified
/// error == KeychainError.unableToDelete        // equal when the case is the same, whatever the reason
/// ```
///
/// A Linux caller learns what happened from ``reason`` (`catch KeychainError.unableToRetrieve(.locked)`,
/// or `if case .locked = error.reason`), and what to do from ``errorMessage``: every ``Reason``
/// but ``Reason/unspecified`` carries ``Details`` for the person using the app
/// (`errorDescription`, `failureReason`, `recoverySuggestion`) and for a developer
/// (``Details/detail``). Never contains secret bytes. Task cancellation is thrown as
/// `CancellationError`, not as a KeychainError.
public enum KeychainError: LocalizedError, CustomStringConvertible, Sendable, Hashable {
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

    /// Why the keychain could not save, read or delete.
    public enum Reason: Sendable, Hashable {
        /// No reason given: the iOS forms `KeychainError.unableToSave` and its siblings, as code
        /// of the app throws them. The library never throws this.
        case unspecified
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
        /// The keyring did not answer before the deadline; or it stopped answering: an earlier call
        /// got no reply at all and a quick probe none either, so the call failed at once without
        /// being sent (``Details/detail`` then says since when and what was tried).
        case timedOut(Details)
        /// The stored item cannot be decoded into the expected type. It is left in the keyring as it is.
        case corruptItem(Details)
        /// An argument was rejected before anything was sent (e.g. an empty account).
        case invalidArgument(Details)
        /// The provider only offered a session that would send secrets unencrypted over D-Bus.
        case insecureTransport(Details)
        /// The provider refused the request or answered unexpectedly; ``Details/detail`` says how.
        case providerError(Details)

        /// What happened and what to do; nil for ``unspecified``.
        public var details: Details? {
            switch self {
            case .unspecified: nil
            case .noSessionBus(let details), .noSecretService(let details), .untrustedProvider(let details),
                 .collectionNotFound(let details), .locked(let details), .promptDismissed(let details),
                 .timedOut(let details), .corruptItem(let details), .invalidArgument(let details),
                 .insecureTransport(let details), .providerError(let details):
                details
            }
        }

        /// The case's name (`locked`, `timedOut`, …), for logs and tools.
        public var kind: String {
            switch self {
            case .unspecified: "unspecified"
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
    }

    /// A save failed (a write of the item, or of a new encryption key), for ``reason``.
    case unableToSave(Reason)
    /// A read failed (the item, an encryption key, the backend's state), for ``reason``.
    case unableToRetrieve(Reason)
    /// A delete failed, for ``reason``.
    case unableToDelete(Reason)

    /// iOS's `KeychainError.unableToSave`: a save failed, for no reason given.
    public static var unableToSave: KeychainError { .unableToSave(.unspecified) }
    /// iOS's `KeychainError.unableToRetrieve`: a read failed, for no reason given.
    public static var unableToRetrieve: KeychainError { .unableToRetrieve(.unspecified) }
    /// iOS's `KeychainError.unableToDelete`: a delete failed, for no reason given.
    public static var unableToDelete: KeychainError { .unableToDelete(.unspecified) }

    /// Why it failed.
    public var reason: Reason {
        switch self {
        case .unableToSave(let reason), .unableToRetrieve(let reason), .unableToDelete(let reason): reason
        }
    }

    /// The details of the reason; nil when the reason is ``Reason/unspecified``.
    public var details: Details? { reason.details }

    /// What went wrong and what to do, for a person (the iOS SDK's property).
    public var errorMessage: String {
        if let details { return details.description }
        switch self {
        case .unableToSave: return "Unable to save the item in the keychain"
        case .unableToRetrieve: return "Unable to retrieve the item from the keychain"
        case .unableToDelete: return "Unable to delete the item from the keychain"
        }
    }

    /// What happened, without the advice (``recoverySuggestion`` has it), as Foundation's roles have
    /// it, so that an alert built from the error (`localizedDescription` and the recovery
    /// suggestion) shows the advice once; ``errorMessage`` when the reason is unspecified. (The iOS
    /// SDK leaves this empty; here `localizedDescription` is useful.) ``errorMessage`` is the
    /// one-line form with both.
    public var errorDescription: String? { details?.message ?? errorMessage }
    /// What happened.
    public var failureReason: String? { details?.message ?? errorMessage }
    /// What to do about it.
    public var recoverySuggestion: String? { details?.recovery }
    /// For developers: object paths, D-Bus error names, the provider's own text.
    public var detail: String? { details?.detail }

    /// The reason's name (`locked`, `timedOut`, …), for logs and tools; for an unspecified reason,
    /// the case's (`unableToSave`, …).
    public var kind: String { reason == .unspecified ? description : reason.kind }

    /// What `"\(error)"` prints, as SDK code logs errors: the iOS case's name (`unableToSave`), as on
    /// iOS, followed by the reason's name when there is one (`unableToRetrieve(locked)`). What
    /// happened and what to do are in `localizedDescription` and ``errorMessage``.
    public var description: String {
        let name = switch self {
        case .unableToSave: "unableToSave"
        case .unableToRetrieve: "unableToRetrieve"
        case .unableToDelete: "unableToDelete"
        }
        return reason == .unspecified ? name : "\(name)(\(reason.kind))"
    }

    /// Two errors are equal when they are the same iOS case, whatever their reasons, as iOS code
    /// compares them (`error == .unableToSave`); compare ``reason`` for the cause.
    public static func == (a: KeychainError, b: KeychainError) -> Bool {
        a.operation == b.operation
    }

    /// Hashes the case alone, as ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(operation)
    }

    /// The three operations, as the three cases name them.
    enum Operation: Sendable, Hashable {
        case save, retrieve, delete
    }

    var operation: Operation {
        switch self {
        case .unableToSave: .save
        case .unableToRetrieve: .retrieve
        case .unableToDelete: .delete
        }
    }

    /// The same reason, as a failure of `operation`.
    func during(_ operation: Operation) -> KeychainError {
        switch operation {
        case .save: .unableToSave(reason)
        case .retrieve: .unableToRetrieve(reason)
        case .delete: .unableToDelete(reason)
        }
    }

    /// A failure for `reason`, as the floor below the Storage API sees it: a read, until the public
    /// entry point that knows the operation says otherwise (`during(_:)`, through `relabelling`).
    static func failure(_ reason: Reason) -> KeychainError { .unableToRetrieve(reason) }

    static func invalidArgument(_ message: String) -> KeychainError { .failure(.invalidArgument(Details(message: message))) }

    /// Runs `body`, a public entry point's work; a ``KeychainError`` it throws becomes a failure of
    /// `operation`, whatever the floor below called it. Other errors pass unchanged.
    nonisolated(nonsending) static func relabelling<R>(
        _ operation: Operation, _ body: nonisolated(nonsending) () async throws -> R
    ) async throws -> R {
        do {
            return try await body()
        } catch let error as KeychainError {
            throw error.during(operation)
        }
    }
}

extension KeychainError {
    /// The same error and reason with `details` in place of the reason's own (an unspecified
    /// reason has none to replace).
    func with(details: Details) -> KeychainError {
        let reason: Reason = switch reason {
        case .unspecified: .unspecified
        case .noSessionBus: .noSessionBus(details)
        case .noSecretService: .noSecretService(details)
        case .untrustedProvider: .untrustedProvider(details)
        case .collectionNotFound: .collectionNotFound(details)
        case .locked: .locked(details)
        case .promptDismissed: .promptDismissed(details)
        case .timedOut: .timedOut(details)
        case .corruptItem: .corruptItem(details)
        case .invalidArgument: .invalidArgument(details)
        case .insecureTransport: .insecureTransport(details)
        case .providerError: .providerError(details)
        }
        return KeychainError.failure(reason).during(operation)
    }
}
