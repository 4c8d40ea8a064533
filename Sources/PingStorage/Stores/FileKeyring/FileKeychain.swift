#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import FileKeyring
import Locking
import Waiting

/// The file keyring of a sandboxed app (libsecret's and oo7's format, see FileKeyring), opened
/// with the master secret the Secret portal hands over: one per place (``KeychainPlace``), shared
/// by every storage and encryptor using it.
///
/// The secret is asked for once (callers arriving meanwhile wait for the same request, each with
/// its own deadline) and kept, wiped on release, inside the opened ``FileKeyring``. A request
/// that failed is made again by the next call. File I/O runs on threads of its own (FileKeyring's
/// async calls), never on Swift's cooperative threads.
final class FileKeychain: Sendable {
    /// The keyring file.
    let path: String
    /// Asks the Secret portal for the app's secret (through the place's Secret Service connection).
    private let portalSecret: @Sendable (Deadline) async throws(StorageFailure) -> [UInt8]
    private let opened = Locked<FileKeyring?>(nil)
    private let opening = SharedWork<FileKeyring, StorageFailure>(timekeeper: .light)
    /// What copying the host's items in did, per service (see ``HostMigration``).
    let migrations = Locked<[String: HostMigration.Outcome]>([:])

    /// The keychain of the file at `path`, opened with what `portalSecret` answers at first use
    /// (``KeychainPlace`` makes one per place).
    init(path: String, portalSecret: @escaping @Sendable (Deadline) async throws(StorageFailure) -> [UInt8]) {
        self.path = path
        self.portalSecret = portalSecret
    }

    /// A keychain of a keyring already opened, for tests (no portal is asked).
    static func wrapping(_ keyring: FileKeyring) -> FileKeychain {
        let keychain = FileKeychain(path: keyring.path) { _ throws(StorageFailure) in
            throw .failure(.noSecretService(.init(message: "No Secret portal: the keyring was opened by a test.")))
        }
        keychain.opened.withLock { $0 = keyring }
        return keychain
    }

    /// The keyring, when it was opened (no I/O).
    var openedKeyring: FileKeyring? { opened.withLock { $0 } }

    /// `$XDG_DATA_HOME/keyrings/default.keyring` (or under `$HOME/.local/share`), as libsecret.
    static func defaultPath(environment: [String: String]) -> String? {
        let data = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].flatMap { $0.isEmpty ? nil : $0 + "/.local/share" }
        return data.map { $0 + "/keyrings/default.keyring" }
    }

    /// The keyring, opened with the portal's secret at the first call.
    /// - Throws: ``KeychainError/Reason/noSecretService(_:)`` when the sandbox has no Secret portal (or
    ///   it has no backend), ``KeychainError/Reason/promptDismissed(_:)`` when its request was refused,
    ///   ``KeychainError/Reason/timedOut(_:)`` at `deadline`; cancellation.
    func keyring(by deadline: Deadline) async throws(StorageFailure) -> FileKeyring {
        if let keyring = opened.withLock({ $0 }) { return keyring }
        let (path, portalSecret, opened) = (self.path, self.portalSecret, self.opened)
        return try await opening.value(operation: "get the app's secret from the Secret portal", deadline: deadline) {
            deadline throws(StorageFailure) in
            if let keyring = opened.withLock({ $0 }) { return keyring }
            var secret = try await portalSecret(deadline)
            let keyring = try Self.open(path, wiping: &secret)
            opened.withLock { $0 = keyring }
            return keyring
        }
    }

    /// Opens the keyring with a secret already in hand (automatic selection asked the portal to
    /// find out whether it could), wiping `secret`. Keeps an already opened keyring.
    func install(wiping secret: inout [UInt8]) throws(StorageFailure) {
        let keyring = try Self.open(path, wiping: &secret)
        opened.withLock { if $0 == nil { $0 = keyring } }
    }

    /// How many bytes of the portal's secret libsecret's file backend uses (its `PASSWORD_SIZE`).
    static let libsecretSecretLength = 64

    private static func open(_ path: String, wiping secret: inout [UInt8]) throws(StorageFailure) -> FileKeyring {
        defer { secret.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        // libsecret reads the portal's first 64 bytes (fewer fail it) and derives the file's key from
        // them; oo7 refuses keys from fewer than 4. A longer answer is cut to the same 64 bytes, or
        // libsecret in the same app would derive another key and fail every item's MAC.
        if secret.count > libsecretSecretLength {
            secret.withUnsafeMutableBytes { explicit_bzero($0.baseAddress! + libsecretSecretLength, $0.count - libsecretSecretLength) }
            secret.removeLast(secret.count - libsecretSecretLength)
        }
        guard secret.count >= 4 else {
            throw .failure(.providerError(.init(
                message: "The Secret portal gave the app a secret of \(secret.count) bytes, too short to protect its keyring.",
                recovery: "Report this to the portal's Secret backend (GNOME Keyring gives 64 bytes).",
                detail: "get the app's secret from the Secret portal")))
        }
        let masterSecret = FileKeyringSecret(wiping: &secret)
        do {
            return try FileKeyring(path: path, masterSecret: masterSecret)
        } catch {
            throw .failure(.providerError(.init(message: "The file keyring cannot be opened: libgcrypt is not usable in this process.",
                                                recovery: "Install libgcrypt 1.8 or later.", detail: "\(path): \(error)")))
        }
    }
}

extension KeychainError {
    /// What a file keyring failure means for the app: the one mapping from FileKeyring's errors.
    /// The file's path goes into ``Details/detail``. `account`, when the call was one account's,
    /// is named by a damaged item's error (FileKeyring's own messages never hold attribute values).
    init(_ error: FileKeyringError, account: String? = nil) {
        var details = Details(message: "", detail: [error.path, error.errno.map { "errno \($0)" }].compactMap { $0 }
            .joined(separator: ", "))
        switch error.code {
        case .decryptionFailed, .corruptFile, .unsupportedVersion, .tooLarge:
            details.message = "The app's keyring file cannot be read: \(error.message)."
            details.recovery = nil
            self = .failure(.corruptItem(details))
        case .damagedItem:
            // One record is damaged, the rest of the file is not: only calls it may concern fail.
            details.message = "The stored item" + (account.map { " for account '\($0)'" } ?? "")
                + " cannot be read: \(error.message)."
            details.recovery = "`ping-keyring doctor` lists the file's damaged records; other accounts still work."
            self = .failure(.corruptItem(details))
        case .lockTimeout, .concurrentWrite:
            details.message = "The app's keyring file stayed busy: \(error.message)."
            self = .failure(.timedOut(details))
        case .timedOut:
            details.message = "The app's keyring file could not be used in time: \(error.message)."
            details.recovery = "Try again, or allow a longer timeout."
            self = .failure(.timedOut(details))
        case .invalidItem:
            details.message = "The item cannot be stored in the file keyring: \(error.message)."
            self = .failure(.invalidArgument(details))
        default:
            details.message = "The app's keyring file could not be used: \(error.message)."
            details.recovery = "Check that the app's data directory is writable and not full."
            self = .failure(.providerError(details))
        }
    }
}
