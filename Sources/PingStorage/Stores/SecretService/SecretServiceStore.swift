#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Locking
import PingStorageCrypto
internal import SecretService
import Waiting

/// The items and keys of a configuration in the Secret Service (``KeyringStore``): the app's own
/// item of the account, else one no app owns (whoever wrote it: Python keyring's and go-keyring's
/// included), the app's own replaced in place or created, never an item no app owns written into,
/// duplicates collapsed, nothing written on a read (``AccountRules``). Unlocking, lock states and
/// provider quirks are the client's (``SecretServiceClient``); what this store learns from it is
/// the change token each call returns, which lets it use a remembered item without a search.
///
/// Secret Service errors become ``StorageFailure`` here, once (`run`).
struct SecretServiceStore: KeyringStore {
    let calls: any SecretServiceCalls
    /// Where SecuredKeyEncryptor's key items are (items of an account name their own, ``AccountRules``).
    let keyCollection: CollectionReference
    /// The app whose keys these are (``AppIdentity/id``).
    let app: String
    /// What the TPM taught the place's bound keys.
    let boundKeys: BoundKeys
    /// Each key item loaded: where, its `key-check`, and the change token when it was found.
    let knownKeys = Locked<[KeyID: (path: ItemPath, checkValue: String?, token: ChangeToken)]>([:])

    init(calls: any SecretServiceCalls, keyCollection: CollectionReference, app: String, boundKeys: BoundKeys) {
        self.calls = calls
        self.keyCollection = keyCollection
        self.app = app
        self.boundKeys = boundKeys
    }

