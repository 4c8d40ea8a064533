import Locking
import SecretService
import DBusTransport
import Waiting

/// Decides, once per process and configuration, which store (``KeyringStore``) holds the items: at once from a
/// setting or outside a sandbox (``BackendRule``); inside a sandbox by asking the Secret portal
/// for the app's secret (which the file keyring needs anyway), falling back to the Secret Service
/// when the portal cannot give one but the app may talk to `org.freedesktop.secrets`. There, the
/// host's items are moved in once (``HostMigration``). A decision that failed is made again by
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
        /// The file keyring, when the items are in one; nil: the Secret Service.
        let file: FileKeychain?
        let choice: KeychainBackendChoice
    }
    private let decisions = RememberedReads<Key, Decision, StorageFailure>(timekeeper: .light)

    /// The store of `configuration`'s items (the Secret Service's with the configuration's
    /// options, or the file keyring's).
    /// - Throws: as ``decision(for:by:)``.
    func store(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> any KeyringStore {
        guard let file = try await decision(for: configuration, by: deadline).file else {
            return SecretServiceStore.shared(for: configuration)
        }
        return FileKeyringStore(keychain: file, app: configuration.appIdentity.id)
    }

    /// The file keyring of `configuration`'s items; nil when they are in the Secret Service.
    func fileKeychain(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> FileKeychain? {
        try await decision(for: configuration, by: deadline).file
    }

    /// Which backend `configuration`'s items are in, and why.
    /// - Throws: `.invalidArgument` for a bad `PINGSTORAGE_BACKEND`; in a sandbox, the portal's
    ///   error when neither backend is usable; cancellation.
    func choice(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> KeychainBackendChoice {
        try await decision(for: configuration, by: deadline).choice
    }

    private func decision(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> Decision {
        let key = Key(configuration)
        if let decision = decisions.remembered(key) { return decision }
        let rule: BackendRule
        do { rule = try BackendRule.current(configuration.backend) } catch { throw .keychain(error) }
        return try await decisions.value(for: key, operation: "choose where to keep the app's secrets", deadline: deadline) {
            deadline throws(StorageFailure) in
            let decision = switch rule {
            case .decided(let choice):
                switch choice.kind {
                case .secretService: Decision(file: nil, choice: choice)
                case .fileKeyring(let path):
                    Decision(file: FileKeychain.shared(path: path, configuration: configuration), choice: choice)
                }
            case .sandboxed(let path):
                try await Self.decideInSandbox(configuration, path: path, deadline: deadline)
            }
            Log.info("Items of service \(configuration.service) are kept in the \(decision.choice)")
            return decision
        }
    }

    private static func decideInSandbox(_ configuration: KeychainConfiguration, path: String,
                                        deadline: Deadline) async throws(StorageFailure) -> Decision {
        let client = ClientCalls.client(for: configuration, options: configuration.options).ending(by: deadline)
        var secret: [UInt8]
        do {
            secret = try await client.portalSecret()
        } catch where error.code != .noSecretService {
            throw StorageFailure(error)
        } catch {
            // No portal, or one without a Secret backend: libsecret then talks to the Secret
            // Service, which works when the manifest lets the app see it.
            let portalError = error
            do {
                _ = try await client.provider()
            } catch where error.code == .noSecretService {
                // Neither: the portal's error says what a sandboxed app needs.
                let detail = [portalError.detail, "org.freedesktop.secrets: " + (error.detail ?? error.message)]
                throw StorageFailure(SecretServiceError(
                    portalError.code, operation: portalError.operation, message: portalError.message,
                    recovery: portalError.recovery, detail: detail.compactMap { $0 }.joined(separator: "; ")))
            } catch {
                throw StorageFailure(error)
            }
            return Decision(file: nil, choice: .init(
                kind: .secretService,
                reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists) whose Secret portal cannot give the app a secret, "
                    + "and the app may talk to org.freedesktop.secrets"))
        }
        let keychain = FileKeychain.shared(path: path, configuration: configuration)
        try keychain.install(wiping: &secret)
        await copyHostItemsIn(configuration, keychain, client, deadline)
        return Decision(file: keychain, choice: .init(
            kind: .fileKeyring(path: path),
            reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists), and the Secret portal gave the app's secret"))
    }

    /// Runs ``HostMigration`` (the app's own items moved, no app's copied) when the host's Secret Service
    /// answers; records the outcome.
    private static func copyHostItemsIn(_ configuration: KeychainConfiguration, _ keychain: FileKeychain,
                                        _ client: SecretServiceClient, _ deadline: Deadline) async {
        guard let keyring = try? await keychain.keyring(by: deadline) else { return }
        let migration = HostMigration(
            host: ClientCalls.shared(for: configuration), hostAnswers: {
                do { _ = try await client.provider() } catch { return false }
                return true
            },
            keyring: keyring, service: configuration.service, app: configuration.appIdentity.id,
            collection: configuration.collection, deadline: deadline, tpmReachable: { await BoundKey.tpmAnswers(by: deadline) })
        let outcome = await migration.run()
        keychain.migrations.withLock { $0[configuration.service] = outcome }
        let message = "Copying the host's items of \(configuration.service) into the file keyring: \(outcome)"
        switch outcome {
        case .failed(let error): Log.warning(message, error: error)
        case .copied, .finished: Log.info(message)
        case .hostUnreachable(let pending) where pending > 0: Log.info(message)
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
        do {
            return try await KeychainPlaces.shared.choice(for: self, by: Deadline(timeout: timeout))
        } catch {
            throw error.thrown
        }
    }
}
