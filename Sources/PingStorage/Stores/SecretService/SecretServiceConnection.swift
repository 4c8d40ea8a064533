#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import DBusTransport
import Locking
internal import SecretService
import Waiting

/// The Secret Service calls ``SecretServiceStore`` makes: a ``SecretServiceClient`` in production,
/// an in-memory service in unit tests. Unlock policy, lock state and provider quirks are the
/// client's (see its documentation); the Keychain rules applied with these calls are the store's.
protocol SecretServiceCalls: Sendable {
    /// The same backend, with every call ending by `deadline` (one operation's deadline).
    func ending(by deadline: Deadline) -> any SecretServiceCalls
    /// The same backend, its calls behaving as `configuration` says (its timeout, prompts and
    /// transport policy).
    func configured(_ configuration: KeychainConfiguration) -> any SecretServiceCalls
    /// The change token now, without I/O; nil when not connected (anything may have changed).
    var currentChangeToken: ChangeToken? { get }
    /// How far the item announcements have come, without I/O; nil when no connection is open.
    var announcementMark: AnnouncementMark? { get }
    /// The item announcements heard since `mark`; nil when they cannot be told.
    func announcements(since mark: AnnouncementMark) -> [ItemAnnouncement]?
    /// What was announced between two change tokens (one announcement per change); nil when it
    /// cannot be told.
    func announcements(between earlier: ChangeToken, and later: ChangeToken) -> [ItemAnnouncement]?
    /// Whether the provider announces a SetSecret (nil: no session open yet).
    var announcesSecretChanges: Bool? { get }
    /// Returns once what the bus routed to this connection before the call has been heard (one
    /// round trip to the bus: ``SecretServiceClient/hearAnnouncementsRoutedSoFar()``).
    func hearAnnouncementsRoutedSoFar() async throws(SecretServiceError)
    func findItems(matching attributes: [String: String], in collection: CollectionReference) async throws(SecretServiceError) -> SecretSearchResult
    func searchItems(matching attributes: [String: String], in collection: CollectionReference?) async throws(SecretServiceError) -> SecretSearchResult
    func itemInfo(_ path: ItemPath) async throws(SecretServiceError) -> SecretItemInfo
    func secret(of path: ItemPath) async throws(SecretServiceError) -> SecretRead
    func setSecret(_ value: SecretValue, of path: ItemPath) async throws(SecretServiceError) -> ChangeToken
    func updateItem(_ path: ItemPath, label: String?, attributes: [String: String]?) async throws(SecretServiceError)
    func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                    secret: SecretValue, replacing: Bool) async throws(SecretServiceError) -> CreatedItem
    func deleteItem(_ path: ItemPath) async throws(SecretServiceError) -> ChangeToken
    func collectionInfo(_ collection: CollectionReference) async throws(SecretServiceError) -> SecretCollectionInfo
    func lock(_ paths: [ObjectPath]) async throws(SecretServiceError)
    func unlock(_ paths: [ObjectPath]) async throws(SecretServiceError)
    /// Which item holds each account, as last found through this backend's connection.
    var rememberedItems: RememberedItems { get }
}

/// ``SecretServiceCalls`` over a ``SecretServiceClient``: one connection.
struct ClientCalls: SecretServiceCalls {
    let client: SecretServiceClient
    let rememberedItems: RememberedItems

