import FileKeyring
import Locking
import Waiting

/// Where the items of configurations with one backend setting, bus and collection are kept, and
/// everything that place owns: its Secret Service connection, its file keyring, the store each
/// service opened, its account locks and its bound-key memo. (The key vaults of its apps hold the
/// place, so its runtime keeps them: ``KeychainRuntime/vault(for:)``.)
///
/// **Opening is a step of its own** (``openStore(for:by:)``): a storage's first call opens the place
/// for its service. Outside a sandbox, or when a setting names the backend, that costs no I/O. In a
/// Flatpak sandbox with automatic selection it asks the Secret portal for the app's secret (the
/// file keyring needs it), falls back to the Secret Service when the portal cannot give one but
/// the app may talk to `org.freedesktop.secrets`, and moves the host's items in once
/// (``HostMigration``). An opening that failed is made again by the next call. Nothing else here
/// does I/O.
///
/// Thread-safety: `Sendable`; concurrent first calls share one opening, each with its own deadline.
final class KeychainPlace: Sendable {
    let backend: KeychainConfiguration.Backend
    let bus: KeychainConfiguration.Bus
    let collection: KeychainConfiguration.Collection
    /// The Secret Service on the place's bus (also the way to the Secret portal).
    let secretService: SecretServiceConnection
    /// Operations on one account run one after the other in the process (``AccountRules/lockKey``).
    let locks = AccountLocks()
    /// What the TPM taught this place's keys (``BoundKeys``).
    let boundKeys = BoundKeys()
    private let moveStepHook: Locked<@Sendable (Int) -> Void>

    /// Which service's items went where, once opened (per service and app: a move into the sandbox
    /// is one service's, for one app).
    private struct OpeningKey: Hashable {
        let service: String
        let app: String
    }
    private struct Opened: Sendable {
        /// The file keyring, when the items are in one; nil: the Secret Service.
        let file: FileKeychain?
        let choice: KeychainBackendChoice
    }
    private let openings = RememberedReads<OpeningKey, Opened, StorageFailure>(timekeeper: .light)
    /// The file keyring of the place, once the rule named one (one per place: its path is fixed).
    private let file = Locked<FileKeychain?>(nil)

    init(backend: KeychainConfiguration.Backend, bus: KeychainConfiguration.Bus, collection: KeychainConfiguration.Collection,
         runtime: KeychainRuntime) {
        self.backend = backend
        self.bus = bus
        self.collection = collection
        secretService = runtime.makeSecretService(bus)
        moveStepHook = runtime.moveStepHook
    }

    /// A deadline `timeout` from now that does not count the time a keyring prompt of this process
    /// is on screen on the place's bus: what an operation and its waits (another call on the same
    /// account, a key being chosen) end by. The prompt has its own limit
    /// (``KeychainConfiguration/promptTimeout``).
    func deadline(timeout: Duration) -> Deadline { secretService.deadline(timeout: timeout) }

    // MARK: Opening

