#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The Keychain rules of one account of one app, the same on every store (``KeyringStore``): which
/// items are the account's, what we write on them, and which item a read takes or a save keeps
/// among duplicates. No I/O.
///
/// **Whose items.** An item of the account is the app's own (its `pingstorage-app` is the app), no
/// app's (it has no `pingstorage-app`: PingStorage 1.x's, secret-tool's, Python keyring's and
/// go-keyring's), or another app's (never the account's for this app, ``ItemOwnership``).
/// - A read takes the app's own item; only while the app has none does it take an item no app
///   owns (so 1.x upgrades and other tools' items keep working).
/// - A save writes into the app's own item, or creates it. **No secret is ever written into an item
///   no app owns**, and such an item is never adopted: two apps saving the same account at once,
///   over the same item no app owns, each end with their own item, and neither reads the other's
///   value at any moment (an adopting save would write its secret into the shared item first).
/// - A delete removes the app's own items and the account's items no app owns, so that nothing
///   comes back on the next read.
struct AccountRules: Sendable {
    let account: String
    let service: String
    /// The app's identity (``AppIdentity/id``), resolved when the storage was created.
    let app: String
    let collection: KeychainConfiguration.Collection
    /// What identifies the account's items in its place: operations under one key are serialized
    /// (the place's ``AccountLocks``), and the Secret Service's remembered item is kept under it.
    let lockKey: String

    init(account: String, configuration: KeychainConfiguration) {
        self.account = account
        service = configuration.service
        app = configuration.appIdentity.id
        collection = configuration.collection
        lockKey = ["\(configuration.backend)", "\(configuration.bus)", "\(configuration.collection)",
                   configuration.service, app, account].joined(separator: "\u{0}")
    }

    /// Checks the names before anything is sent.
    func validate() throws(StorageFailure) {
        guard !account.isEmpty else {
            throw .keychain(.invalidArgument("The account name is empty; give KeychainStorage a non-empty account."))
        }
        guard !service.isEmpty else {
            throw .keychain(.invalidArgument("The service name is empty; give KeychainConfiguration a non-empty service."))
        }
        guard !account.utf8.contains(0), !service.utf8.contains(0) else {
            throw .keychain(.invalidArgument("Account and service names cannot contain NUL characters (D-Bus strings cannot)."))
        }
    }

    /// The `xdg:schema` attribute of items we write.
    static let schemaName = KeychainStorageSchemas.item

    /// The attributes that identify the item for tools (secret-tool, libsecret); items written
    /// by other tools carry these too.
    var lookupAttributes: [String: String] { ["service": service, "account": account] }

    /// The attributes of the app's own items of the account.
    var ownAttributes: [String: String] { lookupAttributes.merging([AppIdentity.attribute: app]) { $1 } }

    /// The attributes Python keyring and go-keyring look items up by (they write no `account`).
    var usernameAttributes: [String: String] { ["service": service, "username": account] }

    /// Everything we write: the lookup attributes, the app, `username` (what Python keyring and
    /// go-keyring look up) and our schema.
    var itemAttributes: [String: String] {
        ownAttributes.merging(["username": account, "xdg:schema": Self.schemaName]) { $1 }
    }

    /// The label Seahorse, KeePassXC and KWallet show.
    var label: String { "\(account) (\(service))" }

    /// Whose item of the account an item with `attributes` is; nil when it is not the account's.
    /// Ours and most tools' carry `service` and `account`; Python keyring's and go-keyring's carry
    /// `service` and `username` and no `account`. An item whose `account` differs is never the
    /// account's, whatever its `username`; one of another app (its `pingstorage-app` differs) never
    /// is either.
    func ownership(of attributes: [String: String]) -> ItemOwnership? {
        guard attributes["service"] == service, ItemAccount(attributes)?.name == account else { return nil }
        return ItemOwnership(attributes, app: app)
    }

    /// Whether an item with `attributes` is the account's (the app's own or no app's).
    func belongsToAccount(_ attributes: [String: String]) -> Bool { ownership(of: attributes) != nil }