    func ending(by deadline: Deadline) -> any SecretServiceCalls {
        ClientCalls(client: client.ending(by: deadline), rememberedItems: rememberedItems)
    }
    func configured(_ configuration: KeychainConfiguration) -> any SecretServiceCalls {
        ClientCalls(client: client.with(options: .init(configuration)), rememberedItems: rememberedItems)
    }
    var currentChangeToken: ChangeToken? { client.currentChangeToken }
    var announcementMark: AnnouncementMark? { client.announcementMark }
    func announcements(since mark: AnnouncementMark) -> [ItemAnnouncement]? { client.announcements(since: mark) }
    func announcements(between earlier: ChangeToken, and later: ChangeToken) -> [ItemAnnouncement]? {
        client.announcements(between: earlier, and: later)
    }
    var announcesSecretChanges: Bool? { client.announcesSecretChanges }
    func hearAnnouncementsRoutedSoFar() async throws(SecretServiceError) { try await client.hearAnnouncementsRoutedSoFar() }
    func findItems(matching attributes: [String: String], in collection: CollectionReference) async throws(SecretServiceError) -> SecretSearchResult {
        try await client.findItems(matching: attributes, in: collection)
    }
    func searchItems(matching attributes: [String: String], in collection: CollectionReference?) async throws(SecretServiceError) -> SecretSearchResult {
        try await client.searchItems(matching: attributes, in: collection)
    }
    func itemInfo(_ path: ItemPath) async throws(SecretServiceError) -> SecretItemInfo { try await client.itemInfo(path) }
    func secret(of path: ItemPath) async throws(SecretServiceError) -> SecretRead { try await client.secret(of: path) }
    func setSecret(_ value: SecretValue, of path: ItemPath) async throws(SecretServiceError) -> ChangeToken {
        try await client.setSecret(value, of: path)
    }
    func updateItem(_ path: ItemPath, label: String?, attributes: [String: String]?) async throws(SecretServiceError) {
        try await client.updateItem(path, label: label, attributes: attributes)
    }
    func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                    secret: SecretValue, replacing: Bool) async throws(SecretServiceError) -> CreatedItem {
        try await client.createItem(in: collection, label: label, attributes: attributes, secret: secret, replacing: replacing)
    }
    func deleteItem(_ path: ItemPath) async throws(SecretServiceError) -> ChangeToken { try await client.deleteItem(path) }
    func collectionInfo(_ collection: CollectionReference) async throws(SecretServiceError) -> SecretCollectionInfo {
        try await client.collectionInfo(collection)
    }
    func lock(_ paths: [ObjectPath]) async throws(SecretServiceError) { try await client.lock(paths) }
    func unlock(_ paths: [ObjectPath]) async throws(SecretServiceError) { try await client.unlock(paths) }
}

/// The Secret Service of one place's bus (``KeychainPlace``), as PingStorage uses it: one
/// connection to the bus, shared by every storage and encryptor of the place (a place holding
/// storages for a thousand accounts has one connection and one session), what its calls taught
/// (``RememberedItems``), and, on the same connection, the Secret portal. Everything it answers is
/// in PingStorage's words: its failures are ``StorageFailure``.
///
/// Thread-safety: `Sendable`; the connection opens on first use.
final class SecretServiceConnection: Sendable {
    let calls: any SecretServiceCalls
    /// The client, when the calls go over a real connection (nil for an in-memory service).
    let client: SecretServiceClient?
    /// The Secret portal's answer, when given (tests of a file keyring); nil: ask the portal.
    private let givenPortalSecret: (@Sendable (Deadline) async throws(StorageFailure) -> [UInt8])?
    /// The bus, whose prompts pause the place's deadlines (``deadline(timeout:)``).
    private let bus: BusAddress

    /// The Secret Service (and Secret portal) on `bus`.
    convenience init(bus: KeychainConfiguration.Bus) {
        Log.forwardSecretServiceDiagnostics()
        let client = SecretServiceClient(bus: BusAddress(bus))
        self.init(calls: ClientCalls(client: client, rememberedItems: RememberedItems()), client: client, portalSecret: nil,
                  bus: BusAddress(bus))
    }

    /// `calls` as the Secret Service (an in-memory one in tests); `portalSecret`, when given, as the
    /// Secret portal's answer.
    init(calls: any SecretServiceCalls, client: SecretServiceClient? = nil,
         portalSecret: (@Sendable (Deadline) async throws(StorageFailure) -> [UInt8])? = nil, bus: BusAddress = .session) {
        self.calls = calls
        self.client = client
        self.givenPortalSecret = portalSecret
        self.bus = bus
    }

    /// A deadline `timeout` from now that stands still while a prompt of this process is on screen
    /// on this bus (``PromptTime``).
    func deadline(timeout: Duration) -> Deadline { PromptTime.deadline(timeout: timeout, on: bus) }

    /// The store of `configuration`'s items and keys here.
    func store(for configuration: KeychainConfiguration, boundKeys: BoundKeys) -> SecretServiceStore {
        SecretServiceStore(calls: calls.configured(configuration), keyCollection: CollectionReference(configuration.collection),
                           app: configuration.appIdentity.id, boundKeys: boundKeys)
    }

    /// The app's master secret from the Secret portal (the caller wipes it).
    /// - Throws: `.noSecretService` without a portal or its Secret backend, `.promptDismissed`,
    ///   `.timedOut`, `.noSessionBus`; cancellation.
    func portalSecret(by deadline: Deadline) async throws(StorageFailure) -> [UInt8] {
        if let givenPortalSecret { return try await givenPortalSecret(deadline) }
        guard let client else {
            throw .failure(.noSecretService(.init(message: "There is no Secret portal here.", detail: "an in-memory Secret Service")))
        }
        return try await translatingSecretServiceErrors { () async throws(SecretServiceError) in
            try await client.ending(by: deadline).portalSecret()
        }
    }

