#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import Waiting

/// Whether what this process last saw of the file still holds (``KeyringStore/changeStamp()``):
/// the file is watched for other processes' writes (``FileKeyring/foreignChanges()``: inotify, and
/// the file's identity to tell this process's own writes), so a cached item is current exactly
/// while no other process wrote the file. The file is local: when it was written, the cache is
/// dropped and the next read takes the file again.
extension FileKeyringStore {
    func changeStamp() -> StoreStamp? {
        keychain.openedKeyring?.foreignChanges().map { StoreStamp(source: 0x4649_4C45, count: $0) }
    }

    /// The watch counts every other process's write, whether or not `verifying`.
    func isUnchanged(_ account: AccountRules, since stamp: StoreStamp, verifying: Bool,
                     by deadline: Deadline) async throws(StorageFailure) -> Bool {
        keychain.openedKeyring?.foreignChangesChecked() == stamp.count
    }
}

/// Any tool's items in the file keyring, for ping-keyring (``KeyringInventory``): one consistent
/// snapshot of the file per call. The file is the collection; it has no lock of its own.
extension FileKeyringStore {
    func collection(by deadline: Deadline) async throws(StorageFailure) -> KeyringCollection {
        KeyringCollection(location: keychain.path, label: "", isLocked: false)
    }

    func items(matchingAny queries: [[String: String]], reading: KeyringItemReading,
               by deadline: Deadline) async throws(StorageFailure) -> [KeyringItem] {
        let keyring = try await keychain.keyring(by: deadline)
        let stored = try await run { () async throws(FileKeyringError) -> [FileKeyringItem] in
            let contents = try await keyring.contents(matchingAny: queries, by: deadline.instant)
            // A damaged record one of the queries may match fails the call: the list would lack it.
            var damaged: [FileKeyringDamagedRecord] = []
            for record in contents.damaged {
                for query in queries where try record.matches(query) {
                    damaged.append(record)
                    break
                }
            }
            if !damaged.isEmpty { throw FileKeyringError.damaged(damaged, path: keyring.path) }
            return contents.items
        } ?? []
        return stored.indices.filter { index in queries.contains { stored[index].matches($0) } }.map { index in
            let item = stored[index]
            return KeyringItem(info: item.info(in: keychain.path, at: item.recordIndex ?? index),
                               secret: reading == .metadata ? nil
                                   : StoredSecret(read: item.secret.copiedData(), contentType: item.contentType))
        }
    }

    func setLocked(_ locked: Bool, by deadline: Deadline) async throws(StorageFailure) {
        throw .failure(.invalidArgument(.init(
            message: "The file keyring \(keychain.path) has no lock of its own: it is opened with the app's secret from the "
                + "Secret portal. Nothing was \(locked ? "locked" : "unlocked").")))
    }
}
