#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

/// `list`: the items PingStorage keeps, on the backend KeychainStorage uses with the same settings,
/// each measured and classified, never printed.
extension KeyringCommands {
    /// The items PingStorage keeps (with `service`: the items of that service) where the
    /// configured backend keeps them: those KeychainStorage can reach (a `service` attribute and an
    /// ``ItemAccount``), each secret read to measure and classify it, then wiped.
    /// - Throws: ``ToolError`` with the library's kinds (`noSecretService`, `locked`, …).
    static func list(service: String?, settings: KeyringSettings) async throws(ToolError) -> ListReport {
        let inventory = try await settings.inventory(settings.configuration())
        let queries = service.map { [["service": $0]] }
            ?? [["xdg:schema": schemaName], ["service": KeychainConfiguration.defaultService]]
        var report: ListReport
        do {
            // Searched and unlocked as KeychainStorage does (the configuration's prompt policy).
            var stored = try await inventory.items(matchingAny: queries, reading: .secrets)
            let collection = try await inventory.collection().location
            var items: [ListedItem] = []
            for index in stored.indices {
                // Wiped where it lies in the array (a copy would be wiped instead of the bytes).
                defer { stored[index].secret?.bytes.wipeInPlace() }
                let info = stored[index].info
                guard let secret = stored[index].secret, let account = ItemAccount(info.attributes),
                      let itemService = info.attributes["service"] else { continue }
                items.append(ListedItem(info, account: account, service: itemService, secret: secret))
            }
            items.sort { ($0.service, $0.account, $0.path) < ($1.service, $1.account, $1.path) }
            report = ListReport(collectionPath: collection, service: service, items: items)
        } catch {
            throw ToolError.from(error)
        }
        if let app = settings.scopedApp {
            // A filter shows exactly that app's items; the items with no app, which it reads
            // too, are listed without --app.
            report.items = report.items.filter { $0.app == app }
        }
        report.app = settings.scopedApp
        report.backend = settings.backend(of: inventory)
        return report
    }
}

extension ListedItem {
    /// The row of an item: its metadata, and of its secret only the size, content type and
    /// whether (and with which key) it is encrypted.
    init(_ info: KeychainItemInfo, account: ItemAccount, service: String, secret: StoredSecret) {
        let encryption = Encryption.classify(secret.bytes)
        self.init(account: account.name, accountFromUsername: account.isFromUsername, service: service,
                  label: info.label, path: info.location,
                  collectionPath: info.collection, created: info.created, modified: info.modified,
                  size: secret.bytes.count, contentType: secret.reportedContentType,
                  encryption: encryption, keyID: Encryption.keyID(of: secret.bytes),
                  schema: info.attributes["xdg:schema"], app: info.attributes[AppIdentity.attribute],
                  isPlainText: encryption == .unknown && Encryption.isPlainText(secret.bytes),
                  writtenBy: ItemWriter(info.attributes, label: info.label, account: account))
    }
}

extension StoredSecret {
    /// The content type reports show: the store's, else `application/octet-stream`.
    var reportedContentType: String { contentType ?? "application/octet-stream" }
}

extension Data {
    /// Zeroes the bytes in place; only the buffer this value holds alone (copies of it are not
    /// reached, and a shared buffer is copied first, as for any mutation).
    mutating func wipeInPlace() { resetBytes(in: startIndex..<endIndex) }
}
