#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

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

/// The part of the choice that needs no I/O: a setting, or the sandbox test. Inside a sandbox,
/// automatic selection goes on at first use (``KeychainPlaces``), asking the Secret portal.
enum BackendRule: Sendable, Hashable {
    case decided(KeychainBackendChoice)
    /// In a sandbox, nothing set: the file keyring at `path` if the portal gives a secret.
    case sandboxed(path: String)

    /// The environment variable that overrides automatic selection.
    static let environmentVariable = "PINGSTORAGE_BACKEND"
    /// What tells a Flatpak sandbox, as libsecret tells it.
    static let sandboxMarker = "/.flatpak-info"

    /// The rule for `configured`, given the environment and whether the marker exists.
    /// - Throws: ``KeychainError/Reason/invalidArgument(_:)`` for an unknown `PINGSTORAGE_BACKEND`, or
    ///   when no file keyring path can be found (neither `XDG_DATA_HOME` nor `HOME` is set).
    static func resolve(_ configured: KeychainConfiguration.Backend, environment: [String: String],
                        isSandboxed: Bool) throws(KeychainError) -> BackendRule {
        let defaultPath = FileKeychain.defaultPath(environment: environment)
        func file(_ path: String?, _ reason: String) throws(KeychainError) -> BackendRule {
            guard let path = path ?? defaultPath else {
                throw .failure(.invalidArgument(.init(
                    message: "The file keyring has no place: neither XDG_DATA_HOME nor HOME is set.",
                    recovery: "Set HOME, or give KeychainConfiguration's fileKeyring backend a path.")))
            }
            return .decided(.init(kind: .fileKeyring(path: path), reason: reason))
        }
        switch configured {
        case .secretService:
            return .decided(.init(kind: .secretService, reason: "set in KeychainConfiguration"))
        case .fileKeyring(let path):
            return try file(path, "set in KeychainConfiguration")
        case .automatic:
            break
        }
        let variable = environment[environmentVariable] ?? ""
        switch variable {
        case "secret-service":
            return .decided(.init(kind: .secretService, reason: "\(environmentVariable)=\(variable)"))
        case "file-keyring":
            return try file(nil, "\(environmentVariable)=\(variable)")
        case "", "automatic":
            break
        default:
            throw .failure(.invalidArgument(.init(
                message: "\(environmentVariable) is '\(variable)', which is not a backend.",
                recovery: "Set it to secret-service, file-keyring or automatic, or unset it.")))
        }
        guard isSandboxed else {
            return .decided(.init(kind: .secretService, reason: "not in a Flatpak sandbox (\(sandboxMarker) does not exist)"))
        }
        guard let defaultPath else { return try file(nil, "") }
        return .sandboxed(path: defaultPath)
    }

    /// The rule for `configured` in this process.
    static func current(_ configured: KeychainConfiguration.Backend) throws(KeychainError) -> BackendRule {
        try resolve(configured, environment: ProcessEnvironment.values(of: [environmentVariable, "XDG_DATA_HOME", "HOME"]),
                    isSandboxed: access(sandboxMarker, F_OK) == 0)
    }
}

/// The process's environment variables, read one by one with `getenv`: building
/// `ProcessInfo.environment`, the whole dictionary, costs a short-lived process (a command-line
/// tool's first `get`) a quarter of a millisecond each time.
enum ProcessEnvironment {
    /// The value of `name`, or nil when it is not set.
    static func value(of name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The variables among `names` that are set, with their values.
    static func values(of names: [String]) -> [String: String] {
        var values: [String: String] = [:]
        for name in names { values[name] = value(of: name) }
        return values
    }
}
