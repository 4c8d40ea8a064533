#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
import SecretService
import Waiting

/// A 2.0.0 bound key's pin added in the Secret Service (``BoundKeyPinning``). The Secret Service
/// has no compare-and-swap: the item's bytes are read again right before they are replaced, so a
/// rewrite by another program is lost only if it lands within that one round trip, and then the
/// item holds the key this app sealed with (``KeyVault/confirm(_:)`` checks that after every save).
extension SecretServiceStore: BoundKeyPinning {
    func pinBoundKey(_ id: KeyID, replacing read: Data, with pinned: Data, by deadline: Deadline) async throws(StorageFailure) {
        let calls = self.calls.ending(by: deadline), app = self.app
        try await run { () async throws(SecretServiceError) in
            let found = try await calls.findItems(matching: ["xdg:schema": KeyVault.schema, "key-id": id.hexString], in: keyCollection)
            for path in found.all {
                let info = try await calls.itemInfo(path)
                guard info.attributes[AppIdentity.attribute] == app else { continue }
                var current = try await calls.secret(of: path).value.bytes
                defer { current.wipe() }
                guard current == read else { continue }
                _ = try await calls.setSecret(SecretValue(bytes: pinned, contentType: "application/octet-stream"), of: path)
            }
        }
    }
}
