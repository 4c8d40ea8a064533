#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import DBusTransport
internal import SecretService

// The one translation between SecretService's words and PingStorage's: its errors, collections,
// buses, options, item metadata, secrets and change tokens. Nothing above the Secret Service store
// sees a SecretService type.

/// Runs Secret Service calls: the one place on this floor where their errors become
/// ``StorageFailure`` (the store's `run`, the connection's portal and provider calls, the host of a
/// move into the sandbox).
func translatingSecretServiceErrors<Value>(_ body: () async throws(SecretServiceError) -> Value) async throws(StorageFailure) -> Value {
    do {
        return try await body()
    } catch {
        throw StorageFailure(error)
    }
}

extension StorageFailure {
    /// A Secret Service client's failure: cancellation stays cancellation; everything else is
    /// the ``KeychainError/Reason`` it stands for (``KeychainError/Reason/init(_:)``).
    init(_ error: SecretServiceError) {
        self = error.code == .cancelled ? .cancelled(error.operation) : .keychain(KeychainError(error))
    }
}

extension KeychainError.Reason {
    /// The reason a Secret Service client error stands for: the one mapping between the two layers
    /// (messages, advice and developer detail carried over unchanged). `.cancelled` becomes
    /// ``providerError(_:)`` here; KeychainStorage itself throws `CancellationError` for it.
    init(_ error: SecretServiceError) {
        var details = KeychainError.Details(message: error.message, recovery: error.recovery, detail: error.detail)
        if let name = error.dbusErrorName, details.detail?.contains(name) != true {
            details.detail = details.detail.map { "\($0) [\(name)]" } ?? name
        }
        self = switch error.code {
        case .noSessionBus: .noSessionBus(details)
        case .noSecretService, .disconnected: .noSecretService(details)
        case .untrustedProvider: .untrustedProvider(details)
        case .collectionNotFound: .collectionNotFound(details)
        case .locked: .locked(details)
        case .promptDismissed: .promptDismissed(details)
        case .timedOut, .notResponding: .timedOut(details)
        case .invalidArgument: .invalidArgument(details)
        case .insecureTransport: .insecureTransport(details)
        default: .providerError(details)
        }
    }
}

extension KeychainError {
    /// Whether the keyring could not show its prompt here (over SSH, on a server): for
    /// ping-keyring, which then says where its prompt does show.
    package var isAPromptThatCouldNotBeShown: Bool {
        failureReason?.hasPrefix(SecretServiceError.promptNotShownMessagePrefix) == true
    }

    /// The failure a Secret Service client error stands for (see ``Reason/init(_:)``), as a read
    /// until the public entry point names the operation.
    init(_ error: SecretServiceError) {
        self = .failure(Reason(error))
    }
}

extension CollectionReference {
    /// The collection a configuration names. A path that is not an object path is kept as a name,
    /// so that the first call reports it as a collection that does not exist, naming it.
    init(_ collection: KeychainConfiguration.Collection) {
        switch collection {
        case .default: self = .default
        case .session: self = .session
        case .alias(let alias): self = .alias(alias)
        case .path(let path): self = (try? ObjectPath(path)).map { .path($0) } ?? .alias(path)
        }
    }
}

extension BusAddress {
    /// The bus a configuration names.
    init(_ bus: KeychainConfiguration.Bus) {
        switch bus {
        case .session: self = .session
        case .address(let address): self = .address(address)
        }
    }
}

extension SecretServiceClient.Options {
    /// The client options of a configuration: its timeout, prompts and transport policy.
    init(_ configuration: KeychainConfiguration) {
        self.init(timeout: configuration.timeout, allowsPrompts: configuration.allowsPrompts,
                  allowsPlainTransport: configuration.allowsPlainTransport)
        promptTimeout = configuration.promptTimeout
    }
}

extension KeychainItemInfo {
    /// A Secret Service item's metadata.
    init(_ info: SecretItemInfo) {
        self.init(location: info.path.rawValue, collection: info.collectionPath.rawValue, label: info.label, attributes: info.attributes,
                  created: info.created, modified: info.modified, isLocked: info.isLocked)
    }
}

extension StoredSecret {
    /// A secret the Secret Service gave.
    init(_ value: SecretValue) {
        self.init(bytes: value.bytes, contentType: value.contentType)
    }

    /// The secret to send (its content type decided from the bytes when the store has none).
    var secretValue: SecretValue { SecretValue(bytes: bytes, contentType: contentType) }
}

extension StoreMoment {
    /// The moment of a change token.
    init(_ token: ChangeToken) {
        self.init(source: token.connection, count: token.count)
    }

    /// The change token of the moment.
    var changeToken: ChangeToken { ChangeToken(connection: source, count: count) }
}
