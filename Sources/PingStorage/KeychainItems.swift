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
    func read() async throws -> SecretValue? {
        try validate()
        return try await mapped {
            try await AccountLocks.shared.withLock(lockKey) {
                try await retryingVanishedItem {
                    guard let paths = try await findItems() else { return nil }
                    return try await backend.secret(of: try await newest(paths).path)
                }
            }
        }
    }

    /// Stores `value` so that exactly one item holds it afterwards.
    func write(_ value: SecretValue) async throws {
        try validate()
        try await mapped {
            try await AccountLocks.shared.withLock(lockKey) {
                try await retryingVanishedItem {
                    guard let paths = try await findItems() else {
                        _ = try await backend.createItem(
                            in: configuration.collection, label: label, attributes: itemAttributes,
                            secret: value, replacing: true)
                        return
                    }
                    let target = try await newest(paths)
                    try await backend.setSecret(value, of: target.path)
                    let wanted = target.attributes.merging(itemAttributes) { $1 }
                    if wanted != target.attributes || target.label != label {
                        try await backend.updateItem(
                            target.path, label: target.label == label ? nil : label,
                            attributes: wanted == target.attributes ? nil : wanted)
                    }
                    for duplicate in paths where duplicate != target.path {
                        try await backend.deleteItem(duplicate)
                    }
                }
            }
        }
    }

    /// Deletes every item of the account. Nothing to delete is success.
    func delete() async throws {
        try validate()
        try await mapped {
            try await AccountLocks.shared.withLock(lockKey) {
                guard let paths = try await findItems() else { return }
                for path in paths { try await backend.deleteItem(path) }
            }
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
    /// A locked collection with no visible match is reported as locked, not as missing.
    private func findItems() async throws -> [String]? {
        let found = try await backend.searchItems(matching: lookupAttributes, in: configuration.collection)
        if !found.locked.isEmpty {
            try await backend.unlock(found.locked)
        }
        if found.all.isEmpty {
            let collection = try await backend.collectionInfo(configuration.collection)
            guard collection.isLocked else { return nil }
            // Some providers hide a locked collection's items from searches.
            try await backend.unlock([collection.path])
            let again = try await backend.searchItems(matching: lookupAttributes, in: configuration.collection)
            if !again.locked.isEmpty { try await backend.unlock(again.locked) }
            return again.all.isEmpty ? nil : again.all
        }
        return found.all
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
    /// over once from the search when that happens.
    private func retryingVanishedItem<Value>(_ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch let error as SecretServiceError where error.code == .itemNotFound {
            return try await body()
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
