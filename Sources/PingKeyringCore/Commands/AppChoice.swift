import PingStorage

/// Which app `get`, `save` and `delete` act as when none is chosen: outside a sandbox without
/// `--app`. ping-keyring's own identity would be its executable's path, which no app's items
/// carry, so it acts as the one app that has items of the account: `ping-keyring get -a A` stays
/// useful, and nothing is written or deleted under another app's name by surprise.
enum AppChoice {
    /// What the command will do as the app chosen.
    enum Purpose: Sendable, Equatable {
        case read, save, delete

        /// What the error message says did not happen.
        var nothingDone: String {
            switch self {
            case .read: "Nothing was read."
            case .save: "Nothing was saved."
            case .delete: "Nothing was deleted."
            }
        }
    }

    /// The app to act as on `account`: ``KeyringSettings/scopedApp`` when there is one, else
    /// the one app whose items the account has (``choose(among:account:service:purpose:)``).
    /// - Returns: nil when no app has an item of the account: reads and deletes then reach the
    ///   items with no app only, as every app's would.
    /// - Throws: ``ToolError`` `usage` when `--app` must choose; the keyring's errors.
    static func app(for account: String, service: String, purpose: Purpose, settings: KeyringSettings,
                    in inventory: KeyringInventory) async throws(ToolError) -> String? {
        if let app = settings.scopedApp { return app }
        let owners = try await owners(of: account, service: service, in: inventory)
        return try choose(among: owners, account: account, service: service, purpose: purpose)
    }

    /// The rule, on the apps (`pingstorage-app` values) of the account's items: one app is
    /// acted as; none is fine for reading and deleting (only items with no app are reached), but
    /// a save would make the item some app's, so it needs `--app`; several need `--app`.
    static func choose(among owners: Set<String>, account: String, service: String,
                       purpose: Purpose) throws(ToolError) -> String? {
        if owners.count == 1 { return owners.first }
        let subject = "account '\(account)' (service \(service))"
        if owners.isEmpty {
            guard purpose == .save else { return nil }
            throw ToolError.usage(
                "no app has an item of \(subject), so ping-keyring cannot tell whose it is: give --app ID with the "
                    + "app's identity (what it passes to AppIdentity.set, e.g. com.example.App). \(purpose.nothingDone)",
                command: "save")
        }
        let names = owners.sorted().joined(separator: ", ")
        throw ToolError.usage(
            "\(subject) has items of \(owners.count) apps (\(names)): choose one with --app ID; 'ping-keyring list' "
                + "shows each item's app. \(purpose.nothingDone)",
            command: purpose == .read ? "get" : purpose == .save ? "save" : "delete")
    }

    /// The apps of the items with `service` and `account` (items found only by `username`, Python
    /// keyring's and go-keyring's, have no app), in `inventory`. Never unlocks, prompts or reads a
    /// secret.
    static func owners(of account: String, service: String, in inventory: KeyringInventory) async throws(ToolError) -> Set<String> {
        do {
            let items = try await inventory.items(matchingAny: [["service": service, "account": account]], reading: .metadata)
            return Set(items.compactMap { $0.info.attributes[AppIdentity.attribute] })
        } catch {
            throw ToolError.from(error)
        }
    }
}

extension AppIdentity {
    /// How human output names an item's app: the id, or for nil what such an item is.
    static func humanText(_ app: String?) -> String {
        app ?? "none (another tool's, or PingStorage 1.x's: every app reads it)"
    }
}
