import Foundation
import SecretService

/// The item-level rules of ``KeychainStorage`` on the Secret Service: one item per
/// (service, account), found whoever wrote it, replaced in place, duplicates collapsed, locked
/// never mistaken for missing, nothing written on a read.
struct KeychainItems: Sendable {
    /// The `xdg:schema` attribute of items we write.
    static let schemaName = "com.pingidentity.PingStorage"

    let account: String
    let configuration: KeychainConfiguration
    let backend: any SecretServiceBackend

    /// The attributes that identify the item; also what items written by other tools carry.
    var lookupAttributes: [String: String] { ["service": configuration.service, "account": account] }

    /// Everything we write: the lookup attributes, `username` (what Python keyring and
    /// go-keyring look up) and our schema.
    var itemAttributes: [String: String] {
        lookupAttributes.merging(["username": account, "xdg:schema": Self.schemaName]) { $1 }
    }

    /// The label Seahorse, KeePassXC and KWallet show.
    var label: String { "\(account) (\(configuration.service))" }

    private var lockKey: String { "\(configuration.collection)\u{0}\(configuration.service)\u{0}\(account)" }

    func validate() throws {
        guard !account.isEmpty else {
            throw KeychainError.invalidArgument("the account name is empty; give KeychainStorage a non-empty account.")
        }
        guard !configuration.service.isEmpty else {
            throw KeychainError.invalidArgument("the service name is empty; give KeychainConfiguration a non-empty service.")
        }
        guard !account.utf8.contains(0), !configuration.service.utf8.contains(0) else {
            throw KeychainError.invalidArgument("account and service names cannot contain NUL characters (D-Bus strings cannot).")
        }
    }

    /// The stored bytes, or nil when there is no item. Reads only: never writes, deletes or unlocks
    /// anything but through the prompt the configuration allows.
    ///
    /// Fast path: when this process found the account's item before and no item has been created or
    /// deleted since (``ItemChanges``), its secret is read directly — one GetSecret round trip. If
    /// an item was created or deleted meanwhile, or the item is gone, it searches again.
    func read() async throws -> SecretValue? {
        try validate()
        return try await mapped {
            try await AccountLocks.shared.withLock(lockKey) {
                if let known = knownItem(), let value = try await readKnown(known) {
                    return try await settled(value, at: known.path)
                }
                return try await retryingVanishedItem {
                    let generation = backend.itemGeneration
                    guard let paths = try await findItems() else {
                        forgetItem()
                        return nil
                    }
                    let target = try await newest(paths)
                    let value = try await settled(try await backend.secret(of: target.path), at: target.path)
                    remember(target, generation: generation, single: paths.count == 1)
                    return value
                }
            }
        }
    }

    /// Stores `value` so that exactly one item holds it afterwards, with one write at most: the
    /// existing item's secret is replaced in place, and not written at all when it already holds
    /// `value` (gnome-keyring rewrites its whole file on every write).
    func write(_ value: SecretValue) async throws {
        try validate()
        try await mapped {
            try await AccountLocks.shared.withLock(lockKey) {
                if let known = knownItem(), known.isComplete, try await writeKnown(known, value) { return }
                try await retryingVanishedItem {
                    let generation = backend.itemGeneration
                    guard let paths = try await findItems() else {
                        try await create(value, searchedAt: generation)
                        return
                    }
                    var target = try await newest(paths)
                    let wanted = target.attributes.merging(itemAttributes) { $1 }
                    let current = try await settled(try await backend.secret(of: target.path), at: target.path)
                    if current.bytes != value.bytes {
                        try await backend.setSecret(value, of: target.path)
                    }
                    if !isComplete(target) {
                        try await complete(target, wanted: wanted)
                        target.label = label
                        target.attributes = wanted
                    }
                    for duplicate in paths where duplicate != target.path {
                        try await backend.deleteItem(duplicate)
                    }
                    remember(target, generation: generation, single: paths.count == 1)
                }
            }
        }
    }

