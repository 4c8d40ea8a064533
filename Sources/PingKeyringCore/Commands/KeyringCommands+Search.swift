#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

/// `search`, `lookup`, `lock` and `unlock`: secret-tool's habits, on the backend KeychainStorage
/// uses with the same settings. They read any tool's items and never change one; `lock` and
/// `unlock` change only the collection's lock state.
extension KeyringCommands {
    // MARK: search

    /// Every item of the collection (or the file keyring) whose attributes include `attributes`,
    /// whoever wrote it: metadata only, nothing unlocked: a locked item is shown as locked, with
    /// what the provider tells of it.
    /// - Throws: ``ToolError`` `notFound` when nothing matches; the keyring's errors.
    static func search(_ attributes: [String: String], settings: KeyringSettings) async throws(ToolError) -> SearchReport {
        let inventory = try await settings.inventory(settings.configuration())
        var report: SearchReport
        do {
            let found = try await inventory.items(matchingAny: [attributes], reading: .metadata)
            report = SearchReport(collectionPath: try await inventory.collection().location, attributes: attributes,
                                  items: found.map(SearchedItem.init))
        } catch {
            throw ToolError.from(error)
        }
        guard !report.items.isEmpty else {
            throw ToolError(kind: "notFound", message: "no item with \(SearchReport.describe(attributes)) in "
                                + "\(report.collectionPath).")
        }
        report.backend = settings.backend(of: inventory)
        return report
    }

    // MARK: lookup

    /// The secret of the first item whose attributes include `attributes`, as `secret-tool lookup`
    /// reads it: the collection's items are unlocked as KeychainStorage unlocks them (a prompt when
    /// allowed, within the deadline). Nothing is changed.
    /// - Throws: ``ToolError`` `notFound` when nothing matches; `locked` with `--no-prompt`; the keyring's errors.
    static func lookup(_ attributes: [String: String], settings: KeyringSettings) async throws(ToolError) -> LookupReport {
        let configuration = settings.configuration()
        let inventory = try await settings.inventory(configuration)
        var report: LookupReport?
        do {
            var found = try await inventory.items(matchingAny: [attributes], reading: .secrets)
            defer { for index in found.indices { found[index].secret?.bytes.wipeInPlace() } }
            if let first = found.first, let secret = first.secret {
                report = LookupReport(path: first.info.location, collectionPath: first.info.collection,
                                      contentType: secret.reportedContentType, value: secret.bytes)
            }
        } catch {
            throw ToolError.from(error)
        }
        guard var report else {
            let place = inventory.backend.filePath ?? configuration.collection.description
            throw ToolError(kind: "notFound", message: "no item with \(SearchReport.describe(attributes)) in \(place).")
        }
        report.backend = settings.backend(of: inventory)
        return report
    }

    // MARK: lock, unlock

    /// Locks (`lock` true) or unlocks the configured collection, through the provider's prompt when
    /// it shows one and prompts are allowed, and reads its state back.
    /// - Throws: ``ToolError`` `locked` when unlocking needs a prompt and prompts are off,
    ///   `promptDismissed`, `invalidArgument` on a file keyring (it has no lock); the keyring's errors.
    static func setLocked(_ lock: Bool, settings: KeyringSettings) async throws(ToolError) -> LockReport {
        let inventory = try await settings.inventory(settings.configuration())
        do {
            let before = try await inventory.collection()
            try await inventory.setLocked(lock)
            let after = try await inventory.collection()
            guard after.isLocked == lock else {
                throw ToolError(kind: "providerError",
                                message: "the provider left the collection \(after.location) "
                                    + "\(lock ? "unlocked" : "locked") though it accepted the request.")
            }
            return LockReport(collectionPath: after.location, label: after.label, lock: lock,
                              changed: before.isLocked != after.isLocked, backend: settings.backend(of: inventory))
        } catch {
            throw ToolError.from(error)
        }
    }
}
