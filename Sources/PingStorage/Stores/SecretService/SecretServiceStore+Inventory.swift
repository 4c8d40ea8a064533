#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import DBusTransport
internal import SecretService
import Waiting

/// Any tool's items in the configuration's collection, for ping-keyring (``KeyringInventory``):
/// searched as the storage searches (the client's unlock policy) when secrets are read, and
/// without unlocking anything otherwise.
extension SecretServiceStore {
    func collection(by deadline: Deadline) async throws(StorageFailure) -> KeyringCollection {
        let calls = calls.ending(by: deadline), collection = keyCollection
        return try await run { () async throws(SecretServiceError) in
            let info = try await calls.collectionInfo(collection)
            return KeyringCollection(location: info.path.rawValue, label: info.label, isLocked: info.isLocked)
        }
    }

    func items(matchingAny queries: [[String: String]], reading: KeyringItemReading,
               by deadline: Deadline) async throws(StorageFailure) -> [KeyringItem] {
        let calls = calls.ending(by: deadline), collection = keyCollection
        return try await run { () async throws(SecretServiceError) in
            var unlocked: [ItemPath] = [], locked: [ItemPath] = []
            for query in queries {
                let found = reading == .secrets
                    ? try await calls.findItems(matching: query, in: collection)
                    : try await calls.searchItems(matching: query, in: collection)
                unlocked += found.unlocked.filter { !unlocked.contains($0) }
                locked += found.locked.filter { !locked.contains($0) && !unlocked.contains($0) }
            }
            var items: [KeyringItem] = []
            for path in unlocked + locked {
                if let item = try await Self.item(path, reading: reading, isLocked: locked.contains(path), calls) {
                    items.append(item)
                }
            }
            return items
        }
    }

    /// One item's metadata, and its secret as `reading` says; nil when it was deleted meanwhile.
    private static func item(_ path: ItemPath, reading: KeyringItemReading, isLocked: Bool,
                             _ calls: any SecretServiceCalls) async throws(SecretServiceError) -> KeyringItem? {
        do throws(SecretServiceError) {
            let info = KeychainItemInfo(try await calls.itemInfo(path))
            let readsSecret = reading == .secrets || (reading == .secretsOfUnlocked && !isLocked)
            guard readsSecret else { return KeyringItem(info: info) }
            return KeyringItem(info: info, secret: StoredSecret(try await calls.secret(of: path).value))
        } catch where error.code == .itemNotFound {
            return nil
        } catch where error.code == .locked && reading != .secrets {
            // A provider that hides a locked item's metadata.
            return .locked(at: path.rawValue, in: path.collection.rawValue)
        }
    }

    func setLocked(_ locked: Bool, by deadline: Deadline) async throws(StorageFailure) {
        let calls = calls.ending(by: deadline), collection = keyCollection
        try await run { () async throws(SecretServiceError) in
            let before = try await calls.collectionInfo(collection)
            guard before.isLocked != locked else { return }
            if locked { try await calls.lock([before.path]) } else { try await calls.unlock([before.path]) }
        }
    }
}
