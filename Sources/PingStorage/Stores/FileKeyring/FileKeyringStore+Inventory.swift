#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import Waiting

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