    /// Checks that a Secret Service provider answers on the bus.
    /// - Throws: `.noSecretService` when none does; the bus's and the provider's errors.
    func checkProvider(by deadline: Deadline) async throws(StorageFailure) {
        guard let client else { return }
        _ = try await translatingSecretServiceErrors { () async throws(SecretServiceError) in
            try await client.ending(by: deadline).provider()
        }
    }

    /// Who provides the Secret Service, and the transport negotiated (plain accepted: it is
    /// reported, and nothing secret is sent), asked with `configuration`'s options.
    /// - Throws: `.noSessionBus`, `.noSecretService`, `.timedOut`, the provider's errors.
    func provider(for configuration: KeychainConfiguration, by deadline: Deadline) async throws(StorageFailure) -> KeyringProvider {
        guard let client else {
            throw .failure(.noSecretService(.init(message: "No provider: an in-memory Secret Service.")))
        }
        var options = SecretServiceClient.Options(configuration)
        options.allowsPlainTransport = true
        let provider = try await translatingSecretServiceErrors { () async throws(SecretServiceError) in
            try await client.with(options: options).ending(by: deadline).provider()
        }
        return KeyringProvider(name: provider.displayName, executable: provider.executable, processID: provider.processID,
                               uniqueName: provider.uniqueName, transport: provider.transportAlgorithm)
    }

    /// The host's keyring, as a move into a sandbox sees it (``HostKeyring``).
    func host(for configuration: KeychainConfiguration) -> any HostKeyring {
        SecretServiceHost(calls: calls.configured(configuration), collection: CollectionReference(configuration.collection),
                          answers: { [self] deadline in
                              do throws(StorageFailure) { try await checkProvider(by: deadline) } catch { return false }
                              return true
                          })
    }
}

extension KeyringProvider {
    /// How to create a first keyring (a default collection) with the provider whose executable is
    /// `executable`, for a program that may not prompt (ping-keyring's doctor): the library's own
    /// advice, by provider.
    package static func adviceForAFirstKeyring(executable: String?) -> String {
        SecretServiceError.createDefaultAdvice(ProviderKind(executable: executable), .promptsOff)
    }
}

extension Log {
    /// Forwards SecretService's events to this log, once per process (a receiver the app set
    /// itself is kept).
    private static let forwardingSecretService: Void = {
        SecretServiceDiagnostics.setHandlerIfNone { event in
            switch event.level {
            case .debug: Log.debug(event.message)
            case .info: Log.info(event.message)
            case .warning: Log.warning(event.message)
            }
        }
    }()

    /// Forwards SecretService's events to this log from now on (the first connection asks).
    static func forwardSecretServiceDiagnostics() { forwardingSecretService }
}

/// The host's Secret Service as a move into a sandbox sees it (``HostKeyring``): the service's
/// items and the key items of the app or of no app, read with their secrets, and the deletion of
/// an item the move copied, only while it still is what was copied.
struct SecretServiceHost: HostKeyring {
    let calls: any SecretServiceCalls
    let collection: CollectionReference
    let answers: @Sendable (Deadline) async -> Bool

    func answers(by deadline: Deadline) async -> Bool { await answers(deadline) }

    func items(of service: String, app: String, by deadline: Deadline) async throws(StorageFailure)
        -> [(info: KeychainItemInfo, secret: StoredSecret)] {
        let client = calls.ending(by: deadline)
        return try await translatingSecretServiceErrors { () async throws(SecretServiceError) in
            var paths = try await client.findItems(matching: ["service": service], in: collection).all
            for path in try await client.findItems(matching: ["xdg:schema": KeychainStorageSchemas.key], in: collection).all
            where !paths.contains(path) {
                paths.append(path)
            }
            var items: [(info: KeychainItemInfo, secret: StoredSecret)] = []
            for path in paths {
                let info = try await client.itemInfo(path)
                guard AccountRules.isUsable(info.attributes, by: app) else { continue }  // another app's: not ours to take
                items.append((KeychainItemInfo(info), StoredSecret(try await client.secret(of: path).value)))
            }
            return items
        }
    }

    func delete(_ deletion: HostMigration.MoveRecord.Deletion, by deadline: Deadline) async -> HostMigration.DeletionResult {
        guard let path = try? ItemPath(deletion.path) else { return .gone }  // not a path: nothing of the host's
        let client = calls.ending(by: deadline)
        do throws(SecretServiceError) {
            let info = try await client.itemInfo(path)
            var value = try await client.secret(of: path).value.bytes
            defer { value.wipe() }
            guard HostMigration.MoveRecord.digest(attributes: info.attributes, secret: value) == deletion.digest else { return .changed }
            _ = try await client.deleteItem(path)
            return .deleted
        } catch where error.code == .itemNotFound {
            return .gone
        } catch {
            return .failed(KeychainError(error))
        }
    }
}