    /// Deletes every item of the account. Nothing to delete is success.
    func delete() async throws {
        try validate()
        try await mapped {
            try await AccountLocks.shared.withLock(lockKey) {
                // The remembered item was the account's only one, and nothing was created since:
                // delete it without searching (deleting an item that is already gone succeeds).
                if let known = knownItem() {
                    forgetItem()
                    try await backend.deleteItem(known.path)
                    return
                }
                forgetItem()
                guard let paths = try await findItems() else { return }
                for path in paths { try await backend.deleteItem(path) }
            }
        }
    }

    /// Creates the account's item, then makes sure it is the only one.
    ///
    /// Not `CreateItem(replace: true)`: KeePassXC 2.7.4 answers a replace of an item that another
    /// D-Bus client created with an access dialog that never completes headless (and stops
    /// answering SIGTERM while it is open), and two processes creating the same account at once
    /// are exactly that case. So the item is created without replace; when anything else was
    /// created or deleted meanwhile, the account is searched again and duplicates that a concurrent
    /// creator left are collapsed onto the one every process picks alike (``isOlder``), so racing
    /// processes converge on one item instead of each deleting the other's.
    ///
    /// `generation` is the item generation read before the search that found no item.
    private func create(_ value: SecretValue, searchedAt generation: UInt64) async throws {
        let path = try await backend.createItem(
            in: configuration.collection, label: label, attributes: itemAttributes,
            secret: value, replacing: false)
        // Our own ItemCreated arrives before the reply to CreateItem: if the generation moved by
        // exactly one since before the search, nothing else was created or deleted between the
        // search that found nothing and our item, so it is the account's only one (remembered, so
        // the next read is one GetSecret). A process creating the account after us sees our
        // ItemCreated too, and collapses the two.
        if backend.itemGeneration == generation + 1 {
            backend.knownItems[lockKey] = KnownItem(path: path, generation: generation + 1, isComplete: true)
            return
        }
        guard let paths = try await findItems(), paths != [path] else { return }
        let target = try await newest(paths)
        for duplicate in paths where duplicate != target.path {
            try await backend.deleteItem(duplicate)
        }
    }

    /// Gives an item another tool wrote our label and attributes, best effort: the item is found by
    /// service and account either way.
    private func complete(_ item: SecretItemInfo, wanted: [String: String]) async throws {
        let newLabel = item.label == label ? nil : label
        // All the attributes; then without those KeePassXC publishes itself and refuses to be
        // written back (InvalidArgs); then the label alone. The first the provider takes wins.
        var attempts: [[String: String]?] = wanted == item.attributes ? [nil]
            : [wanted, wanted.filter { !Self.providerOwnedAttributes.contains($0.key) }, nil]
        if newLabel == nil { attempts.removeAll { $0 == nil } }
        for attributes in attempts {
            do {
                try await backend.updateItem(item.path, label: newLabel, attributes: attributes)
                return
            } catch let error as SecretServiceError where error.code == .providerError {
                continue  // the provider keeps what the other tool wrote; nothing depends on it
            }
        }
    }

    /// Attributes KeePassXC computes for every item and refuses in a write (its `Uuid`, `Path`
    /// and `TOTP`); setting attributes there merges, so leaving them out loses nothing.
    static let providerOwnedAttributes: Set<String> = ["Uuid", "Path", "TOTP"]

    /// KeychainStorage never stores an empty value, but KWallet creates an item before it sets
    /// its secret, so another process can see it empty for a moment: read such an item again
    /// after a short pause before reporting what it holds. A locked KWallet answers with an empty
    /// secret too (and would then still accept writes and deletes): an item that stays empty is
    /// only reported as such once its collection is known to be unlocked.
    private func settled(_ value: SecretValue, at path: String) async throws -> SecretValue {
        guard value.bytes.isEmpty else { return value }
        try await Task.sleep(for: .milliseconds(100))
        let again = try await backend.secret(of: path)
        guard again.bytes.isEmpty else { return again }
        let collection = try await backend.collectionInfo(configuration.collection)
        guard collection.isLocked else { return again }
        try await backend.unlock([collection.path])  // .locked when prompts are not allowed
        return try await backend.secret(of: path)
    }

