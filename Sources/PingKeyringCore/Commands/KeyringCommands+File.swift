#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage
import SecretService

/// `list` on a sandbox's file keyring: the same queries and the same rows as on the Secret
/// Service, read from one snapshot of the file.
extension KeyringCommands {
    /// The items matching any of `queries` that KeychainStorage can reach (a `service` attribute and
    /// an ``ItemAccount``), each secret read to measure and classify it, then wiped.
    static func list(_ queries: [[String: String]], service: String?,
                     in inventory: FileKeyringInventory) async throws -> ListReport {
        var stored = try await inventory.items(matchingAny: queries)
        var items: [ListedItem] = []
        for index in stored.indices {
            // Wiped where it lies in the array (a copy would be wiped instead of the bytes).
            defer { stored[index].value.bytes.wipeInPlace() }
            let info = stored[index].info
            guard let account = ItemAccount(info.attributes), let itemService = info.attributes["service"] else { continue }
            items.append(ListedItem(info, account: account, service: itemService, secret: stored[index].value,
                                    collectionPath: inventory.path))
        }
        items.sort { ($0.service, $0.account, $0.path) < ($1.service, $1.account, $1.path) }
        return ListReport(collectionPath: inventory.path, service: service, items: items)
    }
}

extension ListedItem {
    /// The row of an item: its metadata, and of its secret only the size, content type and
    /// whether (and with which key) it is encrypted. `collectionPath` is the collection's object
    /// path, or the file keyring's path.
    init(_ info: SecretItemInfo, account: ItemAccount, service: String, secret: SecretValue, collectionPath: String) {
        let encryption = Encryption.classify(secret.bytes)
        self.init(account: account.name, accountFromUsername: account.isFromUsername, service: service,
                  label: info.label, path: info.path.rawValue,
                  collectionPath: collectionPath, created: info.created, modified: info.modified,
                  size: secret.bytes.count, contentType: secret.contentType,
                  encryption: encryption, keyID: Encryption.keyID(of: secret.bytes),
                  schema: info.attributes["xdg:schema"], app: info.attributes[AppIdentity.attribute],
                  isPlainText: encryption == .unknown && Encryption.isPlainText(secret.bytes),
                  writtenBy: ItemWriter(info.attributes, label: info.label, account: account))
    }
}

extension Data {
    /// Zeroes the bytes in place; only the buffer this value holds alone (copies of it are not
    /// reached, and a shared buffer is copied first, as for any mutation).
    mutating func wipeInPlace() { resetBytes(in: startIndex..<endIndex) }
}
