#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import Waiting

/// The items and keys of a configuration in a sandbox's file keyring (``KeyringStore``): the same
/// rules as on the Secret Service (``AccountRules``: attributes, label, the app's own item first and
/// items no app owns only while it has none, never written into; the choice among duplicates),
/// each operation one transaction of the file
/// (``FileKeyring/modify(by:_:)``), so that nothing another process of the app writes at the same
/// moment is lost, and no create race can leave duplicates.
///
/// File errors become ``StorageFailure`` here, once (`run`).
struct FileKeyringStore: KeyringStore {
    /// The file, opened with the portal's secret at the first call.
    let keychain: FileKeychain
    /// The app whose keys these are (``AppIdentity/id``).
    let app: String
    /// What the TPM taught the place's keys.
    let boundKeys: BoundKeys

    /// Nothing like a change token: a chosen key is read again at each save (a local file read).
    func keysUnchanged(since moment: StoreMoment?) -> Bool { false }

    func read(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> StoredSecret? {
        guard let (stored, index) = try await newestItem(account, by: deadline) else { return nil }
        return StoredSecret(read: stored[index].secret.copiedData(), contentType: stored[index].contentType)
    }

    /// The newest item's metadata and secret, from one read of the file (both of one version of it).
    func infoAndSecret(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> (info: KeychainItemInfo, secret: StoredSecret)? {
        guard let (stored, index) = try await newestItem(account, by: deadline) else { return nil }
        return (info(stored[index], at: index),
                StoredSecret(read: stored[index].secret.copiedData(), contentType: stored[index].contentType))
    }

    /// The newest item's metadata, with a path that names the file and the item's position in it
    /// (`/file/NAME/N`: not a D-Bus object).
    func info(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> KeychainItemInfo? {
        guard let (stored, index) = try await newestItem(account, by: deadline) else { return nil }
        return info(stored[index], at: index)
    }

    /// Leaves exactly one item of the app's own for the account, holding `value`, created when the
    /// app has none (items no app owns are left as they are). Nothing is written when that is
    /// already so, the item's secret counting as `value` when `holds` says so.
    func write(_ value: StoredSecret, holds: @escaping @Sendable (Data) -> Bool, for account: AccountRules,
               by deadline: Deadline) async throws(StorageFailure) -> Bool {
        let secret = FileKeyringSecret(copying: value.bytes)
        let keyring = try await keychain.keyring(by: deadline)
        let written: Void? = try await run(account: account) { () async throws(FileKeyringError) in
            try await keyring.modify(by: deadline.instant, withDamaged: { stored, damaged throws(FileKeyringError) in
                // A damaged record that may be the app's own item is neither overwritten nor left
                // beside a new item (which of the two would a read take?): nothing is written.
                try Self.refuseDamaged(damaged, of: account, in: keyring, concerning: [.own])
                let own = stored.indices.filter { account.ownership(of: stored[$0].attributes) == .own }
                guard let target = account.chosen(own, for: .toKeep, age: { ItemAge(stored[$0], position: $0) }) else {
                    stored.append(FileKeyringItem(label: account.label, attributes: account.itemAttributes, secret: secret))
                    return
                }
                let duplicates = own.filter { $0 != target }
                var item = stored[target]
                if item.secret != secret, !Self.secret(item.secret, satisfies: holds) { item.secret = secret }
                item.label = account.label
                item.attributes.merge(account.itemAttributes) { $1 }
                guard item != stored[target] || !duplicates.isEmpty else { throw FileKeyringError.aborted("unchanged") }
                if item.label != stored[target].label || item.attributes != stored[target].attributes {
                    Log.info("Account '\(account.account)': giving the file keyring's item \(target + 1) PingStorage's label and attributes")
                }
                if !duplicates.isEmpty {
                    Log.info("Account '\(account.account)': removing \(duplicates.count) duplicate item(s) from the file keyring")
                }
                stored[target] = item
                for index in duplicates.reversed() { stored.remove(at: index) }
            })
        }
        return written != nil
    }

    /// Removes the app's own items of the account and those no app owns; nothing to remove writes
    /// nothing. A damaged record that may be one of them fails the delete: it is not removed, and
    /// nothing is (a delete that succeeded would promise a `get` of nil, and the damaged record may
    /// be a value the user restores from a backup).
    func delete(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) {
        let keyring = try await keychain.keyring(by: deadline)
        _ = try await run(account: account) { () async throws(FileKeyringError) in
            try await keyring.modify(by: deadline.instant, withDamaged: { stored, damaged throws(FileKeyringError) in
                try Self.refuseDamaged(damaged, of: account, in: keyring, concerning: [.own, .unowned])
                let before = stored.count
                stored.removeAll { account.belongsToAccount($0.attributes) }
                if stored.count == before { throw FileKeyringError.aborted("unchanged") }
            })
        }
    }

    /// Throws ``FileKeyringError/Code/damagedItem`` when a record of `damaged` may be an item of
    /// the account whose ownership is in `concerned` (``AccountRules/mayBeAccounts(_:)``).
    static func refuseDamaged(_ damaged: [FileKeyringDamagedRecord], of account: AccountRules, in keyring: FileKeyring,
                              concerning concerned: Set<ItemOwnership>) throws(FileKeyringError) {
        var matching: [FileKeyringDamagedRecord] = []
        for record in damaged where try account.mayBeAccounts(record).contains(where: concerned.contains) { matching.append(record) }
        if !matching.isEmpty { throw .damaged(matching, path: keyring.path) }
    }

    /// The item of a file a read of the account takes (``AccountRules/readable(_:)``, the newest by
    /// ``DuplicateChoice/toRead``, the position in the file standing for the item number); nil
    /// when the account has none.
    static func readItem(in stored: [FileKeyringItem], of account: AccountRules) -> Int? {
        let readable = account.readable(stored.indices.compactMap { index in
            account.ownership(of: stored[index].attributes).map { (index, $0) }
        })
        return account.chosen(readable, for: .toRead) { ItemAge(stored[$0], position: stored[$0].recordIndex ?? $0) }
    }

    /// `/file/NAME/N` for the item at `index` of the keyring at `path` (NAME: the file's name
    /// without `.keyring`, in the characters object paths allow, so that tools that expect one
    /// take it).
    static func itemLocation(_ path: String, _ index: Int) -> String {
        let file = path.split(separator: "/").last.map(String.init) ?? "keyring"
        let name = (file.hasSuffix(".keyring") ? String(file.dropLast(8)) : file).map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber) ? character : "_"
        }
        return "/file/\(name.isEmpty ? "_" : String(name))/\(index + 1)"
    }

    /// The file's readable items and the index of the one a read takes, or nil when the account
    /// has none. A damaged record that may be the app's own item is an error even beside a readable
    /// item (it may hold the newer value), and so is one that may be no app's while the app has no
    /// item of its own (it may be the one to read).
    private func newestItem(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> (stored: [FileKeyringItem], index: Int)? {
        let keyring = try await keychain.keyring(by: deadline)
        let stored = try await run(account: account) { () async throws(FileKeyringError) -> [FileKeyringItem] in
            // The account's records alone are decrypted (by their hashed attributes).
            let contents = try await keyring.contents(matchingAny: [account.lookupAttributes, account.usernameAttributes],
                                                      by: deadline.instant)
            try Self.refuseDamaged(contents.damaged, of: account, in: keyring, concerning: Self.readConcerns(contents.items, account))
            return contents.items
        } ?? []
        return Self.readItem(in: stored, of: account).map { (stored, $0) }
    }

    /// Which damaged records a read of the account must refuse, given the readable `items`: those
    /// that may be the app's own, and while it has none, those that may be no app's.
    static func readConcerns(_ items: [FileKeyringItem], _ account: AccountRules) -> Set<ItemOwnership> {
        items.contains { account.ownership(of: $0.attributes) == .own } ? [.own] : [.own, .unowned]
    }

    private func info(_ item: FileKeyringItem, at index: Int) -> KeychainItemInfo {
        item.info(in: keychain.path, at: item.recordIndex ?? index)
    }

    /// Whether `secret` passes `holds`, given a copy of its bytes that is wiped afterwards.
    private static func secret(_ secret: FileKeyringSecret, satisfies holds: (Data) -> Bool) -> Bool {
        var copy = secret.copiedData()
        defer { copy.wipe() }
        return holds(copy)
    }

    /// Runs a file call: the one place its errors become ``StorageFailure`` (naming `account`,
    /// when the call is one account's). Nil when the transaction was abandoned on purpose (there
    /// was nothing to change).
    func run<Value>(account: AccountRules? = nil,
                    _ body: () async throws(FileKeyringError) -> Value) async throws(StorageFailure) -> Value? {
        do {
            return try await body()
        } catch where error.code == .aborted {
            return nil
        } catch {
            throw StorageFailure(error, account: account?.account)
        }
    }
}

extension AccountRules {
    /// Which ownerships a damaged record may have as an item of the account (``ownership(of:)``
    /// asked of what its hashed attributes say: their values compared as HMACs; the attributes it
    /// decrypted to, when it did); empty when it cannot be the account's. Rather too many than too
    /// few: a record that may be the account's makes its calls fail instead of find nothing, or
    /// write beside it.
    func mayBeAccounts(_ record: FileKeyringDamagedRecord) throws(FileKeyringError) -> Set<ItemOwnership> {
        let byAccount = try record.matches(lookupAttributes)
        let byUsername = byAccount ? false : try record.matches(usernameAttributes)
        guard byAccount || byUsername else { return [] }
        // Another app's (its app attribute is there and is not this app) is never the account's.
        guard record.hashedAttributeNames.contains(AppIdentity.attribute) else { return [.unowned] }
        return try record.matches([AppIdentity.attribute: app]) ? [.own] : []
    }
}

extension ItemAge {
    init(_ item: FileKeyringItem, position: Int) {
        self.init(modified: Date(timeIntervalSince1970: Double(item.modified)),
                  created: Date(timeIntervalSince1970: Double(item.created)), number: position, path: "")
    }
}

extension FileKeyringItem {
    /// The metadata of the item at `index` of the keyring at `path`
    /// (``FileKeyringStore/itemLocation(_:_:)``).
    func info(in path: String, at index: Int) -> KeychainItemInfo {
        KeychainItemInfo(location: FileKeyringStore.itemLocation(path, index), collection: path, label: label,
                         attributes: attributes, created: Date(timeIntervalSince1970: Double(created)),
                         modified: Date(timeIntervalSince1970: Double(modified)), isLocked: false)
    }
}

extension FileKeyringSecret {
    /// The bytes, as Data for the layers above (which wipe it once used).
    func copiedData() -> Data { withUnsafeBytes { Data($0) } }
}
