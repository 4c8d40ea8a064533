#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import PingStorageCrypto
import Waiting

/// A 2.0.0 bound key's pin added in a file keyring (``KeyringStore/pinBoundKey(_:replacing:with:by:)``): one transaction of the
/// file, so the bytes compared are the bytes replaced.
extension FileKeyringStore {
    func pinBoundKey(_ id: KeyID, replacing read: Data, with pinned: Data, by deadline: Deadline) async throws(StorageFailure) {
        let keyring = try await keychain.keyring(by: deadline)
        let app = self.app
        _ = try await run { () async throws(FileKeyringError) in
            try await keyring.modify(by: deadline.instant) { items throws(FileKeyringError) in
                var changed = false
                for index in items.indices {
                    let attributes = items[index].attributes
                    guard attributes["xdg:schema"] == KeyVault.schema, attributes["key-id"] == id.hexString,
                          attributes[AppIdentity.attribute] == app,
                          items[index].secret.withUnsafeBytes({ Data($0) == read }) else { continue }
                    items[index].secret = FileKeyringSecret(copying: pinned)
                    items[index].modified = UInt64(max(0, Date().timeIntervalSince1970))
                    changed = true
                }
                // Nothing to change: the transaction is abandoned (the file is not rewritten).
                if !changed { throw FileKeyringError.aborted("the key item changed or is not this app's") }
            }
        }
    }
}
