#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The part of the choice that needs no I/O: a setting, or the sandbox test. Inside a sandbox,
/// automatic selection goes on at first use (``KeychainPlace``), asking the Secret portal.
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

extension KeychainConfiguration {
    /// What ``backendInUse()`` will answer, as far as the settings and the sandbox test tell
    /// without any I/O: the decided backend, or inside a sandbox with automatic selection the
    /// file keyring it aims at (the Secret portal has not been asked yet). For ping-keyring's
    /// doctor, which names the backend even when the portal fails.
    /// - Throws: ``KeychainError/Reason/invalidArgument(_:)`` as ``backendInUse()`` does (an unknown
    ///   `PINGSTORAGE_BACKEND`, no place for the file).
    package func plannedBackend() throws(KeychainError) -> KeychainBackendChoice {
        Self.planned(by: try BackendRule.current(backend))
    }

    /// The choice `rule` aims at.
    static func planned(by rule: BackendRule) -> KeychainBackendChoice {
        switch rule {
        case .decided(let choice):
            return choice
        case .sandboxed(let path):
            return KeychainBackendChoice(
                kind: .fileKeyring(path: path),
                reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists): the file keyring, unlocked with "
                    + "the app's secret from the Secret portal")
        }
    }
}
