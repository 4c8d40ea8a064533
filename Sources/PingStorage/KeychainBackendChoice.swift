#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting

extension KeychainConfiguration {
    /// Where ``KeychainStorage`` and ``SecuredKeyEncryptor`` keep their items.
    public enum Backend: Sendable, Hashable, CustomStringConvertible {
        /// Decided at first use: the `PINGSTORAGE_BACKEND` environment variable when set
        /// (`secret-service`, `file-keyring` or `automatic`); otherwise, inside a Flatpak sandbox
        /// (`/.flatpak-info` exists, as libsecret decides), the file keyring when the Secret portal
        /// hands over the app's secret, else the Secret Service if the app may talk to it; outside
        /// a sandbox, the Secret Service.
        case automatic
        /// The Secret Service (`org.freedesktop.secrets`) on ``KeychainConfiguration/bus``.
        case secretService
        /// The encrypted file keyring libsecret and oo7 keep in a sandbox, at `path` (nil:
        /// `$XDG_DATA_HOME/keyrings/default.keyring`), unlocked with the master secret the Secret
        /// portal hands the app. ``KeychainConfiguration/collection`` does not apply: the file is
        /// one collection.
        case fileKeyring(path: String? = nil)

        /// `automatic`, `secret-service`, or `file-keyring` (with its path when one was given).
        public var description: String {
            switch self {
            case .automatic: "automatic"
            case .secretService: "secret-service"
            case .fileKeyring(let path): path.map { "file-keyring (\($0))" } ?? "file-keyring"
            }
        }
    }
}

/// The backend a configuration uses, and why: what ping-keyring and its doctor report.
public struct KeychainBackendChoice: Sendable, Hashable, CustomStringConvertible {
    /// Where the items are.
    public enum Kind: Sendable, Hashable {
        /// The Secret Service on the configuration's bus.
        case secretService
        /// The file keyring at `path`.
        case fileKeyring(path: String)
    }

    /// Where the items are.
    public var kind: Kind
    /// Why, in a sentence (which setting, or what automatic selection found).
    public var reason: String

    /// Creates a choice.
    public init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// `Secret Service` or `file keyring PATH`, then the reason.
    public var description: String {
        switch kind {
        case .secretService: "Secret Service: \(reason)"
        case .fileKeyring(let path): "file keyring \(path): \(reason)"
        }
    }
}

extension KeychainConfiguration {
    /// Which backend this configuration's items are in for this process, and why; decided at the
    /// first call of any storage or encryptor using it (this call decides it when none was made),
    /// then kept for the process.
    /// - Throws: ``KeychainError`` when no backend is usable (see ``Backend/automatic``).
    /// - Thread-safety: callable from any task; concurrent first calls share one decision.
    public func backendInUse() async throws -> KeychainBackendChoice {
        try await backendInUse(in: .process)
    }

    func backendInUse(in runtime: KeychainRuntime) async throws -> KeychainBackendChoice {
        let resolved = resolvingApp()
        do {
            return try await runtime.place(for: resolved).choice(for: resolved, by: Deadline(timeout: timeout))
        } catch {
            throw error.thrown
        }
    }
}
