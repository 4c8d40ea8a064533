#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage
import PingStorageCrypto
import SecretService

/// What the doctor asks of the keyring. The live one talks to the Secret Service, the Secret
/// portal and the file keyring; unit tests give a scripted one, so the order of checks, skips and
/// exit statuses are tested without D-Bus.
protocol DoctorEnvironment: Sendable {
    /// The backend the commands use and why (``KeychainConfiguration/backendInUse()``).
    /// - Throws: ``BackendProblem``: why no backend could be chosen, and the one aimed at.
    func backend() async throws(BackendProblem) -> KeychainBackendChoice
    /// The session bus address the client will use, as shown to the user; nil when there is none.
    var busAddress: String? { get }
    /// The identity the doctor speaks of: `--app`'s, else the one a program run here gets without
    /// `AppIdentity.set` (``AppIdentity/detected``: for the executable fallback, ping-keyring's own
    /// path stands for each program's).
    var appIdentity: AppIdentity { get }
    /// Other identities' items of the default service when the app (`--app`, or the sandbox's id)
    /// has none: where an app that moved or started calling `AppIdentity.set` left its items. Nil
    /// when there is no app, it has items, no other identity has any, or they cannot be listed
    /// (the checks say why).
    func otherIdentities() async -> OtherIdentitiesFinding?
    /// The collection the checks use, as shown to the user (`alias 'default'`).
    var collectionDescription: String { get }
    /// Who provides the Secret Service.
    /// - Throws: ``ToolError`` (`noSessionBus`, `noSecretService`, `timedOut`, …).
    func provider() async throws(ToolError) -> ProviderInfo
    /// The configured collection's path, label and lock state.
    /// - Throws: ``ToolError`` (`collectionNotFound`, …).
    func collection() async throws(ToolError) -> SecretCollectionInfo
    /// The size of the app's secret the Secret portal gives (the bytes are wiped at once).
    /// - Throws: ``ToolError`` (`noSecretService` without a portal or its Secret backend,
    ///   `promptDismissed`, `timedOut`, `noSessionBus`).
    func portalSecretSize() async throws(ToolError) -> Int
    /// The file keyring in use: its path, whether it exists, how many items it holds.
    /// - Throws: ``ToolError`` (`corruptItem` when it cannot be decrypted or parsed, `providerError`
    ///   when it cannot be read).
    func fileKeyring() async throws(ToolError) -> FileKeyringState
    /// What copying the host's items into the file keyring did in this process; nil when it did
    /// not run (a setting chose the file keyring, or the Secret Service is used).
    func movedIn() async -> MoveInFinding?
    /// Writes, reads back and deletes an item under probe attributes, on the backend in use,
    /// cleaning up whatever happens; returns a description of what was done.
    /// - Throws: ``ToolError`` describing the step that failed.
    func probe() async throws(ToolError) -> String
    /// The encryption key items (`xdg:schema` = ``KeyringCommands/keySchemaName``) in the
    /// collection, or in the file keyring when it is used, each read only to measure it. Never
    /// creates a key, never unlocks, never prompts.
    /// - Throws: ``ToolError`` (`locked` when key items are locked, `timedOut`, …).
    func encryptionKeys() async throws(ToolError) -> [EncryptionKeyItem]
}

/// Items of other identities than the app's, which has none (``DoctorEnvironment/otherIdentities()``).
struct OtherIdentitiesFinding: Sendable, Equatable {
    /// The app, which has no item of the service.
    var app: String
    var service: String
    /// Each other identity with items of the service, and their accounts (sorted).
    var others: [(app: String, accounts: [String])]

    static func == (a: Self, b: Self) -> Bool {
        a.app == b.app && a.service == b.service && a.others.map(\.app) == b.others.map(\.app)
            && a.others.map(\.accounts) == b.others.map(\.accounts)
    }

