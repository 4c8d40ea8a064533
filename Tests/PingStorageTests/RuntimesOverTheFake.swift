import Foundation
import PingStorageCrypto
import SecretService
@testable import PingStorage
import Waiting

// The library's floors reach the keyring through a runtime's places (``KeychainRuntime``); these
// build runtimes over calls a test controls, so that tests speak of the fake alone.

extension KeychainRuntime {
    /// A runtime whose places reach `calls` as their Secret Service, and `portalSecret`, when given,
    /// as the Secret portal's answer.
    convenience init(_ calls: any SecretServiceCalls,
                     portalSecret: (@Sendable (Deadline) async throws(PingStorage.StorageFailure) -> [UInt8])? = nil) {
        self.init(makeSecretService: { _ in SecretServiceConnection(calls: calls, portalSecret: portalSecret) })
    }
}

extension KeychainConfiguration {
    /// The configuration on the Secret Service by name: `.automatic` would ask the environment
    /// (`PINGSTORAGE_BACKEND`, `/.flatpak-info`), which unit tests do not control.
    var onTheSecretService: KeychainConfiguration {
        var configuration = self
        if configuration.backend == .automatic { configuration.backend = .secretService }
        return configuration
    }
}

extension SecretServiceStore {
    /// The store on `calls`, its keys in `collection`.
    init(_ calls: any SecretServiceCalls, collection: KeychainConfiguration.Collection = .default,
         app: String = AppIdentity.current.id) {
        self.init(calls: calls, keyCollection: CollectionReference(collection), app: app, boundKeys: BoundKeys())
    }
}

extension KeychainStorage {
    convenience init(account: String, encryptor: Encryptor, cacheStrategy: CacheStrategy,
                     configuration: KeychainConfiguration, backend: any SecretServiceCalls) {
        self.init(account: account, encryptor: encryptor, cacheStrategy: cacheStrategy,
                  configuration: configuration.onTheSecretService, runtime: KeychainRuntime(backend))
    }
}

extension Keychain {
    init(account: String, encryptor: Encryptor, configuration: KeychainConfiguration, backend: any SecretServiceCalls) {
        self.init(account: account, encryptor: encryptor, configuration: configuration.onTheSecretService,
                  runtime: KeychainRuntime(backend))
    }
}

extension KeyVault {
    /// A vault on the Secret Service calls of `backend`, its keys unbound (no TPM is asked).
    static func on(_ backend: any SecretServiceCalls, collection: KeychainConfiguration.Collection = .default,
                   timeout: Duration = .seconds(25)) -> KeyVault {
        let configuration = KeychainConfiguration(collection: collection, timeout: timeout, backend: .secretService,
                                                  app: AppIdentity.current.id, keyBinding: .none)
        return KeychainRuntime(backend).vault(for: configuration)
    }

    /// The key new data is sealed with, by the vault's own deadline (tests).
    func currentKey() async throws -> (KeyID, SymmetricKey) { try await currentKey(by: deadline()) }
    /// The key with `id`, by the vault's own deadline (tests).
    func key(for id: KeyID) async throws -> SymmetricKey { try await key(for: id, by: deadline()) }
    /// ``confirm(_:by:)`` by the vault's own deadline (tests).
    func confirm(_ id: KeyID) async throws -> Bool { try await confirm(id, by: deadline()) }
}
