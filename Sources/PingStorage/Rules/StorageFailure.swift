import FileKeyring
import SecretService
import Waiting

/// How the floor below the Storage API fails: both stores, the choice of store, the key vault and
/// the account locks throw this, each floor's own errors translated into it once (a Secret
/// Service error in `init(_:)` of ``SecretServiceError``, a file error in `init(_:)` of
/// `FileKeyringError`, a wait in `init(_:)` of `WaitError`); the public entry points turn it into
/// what a Storage method throws, once (``thrown``).
///
/// The ``KeychainError`` keeps the lower floor's words: its message, advice and detail (the file's
/// path and errno, the D-Bus error name) are carried over, never dressed as another floor's error.
enum StorageFailure: WaitFailure {
    /// A failure the app sees as a ``KeychainError`` (a read until the entry point names the
    /// operation).
    case keychain(KeychainError)
    /// The caller's Task was cancelled: a Storage method throws `CancellationError`.
    case cancelled(String)

    /// The failure with `reason`.
    static func failure(_ reason: KeychainError.Reason) -> StorageFailure { .keychain(.failure(reason)) }

    /// What a Storage method throws for this failure.
    var thrown: any Error {
        switch self {
        case .keychain(let error): error
        case .cancelled: CancellationError()
        }
    }

    /// The reason, when the failure is a ``KeychainError``.
    var reason: KeychainError.Reason? {
        if case .keychain(let error) = self { error.reason } else { nil }
    }

    // MARK: WaitFailure (shared work and remembered reads end this way)

    /// The keyring's deadline passed, in the Secret Service client's words (the same wait, the same
    /// advice). (`cancelled(_:)`, the case, is the other requirement.)
    static func timedOut(_ operation: String, after timeout: Duration) -> StorageFailure {
        StorageFailure(SecretServiceError.timedOut(operation, after: timeout))
    }

    var isTimedOut: Bool {
        if case .timedOut = reason { true } else { false }
    }

    // MARK: The translations, one per floor below

    /// A Secret Service client's failure: cancellation stays cancellation; everything else is
    /// the ``KeychainError/Reason`` it stands for (``KeychainError/Reason/init(_:)``).
    init(_ error: SecretServiceError) {
        self = error.code == .cancelled ? .cancelled(error.operation) : .keychain(KeychainError(error))
    }

    /// A file keyring's failure: the file's path and errno go into the detail; `account` names the
    /// account a damaged item may be (``KeychainError/init(_:account:)``).
    init(_ error: FileKeyringError, account: String? = nil) {
        self = .keychain(KeychainError(error, account: account))
    }

    /// A wait for another call on the same account.
    init(_ error: WaitError) {
        switch error {
        case .cancelled(let operation):
            self = .cancelled(operation)
        case .timedOut(let operation, let timeout):
            self = .failure(.timedOut(.init(
                message: "Another call on the same account did not finish within \(timeout.secondsText).",
                recovery: "Try again, or allow a longer timeout.", detail: operation)))
        }
    }
}
