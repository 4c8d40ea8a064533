import Foundation
public import SecretService

/// Where and how ``KeychainStorage`` keeps items in the Secret Service (Linux only; iOS has no
/// counterpart).
public struct KeychainConfiguration: Sendable, Hashable {
    /// The iOS SDK's keychain service name, used as the `service` attribute by default.
    public static let defaultService = "com.pingidentity.keychainService"

    /// The `service` attribute of every item.
    public var service: String
    /// The collection items are created in and searched in. Default: the `default` alias, or the
    /// collection named by the `PINGSTORAGE_COLLECTION` environment variable (an alias such as
    /// `session`, or an object path starting with `/`).
    public var collection: CollectionReference
    /// How long one `save`, `get` or `delete` may take in all, prompts included. Default 25 s.
    public var timeout: Duration
    /// Whether a locked keyring may be unlocked through the provider's prompt. When false, calls
    /// on a locked keyring throw ``KeychainError/locked(_:)`` at once.
    public var allowsPrompts: Bool
    /// Whether to accept a provider that only offers `plain` sessions (secrets unencrypted on the
    /// bus). Default false.
    public var allowsPlainTransport: Bool

    /// Creates a configuration; every parameter has the default described on its property.
    public init(
        service: String = KeychainConfiguration.defaultService,
        collection: CollectionReference? = nil,
        timeout: Duration = .seconds(25),
        allowsPrompts: Bool = true,
        allowsPlainTransport: Bool = false
    ) {
        self.service = service
        self.collection = collection ?? Self.collectionFromEnvironment() ?? .default
        self.timeout = timeout
        self.allowsPrompts = allowsPrompts
        self.allowsPlainTransport = allowsPlainTransport
    }

    /// The configuration ``KeychainStorage`` uses when none is given.
    public static var standard: KeychainConfiguration { KeychainConfiguration() }

    var clientOptions: SecretServiceClient.Options {
        .init(timeout: timeout, allowsPrompts: allowsPrompts, allowsPlainTransport: allowsPlainTransport)
    }

    private static func collectionFromEnvironment() -> CollectionReference? {
        guard let value = ProcessInfo.processInfo.environment["PINGSTORAGE_COLLECTION"], !value.isEmpty else {
            return nil
        }
        if value.hasPrefix("/") { return .path(value) }
        switch value {
        case "default": return .default
        case "session": return .session
        default: return .alias(value)
        }
    }
}