    /// The finding in `items` (``KeychainIdentities/items(_:)``) for `app`; nil when `app` has an
    /// item of the service or no other identity has one.
    init?(app: String, service: String, items: [KeychainIdentities.Item]) {
        let accounts = items.filter { $0.account != nil }
        guard !accounts.contains(where: { $0.app == app }) else { return nil }
        let others = Dictionary(grouping: accounts.filter { $0.app != nil }, by: { $0.app! })
        guard !others.isEmpty else { return nil }
        self.init(app: app, service: service, others: others.keys.sorted().map { ($0, Set(others[$0]!.compactMap(\.account)).sorted()) })
    }

    init(app: String, service: String, others: [(app: String, accounts: [String])]) {
        (self.app, self.service, self.others) = (app, service, others)
    }

    /// What the doctor says, and the command that moves them.
    var text: String {
        let listed = others.map { "\($0.app) (\($0.accounts.joined(separator: ", ")))" }.joined(separator: "; ")
        return "\(app) has no items of service \(service), but other identities do: \(listed). If the app used to run "
            + "under one of them (another path, or before it called AppIdentity.set), `ping-keyring move --from OLD --app \(app)` "
            + "gives them to it; `ping-keyring apps --app \(app)` lists them."
    }

    var json: JSONValue {
        .object([("app", .string(app)), ("service", .string(service)),
                 ("others", .array(others.map { .object([("app", .string($0.app)), ("accounts", .array($0.accounts.map { .string($0) }))]) }))])
    }
}

/// Why the doctor could not learn the backend in use.
struct BackendProblem: Error, Equatable {
    /// The backend aimed at (in a sandbox, the file keyring whose portal gave no secret); nil
    /// when the settings name none (a bad `PINGSTORAGE_BACKEND`).
    var planned: KeychainBackendChoice?
    /// Why the choice failed.
    var error: ToolError
}

/// A key item of ``SecuredKeyEncryptor``, as the doctor sees it: never the key itself.
struct EncryptionKeyItem: Sendable, Equatable {
    var path: String
    /// The `key-id` attribute when it is 32 hex digits (lowercased); nil otherwise, and then
    /// SecuredKeyEncryptor ignores the item.
    var keyID: String?
    /// The size of the secret; a sound key has ``SymmetricKey/byteCount`` (32), a sound bound key
    /// the size of its TPM blobs and wrapped key (``holdsAKey``).
    var byteCount: Int
    var created: Date
    /// Whether the key is bound to a TPM, and what the TPM said of it (DoctorTPM.swift).
    var binding: KeyItemBinding = .unbound
    /// The key's app (its `pingstorage-app`); nil: no app's (PingStorage 1.x's).
    var app: String? = nil
}

/// The doctor against the real Secret Service, with the command line's settings.
struct LiveDoctorEnvironment: DoctorEnvironment {
    let settings: KeyringSettings
    let environment: [String: String]

    var appIdentity: AppIdentity {
        guard let app = settings.scopedApp, app != AppIdentity.detected.id else { return .detected }
        return AppIdentity(id: app, source: .setByApp)
    }

    func otherIdentities() async -> OtherIdentitiesFinding? {
        guard let app = settings.scopedApp else { return nil }
        let configuration = settings.configuration()
        guard let items = try? await KeychainIdentities.items(configuration) else { return nil }
        return OtherIdentitiesFinding(app: app, service: configuration.service, items: items)
    }

