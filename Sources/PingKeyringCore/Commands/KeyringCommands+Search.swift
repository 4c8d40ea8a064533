#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage
import SecretService

/// `search`, `lookup`, `lock` and `unlock`: secret-tool's habits, on the backend KeychainStorage
/// uses with the same settings. They read any tool's items and never change one; `lock` and
/// `unlock` change only the collection's lock state.
extension KeyringCommands {
    // MARK: search

    /// Every item of the collection (or the file keyring) whose attributes include `attributes`,
    /// whoever wrote it: metadata only. On the Secret Service nothing is unlocked: a locked item is
    /// shown as locked, with what the provider tells of it.
    /// - Throws: ``ToolError`` `notFound` when nothing matches; the keyring's errors.
    static func search(_ attributes: [String: String], settings: KeyringSettings) async throws(ToolError) -> SearchReport {
        let configuration = settings.configuration()
        let backend = try await settings.backendInUse(configuration)
        var report: SearchReport
        do {
            if let inventory = try await FileKeyringInventory.open(for: configuration) {
                var stored = try await inventory.items(matchingAny: [attributes])
                for index in stored.indices { stored[index].value.bytes.wipeInPlace() }
                report = SearchReport(collectionPath: inventory.path, attributes: attributes,
                                      items: stored.map { SearchedItem($0.info) })
            } else {
                report = try await search(attributes, in: configuration.collection, settings.client())
            }
        } catch {
            throw ToolError.from(error)
        }
        guard !report.items.isEmpty else {
            throw ToolError(kind: "notFound", message: "no item with \(SearchReport.describe(attributes)) in "
                                + "\(report.collectionPath).")
        }
        report.backend = backend
        return report
    }

    /// `search` on the Secret Service: one search that unlocks nothing, then each item's metadata.
    private static func search(_ attributes: [String: String], in collection: CollectionReference,
                               _ client: SecretServiceClient) async throws(SecretServiceError) -> SearchReport {
        let info = try await client.collectionInfo(collection)
        let found = try await client.searchItems(matching: attributes, in: collection)
        var items: [SearchedItem] = []
        for path in found.unlocked + found.locked {
            do throws(SecretServiceError) {
                items.append(SearchedItem(try await client.itemInfo(path)))
            } catch where error.code == .itemNotFound {
                continue  // deleted meanwhile
            } catch where error.code == .locked {
                items.append(SearchedItem(lockedAt: path))  // a provider that hides a locked item's metadata
            }
        }
        return SearchReport(collectionPath: info.path.rawValue, attributes: attributes, items: items)
    }

    // MARK: lookup

    /// The secret of the first item whose attributes include `attributes`, as `secret-tool lookup`
    /// reads it: the collection's items are unlocked by the client's policy (a prompt when allowed,
    /// within the deadline). Nothing is changed.
    /// - Throws: ``ToolError`` `notFound` when nothing matches; `locked` with `--no-prompt`; the keyring's errors.
    static func lookup(_ attributes: [String: String], settings: KeyringSettings) async throws(ToolError) -> LookupReport {
        let configuration = settings.configuration()
        let backend = try await settings.backendInUse(configuration)
        var report: LookupReport?
        let place: String
        do {
            if let inventory = try await FileKeyringInventory.open(for: configuration) {
                place = inventory.path
                var stored = try await inventory.items(matchingAny: [attributes])
                if let first = stored.first {
                    report = LookupReport(path: first.info.path.rawValue, collectionPath: inventory.path,
                                          contentType: first.value.contentType, value: first.value.bytes)
                }
                for index in stored.indices { stored[index].value.bytes.wipeInPlace() }
            } else {
                place = configuration.collection.description
                let client = settings.client()
                let found = try await client.findItems(matching: attributes, in: configuration.collection)
                if let path = found.all.first {
                    let secret = try await client.secret(of: path).value
                    report = LookupReport(path: path.rawValue, collectionPath: path.collection.rawValue,
                                          contentType: secret.contentType, value: secret.bytes)
                }
            }
        } catch {
            throw ToolError.from(error)
        }
        guard var report else {
            throw ToolError(kind: "notFound", message: "no item with \(SearchReport.describe(attributes)) in \(place).")
        }
        report.backend = backend
        return report
    }

    // MARK: lock, unlock

    /// Locks (`lock` true) or unlocks the configured collection, through the provider's prompt when
    /// it shows one and prompts are allowed, and reads its state back.
    /// - Throws: ``ToolError`` `locked` when unlocking needs a prompt and prompts are off,
    ///   `promptDismissed`, `invalidArgument` on a file keyring (it has no lock); the keyring's errors.
    static func setLocked(_ lock: Bool, settings: KeyringSettings) async throws(ToolError) -> LockReport {
        let configuration = settings.configuration()
        let backend = try await settings.backendInUse(configuration)
        if let path = backend.filePath {
            throw ToolError(kind: "invalidArgument",
                            message: "the file keyring \(path) has no lock of its own: it is opened with the app's "
                                + "secret from the Secret portal. Nothing was \(lock ? "locked" : "unlocked").")
        }
        let client = settings.client()
        do {
            let before = try await client.collectionInfo(configuration.collection)
            if before.isLocked != lock {
                if lock { try await client.lock([before.path]) } else { try await client.unlock([before.path]) }
            }
            let after = try await client.collectionInfo(configuration.collection)
            guard after.isLocked == lock else {
                throw ToolError(kind: "providerError",
                                message: "the provider left the collection \(after.path.rawValue) "
                                    + "\(lock ? "unlocked" : "locked") though it accepted the request.")
            }
            return LockReport(collectionPath: after.path.rawValue, label: after.label, lock: lock,
                              changed: before.isLocked != after.isLocked, backend: backend)
        } catch {
            throw ToolError.from(error)
        }
    }
}
