#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import Waiting

/// The identities of a service's items and of the key items in a file keyring, and moving one
/// identity's items to another (``KeychainIdentities``), in one transaction of the file.
extension FileKeyringStore {
    func identityItems(service: String, by deadline: Deadline) async throws(StorageFailure) -> [KeychainIdentities.Item] {
        let keyring = try await keychain.keyring(by: deadline)
        let items = try await run { () async throws(FileKeyringError) in try await keyring.items(by: deadline.instant) } ?? []
        return items.compactMap { KeychainIdentities.Item($0.attributes, service: service) }
    }

    func moveItems(service: String, from old: String, to new: String, by deadline: Deadline) async throws(StorageFailure) -> KeychainIdentities.Move {
        let keyring = try await keychain.keyring(by: deadline)
        let move = try await run { () async throws(FileKeyringError) -> KeychainIdentities.Move in
            try await keyring.modify(by: deadline.instant) { items throws(FileKeyringError) -> KeychainIdentities.Move in
                let found = items.indices.compactMap { index in
                    KeychainIdentities.Item(items[index].attributes, service: service).map { (index, $0) }
                }
                let plan = KeychainIdentities.plan(found.map(\.1), from: old, to: new)
                var move = KeychainIdentities.Move(skipped: plan.skip)
                for position in plan.give {
                    let (index, item) = found[position]
                    items[index].attributes[AppIdentity.attribute] = new
                    move.moved.append(item.account ?? "")
                }
                for position in plan.copyKeys {
                    let (index, item) = found[position]
                    var copy = items[index]
                    copy.attributes[AppIdentity.attribute] = new
                    items.append(FileKeyringItem(label: copy.label, attributes: copy.attributes, secret: copy.secret))
                    move.keysCopied.append(item.keyID ?? "")
                }
                if move.moved.isEmpty && move.keysCopied.isEmpty { throw FileKeyringError.aborted("nothing to move") }
                return move
            }
        }
        if let move { return move }
        // Nothing to move (the transaction was abandoned, the file not rewritten): what stays, as it is now.
        let items = try await identityItems(service: service, by: deadline)
        return KeychainIdentities.Move(skipped: KeychainIdentities.plan(items, from: old, to: new).skip)
    }
}