    /// The account's secret. The remembered item (found before, and nothing created or deleted
    /// since) is read with one GetSecret; if the answer's token shows a change meanwhile, the
    /// account is searched again.
    func read(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> StoredSecret? {
        let items = AccountItems(rules: account, calls: calls.ending(by: deadline))
        return try await run { () async throws(SecretServiceError) in
            if let known = items.rememberedItem(), let value = try await items.readRemembered(known) {
                return StoredSecret(value)
            }
            return try await items.retryingVanishedItem { () async throws(SecretServiceError) in
                let found = try await items.accountItems()
                guard !found.readable.isEmpty else {
                    items.forget()
                    return nil
                }
                let (target, read) = try await items.chosenWithSecret(found.readable, of: found, for: .toRead)
                items.remember(target, found: found, answeredAt: read.changeToken, holding: read.value.bytes)
                return StoredSecret(read.value)
            }
        }
    }

    /// Stores `value` with one write at most: the app's own item's secret is replaced in place, and
    /// not written at all when it already holds what `holds` recognises; without one, the app's own
    /// item is created. Items no app owns are never written into (``AccountRules``).
    func write(_ stored: StoredSecret, holds: @escaping @Sendable (Data) -> Bool, for account: AccountRules,
               by deadline: Deadline) async throws(StorageFailure) -> Bool {
        let items = AccountItems(rules: account, calls: calls.ending(by: deadline))
        let value = stored.secretValue
        return try await run { () async throws(SecretServiceError) in
            if let known = items.rememberedItem(), known.isComplete,
               let wrote = try await items.writeRemembered(known, value, holds) {
                return wrote
            }
            return try await items.retryingVanishedItem { () async throws(SecretServiceError) -> Bool in
                let found = try await items.accountItems()
                guard !found.own.isEmpty else {
                    try await items.create(value, after: found)
                    return true
                }
                var (target, current) = try await items.chosenWithSecret(found.own, of: found, for: .toKeep)
                defer { current.value.bytes.wipe() }
                let wrote = !holds(current.value.bytes)
                var written: ChangeToken?
                if wrote {
                    written = try await items.calls.setSecret(value, of: target.path)
                }
                if !items.isComplete(target) {
                    Log.info("Account '\(account.account)': giving the app's item \(target.path) PingStorage's label and attributes")
                    try await items.complete(target)
                }
                for duplicate in found.own where duplicate != target.path {
                    Log.info("Account '\(account.account)': removing the duplicate item \(duplicate) (keeping \(target.path))")
                    _ = try await items.calls.deleteItem(duplicate)
                }
                var completed = target
                completed.label = account.label
                completed.attributes = target.attributes.merging(account.itemAttributes) { $1 }
                items.remember(completed, found: found, answeredAt: current.changeToken,
                               holding: wrote ? value.bytes : current.value.bytes)
                if let written { items.keepRemembered(afterWritingTo: target.path, answeredAt: written) }
                return wrote
            }
        }
    }

    /// Deletes the app's own items of the account and those no app owns (``AccountRules``).
    func delete(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) {
        let items = AccountItems(rules: account, calls: calls.ending(by: deadline))
        try await run { () async throws(SecretServiceError) in
            // The remembered item was the one a read takes, the account's items no app owns were
            // known with it, and nothing was created since: delete them without searching
            // (deleting an item that is already gone succeeds).
            if let known = items.rememberedItem(), let unowned = known.unowned {
                items.forget()
                for path in [known.path] + unowned { _ = try await items.calls.deleteItem(path) }
                return
            }
            items.forget()
            let found = try await items.accountItems(lookingPastOwn: true)
            for path in found.own + (found.unowned ?? []) { _ = try await items.calls.deleteItem(path) }
        }
    }

    func info(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> KeychainItemInfo? {
        let items = AccountItems(rules: account, calls: calls.ending(by: deadline))
        return try await run { () async throws(SecretServiceError) in
            let found = try await items.accountItems()
            return found.readable.isEmpty ? nil : KeychainItemInfo(try await items.chosen(found.readable, of: found, for: .toRead))
        }
    }

    /// The metadata and the secret are asked for at once (one round trip, as ``read(_:by:)``),
    /// where ``info(_:by:)`` then a read would take two.
    func infoAndSecret(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> (info: KeychainItemInfo, secret: StoredSecret)? {
        let items = AccountItems(rules: account, calls: calls.ending(by: deadline))
        return try await run { () async throws(SecretServiceError) -> (info: KeychainItemInfo, secret: StoredSecret)? in
            try await items.retryingVanishedItem { () async throws(SecretServiceError) -> (info: KeychainItemInfo, secret: StoredSecret)? in
                let found = try await items.accountItems()
                guard !found.readable.isEmpty else { return nil }
                let (target, read) = try await items.chosenWithSecret(found.readable, of: found, for: .toRead)
                return (KeychainItemInfo(target), StoredSecret(read.value))
            }
        }
    }

    /// Runs Secret Service calls, their errors translated (``translatingSecretServiceErrors(_:)``).
    func run<Value>(_ body: () async throws(SecretServiceError) -> Value) async throws(StorageFailure) -> Value {
        try await translatingSecretServiceErrors(body)
    }
}

/// Whether what this process last saw of an account's item still holds, for a cache that must
/// follow other processes' saves and deletes (``StorageDelegate``).
///
/// What the provider announced since the stamp decides, when it can (``ItemAnnouncement``): an
/// item created, announcements lost (the connection closed, the provider changed hands) or too
/// many to tell: not current. Announcements about other items: irrelevant. KWallet announces every
/// secret written in place, so with no announcement about the item it is current, once one round
/// trip to the bus (not the provider) has brought whatever was routed to us before it. GNOME
/// Keyring announces no SetSecret and KeePassXC not those made while it saves its database; there,
/// and for an announcement about the item itself (possibly this process's own save), the item's
/// secret is read once and compared with what this process last read or wrote (its SHA-256,
/// ``RememberedItems/Entry/digest``).
extension SecretServiceStore {
    /// Whether what was heard since `stamp` is about the item at `path` (created, changed or
    /// deleted); nil when it may be about anything: announcements lost or no longer kept, or
    /// another item created (another item of the account may have appeared).
    private func heardSince(_ stamp: StoreStamp, about path: ItemPath) -> Bool? {
        guard let heard = calls.announcements(since: AnnouncementMark(connection: stamp.source, count: stamp.count)) else { return nil }
        var aboutTheItem = false
        for announcement in heard {
            switch announcement.kind {
            case .lost:
                return nil
            case .created where announcement.item != path:
                return nil
            case .created, .changed, .deleted:
                if announcement.item == path { aboutTheItem = true }
            }
        }
        return aboutTheItem
    }

    func changeStamp() -> StoreStamp? {
        calls.announcementMark.map { StoreStamp(source: $0.connection, count: $0.count) }
    }

    func isUnchanged(_ account: AccountRules, since stamp: StoreStamp, verifying: Bool,
                     by deadline: Deadline) async throws(StorageFailure) -> Bool {
        let items = AccountItems(rules: account, calls: calls.ending(by: deadline))
        let calls = items.calls
        guard let known = items.rememberedItem(), let digest = known.digest else { return false }
        switch heardSince(stamp, about: known.path) {
        case nil:
            return false
        case false? where !verifying && calls.announcesSecretChanges == true:
            // Nothing heard about the item, and the provider announces every save: current, once
            // what the bus has routed to us so far is heard too (another process's save returned
            // after its announcement was routed, but the announcement may still be on its way).
            do throws(SecretServiceError) {
                try await calls.hearAnnouncementsRoutedSoFar()
            } catch {
                return false
            }
            // Anything heard meanwhile moved the change token, and the remembered item with it.
            return items.rememberedItem() != nil
        default:
            break
        }
        return try await run { () async throws(SecretServiceError) -> Bool in
            do throws(SecretServiceError) {
                var read = try await calls.secret(of: known.path)
                defer { read.value.bytes.wipe() }
                return read.changeToken.isUnchanged(since: known.token) && RememberedItems.digest(read.value.bytes) == digest
            } catch where error.code == .itemNotFound {
                items.forget()
                return false
            }
        }
    }
}
