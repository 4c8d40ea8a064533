#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import SecretService
import Waiting

/// The identities of a service's items and of the key items in the Secret Service, and moving one
/// identity's items to another (``KeychainIdentities``).
extension SecretServiceStore {
    func identityItems(service: String, by deadline: Deadline) async throws(StorageFailure) -> [KeychainIdentities.Item] {
        try await found(service, unlocking: false, by: deadline).map(\.item)
    }

    /// Each item of the old identity gets the new one as its `pingstorage-app` (its other attributes,
    /// its label and its secret as they are); each key of the old identity the new one lacks is
    /// copied for it (its secret read and written into a new item of the new identity's).
    func moveItems(service: String, from old: String, to new: String, by deadline: Deadline) async throws(StorageFailure) -> KeychainIdentities.Move {
        let calls = self.calls.ending(by: deadline), collection = keyCollection
        let found = try await found(service, unlocking: true, by: deadline)
        let plan = KeychainIdentities.plan(found.map(\.item), from: old, to: new)
        var move = KeychainIdentities.Move(skipped: plan.skip)
        try await run { () async throws(SecretServiceError) in
            for index in plan.give {
                let (path, info, item) = found[index]
                try await calls.updateItem(path, label: nil, attributes: info.attributes.merging([AppIdentity.attribute: new]) { $1 })
                move.moved.append(item.account ?? "")
            }
            for index in plan.copyKeys {
                let (path, info, item) = found[index]
                var secret = try await calls.secret(of: path).value
                defer { secret.bytes.wipe() }
                _ = try await calls.createItem(
                    in: collection, label: info.label, attributes: info.attributes.merging([AppIdentity.attribute: new]) { $1 },
                    secret: SecretValue(bytes: secret.bytes, contentType: "application/octet-stream"), replacing: false)
                move.keysCopied.append(item.keyID ?? "")
            }
        }
        return move
    }

    /// The service's items and the key items, with their metadata; unlocked (as the client's
    /// policy allows) when `unlocking`. An item deleted meanwhile is left out.
    private func found(_ service: String, unlocking: Bool,
                       by deadline: Deadline) async throws(StorageFailure) -> [(path: ItemPath, info: SecretItemInfo, item: KeychainIdentities.Item)] {
        let calls = self.calls.ending(by: deadline), collection = keyCollection
        return try await run { () async throws(SecretServiceError) in
            var paths: [ItemPath] = []
            for query in [["service": service], ["xdg:schema": KeyVault.schema]] {
                let result = unlocking ? try await calls.findItems(matching: query, in: collection)
                    : try await calls.searchItems(matching: query, in: collection)
                paths += result.all.filter { !paths.contains($0) }
            }
            var found: [(path: ItemPath, info: SecretItemInfo, item: KeychainIdentities.Item)] = []
            for path in paths {
                do throws(SecretServiceError) {
                    let info = try await calls.itemInfo(path)
                    if let item = KeychainIdentities.Item(info.attributes, service: service) { found.append((path, info, item)) }
                } catch where error.code == .itemNotFound {
                    continue
                }
            }
            return found
        }
    }
}
