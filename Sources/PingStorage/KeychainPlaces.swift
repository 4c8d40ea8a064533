import Locking
import SecretService
import Waiting

/// Where a configuration's items live, as decided for this process.
enum KeychainPlace: Sendable {
    case secretService
    case file(FileKeychain)
}

/// Decides, once per process and configuration, which backend holds the items: at once from a
/// setting or outside a sandbox (``BackendRule``); inside a sandbox by asking the Secret portal
/// for the app's secret (which the file keyring needs anyway), falling back to the Secret Service
/// when the portal cannot give one but the app may talk to `org.freedesktop.secrets`. There, the
/// host's items are copied in once (``HostMigration``). A decision that failed is made again by
/// the next call.
final class KeychainPlaces: Sendable {
    static let shared = KeychainPlaces()

    private struct Key: Hashable {
        let backend: KeychainConfiguration.Backend
        let bus: BusAddress
        let service: String
        let collection: CollectionReference
        init(_ configuration: KeychainConfiguration) {
            (backend, bus, service, collection) = (configuration.backend, configuration.bus, configuration.service, configuration.collection)
        }
    }
    private struct Decision: Sendable {
        let place: KeychainPlace
        let choice: KeychainBackendChoice
    }
    private let decisions = RememberedReads<Key, Decision, SecretServiceError>(timekeeper: .light)

    /// The place of `configuration`'s items and why.
    /// - Throws: ``KeychainError`` (`.invalidArgument` for a bad `PINGSTORAGE_BACKEND`; in a
    ///   sandbox, the portal's error when neither backend is usable); `CancellationError`.
    func place(for configuration: KeychainConfiguration, by deadline: Deadline) async throws -> (KeychainPlace, KeychainBackendChoice) {
        let key = Key(configuration)
        if let decision = decisions.remembered(key) { return (decision.place, decision.choice) }
        let rule = try BackendRule.current(configuration.backend)
        let decision: Decision
        do {
            decision = try await decisions.value(for: key, operation: "choose where to keep the app's secrets", deadline: deadline) {
                deadline throws(SecretServiceError) in
                let decision = switch rule {
                case .decided(let choice):
                    switch choice.kind {
                    case .secretService: Decision(place: .secretService, choice: choice)
                    case .fileKeyring(let path):
                        Decision(place: .file(FileKeychain.shared(path: path, configuration: configuration)), choice: choice)
                    }
                case .sandboxed(let path):
                    try await Self.decideInSandbox(configuration, path: path, deadline: deadline)
                }
                Log.info("Items of service \(configuration.service) are kept in the \(decision.choice)")
                return decision
            }
        } catch {
            throw KeychainError.thrown(error)
        }
        return (decision.place, decision.choice)
    }

    private static func decideInSandbox(_ configuration: KeychainConfiguration, path: String,
                                        deadline: Deadline) async throws(SecretServiceError) -> Decision {
        let client = SecretServiceKeychainBackend.client(for: configuration, options: configuration.options).ending(by: deadline)
        var secret: [UInt8]
        do {
            secret = try await client.portalSecret()
        } catch where error.code == .noSecretService {
            // No portal, or one without a Secret backend: libsecret then talks to the Secret
            // Service, which works when the manifest lets the app see it.
            let portalError = error
            do {
                _ = try await client.provider()
            } catch where error.code == .noSecretService {
                // Neither: the portal's error says what a sandboxed app needs.
                let detail = [portalError.detail, "org.freedesktop.secrets: " + (error.detail ?? error.message)]
                throw SecretServiceError(portalError.code, operation: portalError.operation, message: portalError.message,
                                         recovery: portalError.recovery, detail: detail.compactMap { $0 }.joined(separator: "; "))
            }
            return Decision(place: .secretService, choice: .init(
                kind: .secretService,
                reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists) whose Secret portal cannot give the app a secret, "
                    + "and the app may talk to org.freedesktop.secrets"))
        }
        let keychain = FileKeychain.shared(path: path, configuration: configuration)
        do throws(KeychainError) {
            try keychain.install(wiping: &secret)
        } catch {
            throw SecretServiceError(.providerError, operation: "open the file keyring", message: error.errorMessage,
                                     detail: error.detail)
        }
        await copyHostItemsIn(configuration, keychain, client, deadline)
        return Decision(place: .file(keychain), choice: .init(
            kind: .fileKeyring(path: path),
            reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists), and the Secret portal gave the app's secret"))
    }

    /// Runs ``HostMigration`` (a copy: the host keeps its items) when the host's Secret Service
    /// answers; records the outcome.
    private static func copyHostItemsIn(_ configuration: KeychainConfiguration, _ keychain: FileKeychain,
                                        _ client: SecretServiceClient, _ deadline: Deadline) async {
        guard let keyring = try? await keychain.keyring(by: deadline) else { return }
        let migration = HostMigration(
            host: SecretServiceKeychainBackend.shared(for: configuration), hostAnswers: {
                do { _ = try await client.provider() } catch { return false }
                return true
            },
            keyring: keyring, service: configuration.service, collection: configuration.collection, deadline: deadline)
        let outcome = await migration.run()
        keychain.migrations.withLock { $0[configuration.service] = outcome }
        let message = "Copying the host's items of \(configuration.service) into the file keyring: \(outcome)"
        switch outcome {
        case .failed(let error): Log.warning(message, error: error)
        case .copied: Log.info(message)
        case .alreadyDone, .hostUnreachable: Log.debug(message)
        }
    }
}

extension KeychainConfiguration {
    /// Which backend this configuration's items are in for this process, and why; decided at the
    /// first call of any storage or encryptor using it (this call decides it when none was made),
    /// then kept for the process.
    /// - Throws: ``KeychainError`` when no backend is usable (see ``Backend/automatic``).
    public func backendInUse() async throws -> KeychainBackendChoice {
        try await KeychainPlaces.shared.place(for: self, by: Deadline(timeout: timeout)).1
    }
}