    // MARK: - The remembered item

    private typealias KnownItem = KnownItemCache.Entry

    /// The remembered item, if nothing was created or deleted since it was found.
    private func knownItem() -> KnownItem? {
        guard let known = backend.knownItems[lockKey] else { return nil }
        return known.generation == backend.itemGeneration ? known : nil
    }

    /// Remembers the item, but only when it was the account's only one: with duplicates the
    /// next write must collapse them.
    private func remember(_ item: SecretItemInfo, generation: UInt64, single: Bool) {
        backend.knownItems[lockKey] =
            single ? KnownItem(path: item.path, generation: generation, isComplete: isComplete(item)) : nil
    }

    /// Whether the item carries all our attributes and our label.
    private func isComplete(_ item: SecretItemInfo) -> Bool {
        item.label == label && itemAttributes.allSatisfy { item.attributes[$0.key] == $0.value }
    }

    private func forgetItem() {
        backend.knownItems[lockKey] = nil
    }

    /// Reads the remembered item; nil when it turned out stale (then the caller searches).
    private func readKnown(_ known: KnownItem) async throws -> SecretValue? {
        do {
            let value = try await backend.secret(of: known.path)
            // An item created or deleted while we read (its signal precedes our reply) may be a
            // newer duplicate: the value is then not trusted.
            return backend.itemGeneration == known.generation ? value : nil
        } catch let error as SecretServiceError where error.code == .itemNotFound {
            forgetItem()
            return nil
        }
    }

    /// Writes through the remembered item; false when it turned out stale.
    private func writeKnown(_ known: KnownItem, _ value: SecretValue) async throws -> Bool {
        do {
            let current = try await settled(try await backend.secret(of: known.path), at: known.path)
            guard backend.itemGeneration == known.generation else { return false }
            // Bytes only: the content type follows from them, and gnome-keyring reports every secret
            // as text/plain, so comparing types would rewrite unchanged binary values every time.
            if current.bytes == value.bytes { return true }
            try await backend.setSecret(value, of: known.path)
            return true
        } catch let error as SecretServiceError where error.code == .itemNotFound {
            forgetItem()
            return false
        }
    }

    /// Where the item lives, without its secret; nil when there is none.
    func info() async throws -> SecretItemInfo? {
        try validate()
        return try await mapped {
            guard let paths = try await findItems() else { return nil }
            return try await newest(paths)
        }
    }

    // MARK: - Rules

    /// The account's items in the configured collection, unlocked; nil when there are none.
    private func findItems() async throws -> [String]? {
        try await backend.findUnlockedItems(matching: lookupAttributes, in: configuration.collection)
    }

    /// The item to use among duplicates: the most recently modified, then the most recently
    /// created, then the highest item number. Deterministic whoever asks.
    private func newest(_ paths: [String]) async throws -> SecretItemInfo {
        let infos = try await withThrowingTaskGroup(of: SecretItemInfo.self) { group in
            for path in paths { group.addTask { try await backend.itemInfo(path) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        return infos.max(by: Self.isOlder)!
    }

    static func isOlder(_ a: SecretItemInfo, _ b: SecretItemInfo) -> Bool {
        if a.modified != b.modified { return a.modified < b.modified }
        if a.created != b.created { return a.created < b.created }
        let numberA = Int(a.path.split(separator: "/").last ?? "") ?? -1
        let numberB = Int(b.path.split(separator: "/").last ?? "") ?? -1
        if numberA != numberB { return numberA < numberB }
        return a.path < b.path
    }

    /// Another client may delete or replace the item between our search and our next call; start
    /// over from the search when that happens (a few times: other processes may keep doing it).
    private func retryingVanishedItem<Value>(_ body: () async throws -> Value) async throws -> Value {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as SecretServiceError where error.code == .itemNotFound && attempt < 4 {
                forgetItem()
                attempt += 1
            }
        }
    }

    private func mapped<Value>(_ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch {
            throw KeychainError.from(error)
        }
    }
}
