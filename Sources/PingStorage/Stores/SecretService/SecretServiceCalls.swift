#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Locking
import SecretService
import DBusTransport
import Waiting

/// The Secret Service calls ``SecretServiceStore`` makes: a ``SecretServiceClient`` in production,
/// an in-memory service in unit tests. Unlock policy, lock state and provider quirks are the
/// client's (see its documentation); the Keychain rules applied with these calls are the store's.
protocol SecretServiceCalls: Sendable {
    /// The same backend, with every call ending by `deadline` (one operation's deadline).
    func ending(by deadline: Deadline) -> any SecretServiceCalls
    /// The change token now, without I/O; nil when not connected (anything may have changed).
    var currentChangeToken: ChangeToken? { get }
    func findItems(matching attributes: [String: String], in collection: CollectionReference) async throws(SecretServiceError) -> SecretSearchResult
    func searchItems(matching attributes: [String: String], in collection: CollectionReference?) async throws(SecretServiceError) -> SecretSearchResult
    func itemInfo(_ path: ItemPath) async throws(SecretServiceError) -> SecretItemInfo
    func secret(of path: ItemPath) async throws(SecretServiceError) -> SecretRead
    func setSecret(_ value: SecretValue, of path: ItemPath) async throws(SecretServiceError) -> ChangeToken
    func updateItem(_ path: ItemPath, label: String?, attributes: [String: String]?) async throws(SecretServiceError)
    func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                    secret: SecretValue, replacing: Bool) async throws(SecretServiceError) -> CreatedItem
    func deleteItem(_ path: ItemPath) async throws(SecretServiceError) -> ChangeToken
    /// Which item holds each account, as last found through this backend's connection.
    var rememberedItems: RememberedItems { get }
}

/// ``SecretServiceCalls`` over a ``SecretServiceClient``: the process's one connection per bus.
package struct ClientCalls: SecretServiceCalls {
    let client: SecretServiceClient
    let rememberedItems: RememberedItems

    func ending(by deadline: Deadline) -> any SecretServiceCalls {
        ClientCalls(client: client.ending(by: deadline), rememberedItems: rememberedItems)
    }
    var currentChangeToken: ChangeToken? { client.currentChangeToken }
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

    /// One connection per bus for the whole process, shared by every storage and encryptor: a
    /// process holding storages for a thousand accounts still has one connection and one session.
    /// (A PingStorage-level registry: SecretService itself keeps no such state.)
    private static let shared = Locked<[BusAddress: (SecretServiceClient, RememberedItems)]>([:])

    /// The client KeychainStorage uses for `configuration`'s bus (its one connection there), with
    /// `options`: for tools that call the Secret Service directly next to KeychainStorage and
    /// should not open a second connection and session.
    package static func client(for configuration: KeychainConfiguration,
                               options: SecretServiceClient.Options) -> SecretServiceClient {
        shared(for: configuration).client.with(options: options)
    }

    /// The backend for `configuration`: the shared connection to its bus, with its options.
    static func shared(for configuration: KeychainConfiguration) -> ClientCalls {
        let (client, remembered) = shared.withLock { shared in
            if let existing = shared[configuration.bus] { return existing }
            let created = (SecretServiceClient(bus: configuration.bus), RememberedItems())
            shared[configuration.bus] = created
            return created
        }
        return ClientCalls(client: client.with(options: configuration.options), rememberedItems: remembered)
    }
}

/// What one connection's calls have taught: which item path holds each account, with the change
/// token when that was known (valid exactly while the token has not moved), and which changes
/// were this connection's own creations of account items.
final class RememberedItems: Sendable {
    struct Entry: Sendable {
        /// The item a read of the account takes.
        var path: ItemPath
        var token: ChangeToken
        /// Whether the item is the app's own: a save writes through it only then (never into an
        /// item no app owns, ``AccountRules``).
        var isOwn: Bool
        /// Whether the item already carries our attributes and label (else a write adds them).
        var isComplete: Bool
        /// The account's items no app owns besides it, which a delete removes too; nil when not
        /// known (a delete then searches).
        var unowned: [ItemPath]?
    }
    private let entries = Locked<[String: Entry]>([:])
    /// Token before → token after, for each creation of an account item that was the only change
    /// at its moment (see `recordOwnItemCreation`).
    private let ownItemCreations = Locked<[ChangeToken: ChangeToken]>([:])

    subscript(key: String) -> Entry? {
        get { entries.withLock { $0[key] } }
        set { entries.withLock { $0[key] = newValue } }
    }

    /// Records that the one change between `before` and `after` was an account item this
    /// connection created (its CreateItem answered at `after`, one change after `before`).
    func recordOwnItemCreation(from before: ChangeToken, to after: ChangeToken) {
        guard after.changes(since: before) == 1 else { return }
        ownItemCreations.withLock { creations in
            if creations.count >= 256 { creations.removeAll() }  // bounded: an old entry only saves a search
            creations[before] = after
        }
    }

    /// Whether nothing but this connection's own account items was created between `earlier` and
    /// `now`: then no key item appeared or vanished, and a key chosen or found at `earlier` still
    /// stands (an account item is never a key item).
    func onlyOwnItemsCreated(since earlier: ChangeToken, now: ChangeToken) -> Bool {
        ownItemCreations.withLock { creations in
            var token = earlier
            while !now.isUnchanged(since: token) {
                guard let next = creations[token] else { return false }
                token = next
            }
            return true
        }
    }
}
