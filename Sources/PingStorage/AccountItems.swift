#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SecretService

/// What one of an account's duplicate items is chosen for.
enum DuplicateChoice: Sendable {
    /// To read: the most recently modified (the value written last), then the most recently
    /// created, then the highest item number.
    case toRead
    /// To keep, by a save that writes its value into the item and deletes the others: the most
    /// recently created, then the highest item number. Never by modification time, which a
    /// concurrent save changes: two processes collapsing the same duplicates, one reading the
    /// times before a third process's SetSecret and one after, would each keep the item the
    /// other deletes and leave the account with none (four processes on KWallet did).
    case toKeep
}

/// How recent an item is, for choosing among duplicates (``DuplicateChoice``); a file keyring's
/// item number is its position. Deterministic whoever asks, on either backend.
struct ItemAge {
    var modified: Date
    var created: Date
    var number: Int
    var path: String

    init(modified: Date, created: Date, number: Int, path: String) {
        (self.modified, self.created, self.number, self.path) = (modified, created, number, path)
    }

    init(_ info: SecretItemInfo) {
        self.init(modified: info.modified, created: info.created,
                  number: Int(info.path.objectPath.lastElement) ?? -1, path: info.path.rawValue)
    }

    /// Whether `self` comes before `other` in the order of `choice` (the chosen item is the last).
    func isOlder(than other: ItemAge, for choice: DuplicateChoice) -> Bool {
        switch choice {
        case .toRead: (modified, created, number, path) < (other.modified, other.created, other.number, other.path)
        case .toKeep: (created, number, path) < (other.created, other.number, other.path)
        }
    }
}

/// The account's items as a search found them, with the token of that answer.
struct FoundItems: Sendable {
    var paths: [ItemPath]
    /// Metadata already read during the search (items other tools wrote), by path.
    var known: [ItemPath: SecretItemInfo]
    var token: ChangeToken?
}

extension KeychainItems {
    /// The `xdg:schema` attribute of items we write.
    static let schemaName = KeychainStorageSchemas.item

    /// The attributes that identify the item; also what items written by other tools carry.
    var lookupAttributes: [String: String] { ["service": configuration.service, "account": account] }

    /// Everything we write: the lookup attributes, `username` (what Python keyring and
    /// go-keyring look up) and our schema.
    var itemAttributes: [String: String] {
        lookupAttributes.merging(["username": account, "xdg:schema": Self.schemaName]) { $1 }
    }

    /// The label Seahorse, KeePassXC and KWallet show.
    var label: String { "\(account) (\(configuration.service))" }

    /// What identifies the account's items in the process: operations under one key are
    /// serialized (``AccountLocks``), and the remembered item is kept under it. The backend setting
    /// is part of it, so that two file keyrings holding the same account never wait for each other.
    var lockKey: String {
        "\(configuration.backend)\u{0}\(configuration.bus)\u{0}\(configuration.collection)\u{0}\(configuration.service)\u{0}\(account)"
    }

    // MARK: Finding the account's items

    /// The account's items in the configured collection, unlocked (possibly none).
    ///
    /// Two searches go out at once: by `service` + `account` (ours and most tools'), and by
    /// `service` + `username` (Python keyring and go-keyring write `username` and no `account`).
    /// An item of the second kind is the same account when it has no `account` attribute; one
    /// whose `account` differs is never taken. When the two answers do not describe the same
    /// moment (something changed between them), they are asked again.
    func accountItems() async throws(SecretServiceError) -> FoundItems {
        var attempt = 0
        while true {
            attempt += 1
            let byUsername = ["service": configuration.service, "username": account]
            let collection = configuration.collection
            let backend = self.backend
            async let usernameSearch: Result<SecretSearchResult, SecretServiceError> = { () async -> Result<SecretSearchResult, SecretServiceError> in
                do throws(SecretServiceError) { return .success(try await backend.searchItems(matching: byUsername, in: collection)) }
                catch { return .failure(error) }
            }()
            let ours = try await backend.findItems(matching: lookupAttributes, in: collection)
            let theirs = try await usernameSearch.get()
            let sameMoment = theirs.changeToken.isUnchanged(since: ours.changeToken)
            if !sameMoment && attempt < 3 { continue }
            var paths = ours.all
            var known: [ItemPath: SecretItemInfo] = [:]
            for path in theirs.all where !paths.contains(path) {
                let info = try await backend.itemInfo(path)
                guard belongsToAccount(info.attributes) else { continue }
                known[path] = info
                paths.append(path)
            }
            let locked = theirs.locked.filter { known[$0] != nil }
            if !locked.isEmpty {
                // Adopted items that were locked: unlock them the way findItems unlocked ours.
                _ = try await backend.findItems(matching: byUsername, in: collection)
            }
            return FoundItems(paths: paths, known: known, token: sameMoment ? ours.changeToken : nil)
        }
    }

    /// The item to use among duplicates, for `choice`. Deterministic whoever asks.
    func chosen(_ found: FoundItems, for choice: DuplicateChoice) async throws(SecretServiceError) -> SecretItemInfo {
        var infos: [SecretItemInfo] = []
        for path in found.paths {
            if let known = found.known[path] { infos.append(known) } else { infos.append(try await backend.itemInfo(path)) }
        }
        return infos.max { ItemAge($0).isOlder(than: ItemAge($1), for: choice) }!
    }