    /// The store of `configuration`'s items, the place opened for its service first if need be.
    /// - Throws: as ``choice(for:by:)``.
    func openStore(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> any KeyringStore {
        guard let file = try await opened(configuration, by: deadline).file else {
            return secretService.store(for: configuration, boundKeys: boundKeys)
        }
        return FileKeyringStore(keychain: file, app: configuration.appIdentity.id, boundKeys: boundKeys)
    }

    /// The file keyring of `configuration`'s items, the place opened first if need be; nil when
    /// they are in the Secret Service.
    func fileKeychain(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> FileKeychain? {
        try await opened(configuration, by: deadline).file
    }

    /// Which backend `configuration`'s items are in, and why, the place opened first if need be.
    /// - Throws: `.invalidArgument` for a bad `PINGSTORAGE_BACKEND`; in a sandbox, the portal's
    ///   error when neither backend is usable; cancellation.
    func choice(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> KeychainBackendChoice {
        try await opened(configuration, by: deadline).choice
    }

    /// What moving the host's items in did for `configuration`'s service and app in this process;
    /// nil when it did not run.
    func movedIn(for configuration: KeychainConfiguration) -> HostMigration.Outcome? {
        file.withLock { $0 }?.migrations.withLock { $0[configuration.service] }
    }

    private func opened(_ configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> Opened {
        let key = OpeningKey(service: configuration.service, app: configuration.appIdentity.id)
        if let opened = openings.remembered(key) { return opened }
        let rule: BackendRule
        do { rule = try BackendRule.current(configuration.backend) } catch { throw .keychain(error) }
        return try await openings.value(for: key, operation: "choose where to keep the app's secrets", deadline: deadline) {
            [self] deadline throws(StorageFailure) in
            let opened = switch rule {
            case .decided(let choice):
                switch choice.kind {
                case .secretService: Opened(file: nil, choice: choice)
                case .fileKeyring(let path): Opened(file: fileKeychain(at: path), choice: choice)
                }
            case .sandboxed(let path):
                try await openInSandbox(configuration, path: path, by: deadline)
            }
            Log.info("Items of service \(configuration.service) are kept in the \(opened.choice)")
            return opened
        }
    }

    /// The place's file keyring at `path`, made once (the portal's secret is asked when it is first
    /// read, ``FileKeychain/keyring(by:)``).
    private func fileKeychain(at path: String) -> FileKeychain {
        let secretService = secretService
        return file.withLock { file in
            if let file { return file }
            let made = FileKeychain(path: path) { deadline throws(StorageFailure) in
                try await secretService.portalSecret(by: deadline)
            }
            file = made
            return made
        }
    }

    /// In a sandbox: the file keyring when the portal gives the app's secret (and the host's items
    /// moved in), else the Secret Service when the app may talk to it.
    private func openInSandbox(_ configuration: KeychainConfiguration, path: String,
                               by deadline: Deadline) async throws(StorageFailure) -> Opened {
        var secret: [UInt8]
        do throws(StorageFailure) {
            secret = try await secretService.portalSecret(by: deadline)
        } catch let portalError where portalError.reason?.kind == "noSecretService" {
            // No portal, or one without a Secret backend: libsecret then talks to the Secret
            // Service, which works when the manifest lets the app see it.
            do throws(StorageFailure) {
                try await secretService.checkProvider(by: deadline)
            } catch where error.reason?.kind == "noSecretService" {
                // Neither: the portal's error says what a sandboxed app needs.
                throw portalError.adding(detail: "org.freedesktop.secrets: " + (error.reason?.details?.detail ?? error.reason?.details?.message ?? ""))
            }
            return Opened(file: nil, choice: .init(
                kind: .secretService,
                reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists) whose Secret portal cannot give the app a secret, "
                    + "and the app may talk to org.freedesktop.secrets"))
        }
        let keychain = fileKeychain(at: path)
        try keychain.install(wiping: &secret)
        await moveHostItemsIn(configuration, keychain, by: deadline)
        return Opened(file: keychain, choice: .init(
            kind: .fileKeyring(path: path),
            reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists), and the Secret portal gave the app's secret"))
    }

    /// Runs ``HostMigration`` (the app's own items moved, no app's copied) for the configuration's
    /// service; records and logs the outcome.
    private func moveHostItemsIn(_ configuration: KeychainConfiguration, _ keychain: FileKeychain, by deadline: Deadline) async {
        guard let keyring = try? await keychain.keyring(by: deadline) else { return }
        let (boundKeys, hook) = (boundKeys, moveStepHook)
        let migration = HostMigration(
            host: secretService.host(for: configuration), keyring: keyring, service: configuration.service,
            app: configuration.appIdentity.id, deadline: deadline,
            tpmReachable: { await boundKeys.tpmAnswers(by: deadline) }, reached: { step in hook.withLock { $0 }(step) })
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