    /// Whether an item (or key item) with `attributes` may be used by `app`: it is `app`'s, or no
    /// app's.
    static func isUsable(_ attributes: [String: String], by app: String) -> Bool { ItemOwnership(attributes, app: app) != nil }

    /// The items a read chooses among, from the account's items with their ownership: the app's own,
    /// or, only while it has none, those no app owns.
    func readable<Item>(_ items: [(item: Item, ownership: ItemOwnership)]) -> [Item] {
        let own = items.filter { $0.ownership == .own }
        return (own.isEmpty ? items : own).map(\.item)
    }

    /// Whether an item carries all our attributes and our label.
    func isComplete(label: String, attributes: [String: String]) -> Bool {
        label == self.label && itemAttributes.allSatisfy { attributes[$0.key] == $0.value }
    }

    /// The item to use among the account's duplicates, for `choice`; nil when there are none.
    /// Deterministic whoever asks, on either store.
    func chosen<Item>(_ items: [Item], for choice: DuplicateChoice, age: (Item) -> ItemAge) -> Item? {
        items.max { age($0).isOlder(than: age($1), for: choice) }
    }
}

/// Whose an item of an account (or a key item) is, for one app (``AccountRules``).
enum ItemOwnership: Sendable, Hashable {
    /// The app's own: its `pingstorage-app` is the app. A save writes only into these.
    case own
    /// No app's: it has no `pingstorage-app` (PingStorage 1.x's, other tools'). Read only while the
    /// app has no item of its own; never written into or adopted; removed by a delete.
    case unowned

    /// The ownership of an item with `attributes` for `app`; nil when it is another app's.
    init?(_ attributes: [String: String], app: String) {
        switch attributes[AppIdentity.attribute] {
        case nil: self = .unowned
        case app: self = .own
        default: return nil
        }
    }
}

/// The account an item is for, as ``KeychainStorage`` reads it: its `account` attribute, else (the
/// items Python keyring and go-keyring write: `service` and `username`, no `account`) its
/// `username`. The one place this rule is spelled; ping-keyring's `list` shows the items it finds.
package struct ItemAccount: Sendable, Equatable {
    /// The account's name.
    package var name: String
    /// Whether it comes from `username` because the item has no `account` attribute.
    package var isFromUsername: Bool

    /// The account of an item with `attributes`; nil when it has neither `account` nor `username`
    /// (no account's item for KeychainStorage).
    package init?(_ attributes: [String: String]) {
        if let account = attributes["account"] {
            (name, isFromUsername) = (account, false)
        } else if let username = attributes["username"] {
            (name, isFromUsername) = (username, true)
        } else {
            return nil
        }
    }
}

/// What one of an account's duplicate items is chosen for.
enum DuplicateChoice: Sendable {
    /// To read: the most recently modified (the value written last), then the most recently
    /// created, then the highest item number.
    case toRead
    /// To keep, by a save that writes its value into the item and deletes the others: the most
    /// recently created, then the highest item number. Never by modification time, which a
    /// concurrent save changes: two processes collapsing the same duplicates, one reading the
    /// times before a third process's SetSecret and one after, would each keep the item the
    /// other deletes and leave the account with none (four processes on one provider did).
    case toKeep
}

/// How recent an item is, for choosing among duplicates (``DuplicateChoice``); a file keyring's
/// item number is its position. Deterministic whoever asks, on either store.
struct ItemAge {
    var modified: Date
    var created: Date
    var number: Int
    var path: String

    /// Whether `self` comes before `other` in the order of `choice` (the chosen item is the last).
    func isOlder(than other: ItemAge, for choice: DuplicateChoice) -> Bool {
        switch choice {
        case .toRead: (modified, created, number, path) < (other.modified, other.created, other.number, other.path)
        case .toKeep: (created, number, path) < (other.created, other.number, other.path)
        }
    }
}

/// The `xdg:schema` attributes PingStorage writes: the one place they are spelled (ping-keyring
/// uses these too).
package enum KeychainStorageSchemas {
    /// KeychainStorage's items.
    package static let item = "com.pingidentity.PingStorage"
    /// SecuredKeyEncryptor's key items.
    package static let key = "com.pingidentity.PingStorage.SecuredKey"
}