    /// ``chosen(_:for:)`` and its secret. When there is one item, its metadata and its secret are
    /// asked for at once: one round trip.
    func chosenWithSecret(_ found: FoundItems, for choice: DuplicateChoice) async throws(SecretServiceError) -> (SecretItemInfo, SecretRead) {
        guard found.paths.count == 1, found.known[found.paths[0]] == nil else {
            let target = try await chosen(found, for: choice)
            return (target, try await backend.secret(of: target.path))
        }
        let path = found.paths[0], backend = self.backend
        async let info: Result<SecretItemInfo, SecretServiceError> = { () async -> Result<SecretItemInfo, SecretServiceError> in
            do throws(SecretServiceError) { return .success(try await backend.itemInfo(path)) } catch { return .failure(error) }
        }()
        let read: SecretRead
        do throws(SecretServiceError) {
            read = try await backend.secret(of: path)
        } catch {
            _ = await info
            throw error
        }
        return (try await info.get(), read)
    }

    /// Whether an item with `attributes` is the account's: ours and most tools' carry `service`
    /// and `account`; Python keyring's and go-keyring's carry `service` and `username` and no
    /// `account`. An item whose `account` differs is never the account's, whatever its `username`.
    func belongsToAccount(_ attributes: [String: String]) -> Bool {
        guard attributes["service"] == configuration.service else { return false }
        if let owner = attributes["account"] { return owner == account }
        return attributes["username"] == account
    }

    // MARK: Creating and completing

    /// Creates the account's item, then makes sure it is the only one.
    ///
    /// Not `CreateItem(replace: true)`: KeePassXC 2.7.4 answers a replace of an item that another
    /// D-Bus client created with an access dialog that never completes headless, and two
    /// processes creating the same account at once are exactly that case. So the item is created
    /// without replace; when anything else was created or deleted since the search that found
    /// nothing, the account is searched again and duplicates that a concurrent creator left are
    /// collapsed onto the one every process picks alike (``DuplicateChoice/toKeep``), so racing
    /// processes converge on one item instead of each deleting the other's.
    func create(_ value: SecretValue, searchedAt searchToken: ChangeToken?) async throws(SecretServiceError) {
        let created = try await backend.createItem(in: configuration.collection, label: label, attributes: itemAttributes,
                                                   secret: value, replacing: false)
        // Our own ItemCreated arrives before the answer to CreateItem: one change since the search
        // means nothing else was created or deleted in between, so the item is the account's only
        // one. A process creating the account after us sees our ItemCreated, and collapses the two.
        if let searchToken, created.changeToken.changes(since: searchToken) == 1 {
            backend.rememberedItems[lockKey] = .init(path: created.path, token: created.changeToken, isComplete: true)
            return
        }
        let found = try await accountItems()
        guard found.paths != [created.path], !found.paths.isEmpty else { return }
        let target = try await chosen(found, for: .toKeep)
        for duplicate in found.paths where duplicate != target.path {
            Log.info("Account '\(account)': another client created it at the same time; removing \(duplicate), keeping \(target.path)")
            _ = try await backend.deleteItem(duplicate)
        }
    }

    /// Whether the item carries all our attributes and our label.
    func isComplete(_ item: SecretItemInfo) -> Bool {
        item.label == label && itemAttributes.allSatisfy { item.attributes[$0.key] == $0.value }
    }

    /// Gives an item another tool wrote our label and attributes (keeping theirs), best effort:
    /// the item is found by service and account either way, and a provider that refuses (the
    /// client already left out what KeePassXC computes itself) keeps what the other tool wrote.
    func complete(_ item: SecretItemInfo) async throws(SecretServiceError) {
        let wanted = item.attributes.merging(itemAttributes) { $1 }
        do {
            try await backend.updateItem(item.path, label: item.label == label ? nil : label,
                                         attributes: wanted == item.attributes ? nil : wanted)
        } catch where error.code == .providerError {
            if item.label != label { try? await backend.updateItem(item.path, label: label, attributes: nil) }
        }
    }

    // MARK: The remembered item

    /// The remembered item, if nothing was created or deleted since it was found.
    func rememberedItem() -> RememberedItems.Entry? {
        guard let known = backend.rememberedItems[lockKey], let now = backend.currentChangeToken,
              now.isUnchanged(since: known.token) else { return nil }
        return known
    }

    /// Remembers `item` when it was the account's only one and nothing changed between the search
    /// and `answer` (with duplicates, or after a change, the next call searches again).
    func remember(_ item: SecretItemInfo, found: FoundItems, answeredAt answer: ChangeToken) {
        guard found.paths.count == 1, let token = found.token, answer.isUnchanged(since: token) else {
            forget()
            return
        }
        backend.rememberedItems[lockKey] = .init(path: item.path, token: token, isComplete: isComplete(item))
    }

    func forget() { backend.rememberedItems[lockKey] = nil }
}
