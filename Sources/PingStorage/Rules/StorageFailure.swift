import FileKeyring
import Waiting

/// How the floor below the Storage API fails: both stores, the opening of a place, the key vault
/// and the account locks throw this, each floor's own errors translated into it once (a Secret
/// Service error in the Secret Service store's translation, a file error in `init(_:account:)` of
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
    /// An error from above this floor (an encryptor's, sealing inside a save), thrown as it is.
    case passedThrough(any Error)

    /// The failure with `reason`.
    static func failure(_ reason: KeychainError.Reason) -> StorageFailure { .keychain(.failure(reason)) }

    /// What a Storage method throws for this failure.
    var thrown: any Error {
        switch self {
        case .keychain(let error): error
        case .cancelled: CancellationError()
        case .passedThrough(let error): error
        }
    }

    /// Runs `body`, an encryptor's work inside a store operation: its error is carried through
    /// this floor unchanged (a ``StorageFailure`` it throws stays one).
    static func passingThrough<Value>(_ body: () async throws -> Value) async throws(StorageFailure) -> Value {
        do {
            return try await body()
        } catch let error as StorageFailure {
            throw error
        } catch is CancellationError {
            throw .cancelled("seal the value")
        } catch {
            throw .passedThrough(error)
        }
    }

    /// The reason, when the failure is a ``KeychainError``.
    var reason: KeychainError.Reason? {
        if case .keychain(let error) = self { error.reason } else { nil }
    }

    // MARK: WaitFailure (shared work and remembered reads end this way)

    /// A wait of this floor (an opening shared by concurrent first calls, the choice of a key)
    /// reached its deadline: in this floor's words, naming what was waited for. (The Secret Service's
    /// and the file keyring's own timeouts keep theirs.)
    static func timedOut(_ operation: String, after timeout: Duration) -> StorageFailure {
        .failure(.timedOut(.init(message: "Waiting to \(operation) took longer than \(timeout.secondsText).",
                                 recovery: "Try again, or allow a longer timeout.",
                                 detail: "waited \(timeout.secondsText), the call's whole timeout, to \(operation)")))
    }

    var isTimedOut: Bool {
        if case .timedOut = reason { true } else { false }
    }

    /// The same failure with `detail` added to its developer detail.
    func adding(detail more: String) -> StorageFailure {
        guard case .keychain(let error) = self, var details = error.details else { return self }
        details.detail = [details.detail, more].compactMap { $0 }.joined(separator: "; ")
        return .keychain(error.with(details: details))
    }

    // MARK: The translations, one per floor below (the Secret Service's is its store's)

    /// A file keyring's failure: the file's path and errno go into the detail; `account` names the
    /// account a damaged item may be (``KeychainError/init(_:account:)``).
    init(_ error: FileKeyringError, account: String? = nil) {
        self = error.code == .cancelled ? .cancelled(error.message) : .keychain(KeychainError(error, account: account))
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
