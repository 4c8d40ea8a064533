#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where and how ``KeychainStorage`` keeps items: in the Secret Service, or inside a Flatpak
/// sandbox in the app's file keyring (Linux only; iOS has no counterpart).
public struct KeychainConfiguration: Sendable, Hashable {
    /// The iOS SDK's keychain service name, used as the `service` attribute by default.
    public static let defaultService = "com.pingidentity.keychainService"

    /// The `service` attribute of every item.
    public var service: String
    /// The collection items are created in and searched in. Default: the `default` alias, or the
    /// collection named by the `PINGSTORAGE_COLLECTION` environment variable (an alias such as
    /// `session`, or an object path starting with `/`).
    public var collection: Collection
    /// The D-Bus bus the Secret Service (and, in a sandbox, the Secret portal) is on. Default:
    /// the session bus.
    public var bus: Bus
    /// Where items are kept: the Secret Service, or a sandbox's file keyring. Default
    /// ``Backend/automatic``; ``backendInUse()`` tells what was chosen and why.
    public var backend: Backend

    /// The app whose items and keys these are (attribute `pingstorage-app`); nil, the default: the
    /// process's ``AppIdentity/current``, read when a storage or encryptor is created. Two programs
    /// that give the same value share their items on purpose (iOS's access group).
    public var app: String?

    /// Whether ``SecuredKeyEncryptor``'s keys are bound to this machine's TPM 2.0. Default
    /// ``KeyBinding/tpmWhenAvailable``: bound when a TPM answers, as the iOS SDK's keys are bound
    /// to the Secure Enclave; ``KeyBinding/none`` for data that must survive a cleared TPM or a move
    /// to another machine (see <doc:Encryption> for the trade-off).
    public var keyBinding: KeyBinding

    /// The identity the items are scoped by: ``app`` when given, else the process's.
    public var appIdentity: AppIdentity {
        app.map { AppIdentity(id: $0, source: .setByApp) } ?? AppIdentity.current
    }

    /// How long one `save`, `get` or `delete` may take in all, waiting included. The time a
    /// keyring prompt of this process is on screen does not count: that is the person's, bounded
    /// by ``promptTimeout``. Default 25 s.
    public var timeout: Duration
    /// Whether a locked keyring may be unlocked through the provider's prompt. When false, calls
    /// on a locked keyring throw ``KeychainError/Reason/locked(_:)`` at once. Default true.
    public var allowsPrompts: Bool
    /// Whether to accept a provider that only offers `plain` sessions (secrets unencrypted on the
    /// bus). Default false: reading or saving a value then throws
    /// ``KeychainError/Reason/insecureTransport(_:)`` before any secret crosses the bus.
    public var allowsPlainTransport: Bool

    // MARK: Prompts (Linux)

    /// How long the keyring's prompt (an unlock, or the first keyring's password) may stay on
    /// screen unanswered: then it is dismissed and the call throws
    /// ``KeychainError/Reason/timedOut(_:)`` saying that no one answered the prompt. GNOME
    /// Keyring's unlock prompt is left on screen instead: GNOME Keyring aborts when one is
    /// dismissed. Default 5 minutes.
    public var promptTimeout: Duration = .seconds(300)

    /// Creates a configuration; every parameter has the default described on its property.
    public init(
        service: String = KeychainConfiguration.defaultService,
        collection: Collection? = nil,
        timeout: Duration = .seconds(25),
        allowsPrompts: Bool = true,
        allowsPlainTransport: Bool = false,
        bus: Bus = .session,
        backend: Backend = .automatic,
        app: String? = nil,
        keyBinding: KeyBinding = .tpmWhenAvailable
    ) {
        self.service = service
        self.keyBinding = keyBinding
        self.app = app
        self.collection = collection ?? Self.collectionFromEnvironment() ?? .default
        self.timeout = timeout
        self.allowsPrompts = allowsPrompts
        self.allowsPlainTransport = allowsPlainTransport
        self.bus = bus
        self.backend = backend
    }

    /// The same configuration with ``app`` set to the identity it stands for now: what a storage or
    /// encryptor keeps, so that its items stay one app's whatever ``AppIdentity/set(_:)`` does later.
    func resolvingApp() -> KeychainConfiguration {
        var resolved = self
        resolved.app = appIdentity.id
        return resolved
    }

    /// The configuration ``KeychainStorage`` uses when none is given.
    public static var standard: KeychainConfiguration { KeychainConfiguration() }

    private static func collectionFromEnvironment() -> Collection? {
        guard let value = ProcessEnvironment.value(of: "PINGSTORAGE_COLLECTION"), !value.isEmpty else {
            return nil
        }
        // A malformed path is kept as a name, so that the first call reports it as a collection
        // that does not exist (naming it) rather than silently using another one.
        return (try? Collection(parsing: value)) ?? .alias(value)
    }
}

extension KeychainConfiguration {
    /// Which collection of the Secret Service holds the items: an alias the provider resolves, or
    /// an object path. (A file keyring is one collection: this does not apply to it.)
    public enum Collection: Sendable, Hashable, CustomStringConvertible {
        /// The user's default collection (the `default` alias; `login` on GNOME). Persistent.
        case `default`
        /// The in-memory `session` alias: gone when the user logs out. GNOME Keyring only.
        case session
        /// Any other alias.
        case alias(String)
        /// A collection's D-Bus object path, e.g. `/org/freedesktop/secrets/collection/login`
        /// (checked when it is first used: a malformed path fails that call with
        /// ``KeychainError/Reason/invalidArgument(_:)``).
        case path(String)

        /// "the default collection", "the 'session' collection", "the 'NAME' collection", or the path.
        public var description: String {
            switch self {
            case .default: "the default collection"
            case .session: "the 'session' collection"
            case .alias(let alias): "the '\(alias)' collection"
            case .path(let path): path
            }
        }

        /// Parses what a person writes: `default`, `session`, an object path starting with `/`, or
        /// any other alias.
        /// - Throws: ``KeychainError/Reason/invalidArgument(_:)`` for an empty string, or a path that
        ///   is not a D-Bus object path.
        public init(parsing text: String) throws(KeychainError) {
            switch text {
            case "":
                throw .invalidArgument("An empty collection name is not a collection.")
            case "default": self = .default
            case "session": self = .session
            case let path where path.hasPrefix("/"):
                guard Self.isObjectPath(path) else { throw .invalidArgument("\"\(path.prefix(200))\" is not a D-Bus object path.") }
                self = .path(path)
            default: self = .alias(text)
            }
        }

        /// `/` or `/`-separated elements of `[A-Za-z0-9_]`, no empty element, no trailing `/`: D-Bus's rule.
        static func isObjectPath(_ text: String) -> Bool {
            let elements = text.split(separator: "/", omittingEmptySubsequences: false)
            guard text.hasPrefix("/") else { return false }
            if text == "/" { return true }
            return elements.dropFirst().allSatisfy { element in
                !element.isEmpty && element.utf8.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                        || byte == UInt8(ascii: "_")
                }
            }
        }
    }

    /// The D-Bus bus to reach the Secret Service (and the Secret portal) on.
    public enum Bus: Sendable, Hashable, CustomStringConvertible {
        /// The session bus: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`; never
        /// autolaunched (no bus is ``KeychainError/Reason/noSessionBus(_:)`` at once).
        case session
        /// A D-Bus address such as `unix:path=/run/user/1000/bus` (a test's private bus).
        case address(String)

        /// The address, or "the session bus".
        public var description: String {
            switch self {
            case .session: "the session bus"
            case .address(let address): address
            }
        }
    }
}
