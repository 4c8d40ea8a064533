#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import SecretService
import Waiting

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
    public var collection: CollectionReference
    /// How calls behave: deadline, prompts, transport (`SecretServiceClient.Options` of SecretService).
    public var options: SecretServiceClient.Options
    /// The D-Bus bus the Secret Service (and, in a sandbox, the Secret portal) is on. Default:
    /// the session bus.
    public var bus: BusAddress
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
    /// by ``promptTimeout``. Default 25 s. (``options``' timeout.)
    public var timeout: Duration {
        get { options.timeout }
        set { options.timeout = newValue }
    }
    /// Whether a locked keyring may be unlocked through the provider's prompt. When false, calls
    /// on a locked keyring throw ``KeychainError/Reason/locked(_:)`` at once. (``options``'.)
    public var allowsPrompts: Bool {
        get { options.allowsPrompts }
        set { options.allowsPrompts = newValue }
    }
    /// Whether to accept a provider that only offers `plain` sessions (secrets unencrypted on the
    /// bus). Default false: reading or saving a value then throws
    /// ``KeychainError/Reason/insecureTransport(_:)`` before any secret crosses the bus. (``options``'.)
    public var allowsPlainTransport: Bool {
        get { options.allowsPlainTransport }
        set { options.allowsPlainTransport = newValue }
    }

    // MARK: Prompts (Linux)

    /// How long the keyring's prompt (an unlock, or the first keyring's password) may stay on
    /// screen unanswered: then it is dismissed and the call throws
    /// ``KeychainError/Reason/timedOut(_:)`` saying that no one answered the prompt. GNOME
    /// Keyring's unlock prompt is left on screen instead: GNOME Keyring aborts when one is
    /// dismissed. Default 5 minutes. (``options``' prompt timeout.)
    public var promptTimeout: Duration {
        get { options.promptTimeout }
        set { options.promptTimeout = newValue }
    }

    /// A deadline ``timeout`` from now that does not count the time a prompt of this process is on
    /// screen on ``bus``: what an operation and its waits (another call on the same account, a
    /// key being chosen) end by.
    package func keyringDeadline() -> Deadline {
        PromptTime.deadline(timeout: timeout, on: bus)
    }

    /// Creates a configuration; every parameter has the default described on its property.
    public init(
        service: String = KeychainConfiguration.defaultService,
        collection: CollectionReference? = nil,
        timeout: Duration = .seconds(25),
        allowsPrompts: Bool = true,
        allowsPlainTransport: Bool = false,
        bus: BusAddress = .session,
        backend: Backend = .automatic,
        app: String? = nil,
        keyBinding: KeyBinding = .tpmWhenAvailable
    ) {
        self.service = service
        self.keyBinding = keyBinding
        self.app = app
        self.collection = collection ?? Self.collectionFromEnvironment() ?? .default
        self.options = .init(timeout: timeout, allowsPrompts: allowsPrompts, allowsPlainTransport: allowsPlainTransport)
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

    private static func collectionFromEnvironment() -> CollectionReference? {
        guard let value = ProcessEnvironment.value(of: "PINGSTORAGE_COLLECTION"), !value.isEmpty else {
            return nil
        }
        // A malformed path is kept as a name, so that the first call reports it as a collection
        // that does not exist (naming it) rather than silently using another one.
        return (try? CollectionReference(parsing: value)) ?? .alias(value)
    }
}