    var busAddress: String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        // GDBus falls back to $XDG_RUNTIME_DIR/bus when the variable is not set.
        if let runtime = environment["XDG_RUNTIME_DIR"], FileManager.default.fileExists(atPath: "\(runtime)/bus") {
            return "unix:path=\(runtime)/bus (DBUS_SESSION_BUS_ADDRESS is not set)"
        }
        return nil
    }

    var collectionDescription: String { settings.configuration().collection.description }

    func provider() async throws(ToolError) -> ProviderInfo {
        do {
            let provider = try await settings.client().provider()
            return ProviderInfo(name: provider.displayName, executable: provider.executable, processID: provider.processID,
                                uniqueName: provider.uniqueName, transport: provider.transportAlgorithm)
        } catch {
            throw ToolError.from(error)
        }
    }

    func collection() async throws(ToolError) -> SecretCollectionInfo {
        // Plain transport is reported by its own check; reading a collection sends no secret. No
        // prompt: a missing default collection is reported, not created (an app creates it).
        var options = settings.clientOptions(allowsPlainTransport: true)
        options.allowsPrompts = false
        let client = ClientCalls.client(for: settings.configuration(), options: options)
        do {
            return try await client.collectionInfo(settings.configuration().collection)
        } catch {
            throw ToolError.from(error)
        }
    }

    func probe() async throws(ToolError) -> String {
        let account = "probe-\(UUID().uuidString)"
        let storage = KeychainStorage<String>(
            account: account, configuration: settings.configuration(service: CommandTable.probeService))
        let written = "ping-keyring doctor probe \(UUID().uuidString)"
        do {
            try await storage.save(item: written)
            let read = try await storage.get()
            guard read == written else {
                throw ToolError(kind: "probeMismatch",
                                message: read == nil ? "the item just written was not found"
                                    : "the item just written reads back different bytes",
                                status: .other)
            }
            try await storage.delete()
            guard try await storage.get() == nil else {
                throw ToolError(kind: "probeMismatch", message: "the item was still there after delete", status: .other)
            }
            return "wrote, read back and deleted an item (service \(CommandTable.probeService))"
        } catch {
            var failure = ToolError.from(error)
            do {
                try await storage.delete()
            } catch {
                failure.message += " The probe item may be left behind; remove it with "
                    + "`secret-tool clear service \(CommandTable.probeService) account \(account)`."
            }
            throw failure
        }
    }

    /// A key item as the doctor shows it (the size of its secret, never the secret); nil when it
    /// was deleted meanwhile.
    private static func keyItem(_ path: ItemPath, _ client: SecretServiceClient) async throws(SecretServiceError) -> EncryptionKeyItem? {
        do {
            let info = try await client.itemInfo(path)
            var secret = try await client.secret(of: path).value
            let byteCount = secret.bytes.count
            let binding = await KeyItemBinding.of(attributes: info.attributes, bytes: secret.bytes)
            secret.bytes.resetBytes(in: secret.bytes.startIndex..<secret.bytes.endIndex)
            let keyID = info.attributes["key-id"].flatMap(KeyID.init(hexString:))?.hexString
            return EncryptionKeyItem(path: path.rawValue, keyID: keyID, byteCount: byteCount, created: info.created, binding: binding,
                                     app: info.attributes[AppIdentity.attribute])
        } catch where error.code == .itemNotFound {
            return nil
        }
    }

    func encryptionKeys() async throws(ToolError) -> [EncryptionKeyItem] {
        let configuration = settings.configuration()
        do {
            if let inventory = try await FileKeyringInventory.open(for: configuration) { return try await Self.keys(in: inventory) }
        } catch {
            throw ToolError.from(error)
        }
        // Never a prompt, never an unlock: a locked key item is reported, not opened.
        let client = ClientCalls.client(for: configuration, options: .init(timeout: configuration.timeout, allowsPrompts: false))
        do {
            let found = try await client.searchItems(matching: ["xdg:schema": KeyringCommands.keySchemaName],
                                                     in: configuration.collection)
            guard found.locked.isEmpty else {
                throw ToolError(
                    kind: "locked",
                    message: "\(found.locked.count) encryption key item\(found.locked.count == 1 ? " is" : "s are") "
                        + "locked (\(found.locked.map(\.rawValue).joined(separator: ", ")))")
            }
            var keys: [EncryptionKeyItem] = []
            for path in found.unlocked {
                if let key = try await Self.keyItem(path, client) { keys.append(key) }
            }
            return keys
        } catch {
            throw ToolError.from(error)
        }
    }
}
