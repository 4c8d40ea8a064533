import PingStorage

/// `apps` and `move`: the app identities that have items, and giving an old identity's items to an
/// app (``KeychainIdentities``), on the backend KeychainStorage uses with the same settings.
extension KeyringCommands {
    /// The identities with items of `service` or keys, each with its accounts and keys.
    static func apps(service: String, settings: KeyringSettings) async throws(ToolError) -> AppsReport {
        let inventory = try await settings.inventory(settings.configuration(service: service))
        let items: [KeychainIdentities.Item]
        do { items = try await inventory.identities() } catch { throw ToolError.from(error) }
        var identities: [String?: AppsReport.Identity] = [:]
        for item in items {
            var identity = identities[item.app] ?? AppsReport.Identity(app: item.app)
            if let account = item.account, !identity.accounts.contains(account) { identity.accounts.append(account) }
            if let keyID = item.keyID, !identity.keys.contains(keyID) { identity.keys.append(keyID) }
            identities[item.app] = identity
        }
        let current = settings.scopedApp
        let currentAccounts = Set(current.flatMap { identities[$0]?.accounts } ?? [])
        let sorted = identities.values.map { identity -> AppsReport.Identity in
            var identity = identity
            identity.accounts.sort()
            identity.sharedAccounts = identity.app == current || identity.app == nil ? [] : identity.accounts.filter(currentAccounts.contains)
            return identity
        }.sorted { ($0.app == current ? 0 : $0.app == nil ? 2 : 1, $0.app ?? "") < ($1.app == current ? 0 : $1.app == nil ? 2 : 1, $1.app ?? "") }
        return AppsReport(service: service, app: current, identities: sorted, backend: settings.backend(of: inventory))
    }

    /// Gives `old`'s items of `service` to the app the settings act as.
    static func move(from old: String, service: String, settings: KeyringSettings) async throws(ToolError) -> MoveReport {
        guard let app = settings.scopedApp else {
            throw ToolError.usage("move needs --app ID: the app to give \(old)'s items to (what it passes to AppIdentity.set, "
                + "e.g. com.example.App). Nothing was moved.", command: "move")
        }
        let inventory = try await settings.inventory(settings.configuration(service: service, app: app))
        do {
            let move = try await inventory.move(from: old)
            return MoveReport(from: old, app: app, service: service, move: move, backend: settings.backend(of: inventory))
        } catch {
            throw ToolError.from(error)
        }
    }
}

/// `apps`: each identity with items of the service, or keys.
struct AppsReport: Sendable, Equatable {
    struct Identity: Sendable, Equatable {
        /// The identity; nil for the items no app owns.
        var app: String?
        var accounts: [String] = []
        var keys: [String] = []
        /// The accounts it shares with the app the command acts as (`--app`).
        var sharedAccounts: [String] = []

        var json: JSONValue {
            .object([("app", .string(app)), ("accounts", .array(accounts.map { .string($0) })),
                     ("keys", .array(keys.map { .string($0) })), ("sharedAccounts", .array(sharedAccounts.map { .string($0) }))])
        }
    }

    var service: String
    /// The app the command acts as (`--app`, or the sandbox's id); nil when none.
    var app: String?
    var identities: [Identity]
    var backend: KeychainBackendChoice? = nil

    var json: JSONValue {
        .object([("service", .string(service)), ("app", .string(app)), ("identities", .array(identities.map(\.json))),
                 ("backend", backend?.json ?? .null)])
    }

    var human: String {
        guard !identities.isEmpty else { return "No items of service \(service) and no encryption keys.\n" }
        var text = "App identities with items of service \(service) or encryption keys:\n"
        for identity in identities {
            let accounts = identity.accounts.isEmpty ? "no account" : "\(identity.accounts.count) account(s): "
                + identity.accounts.joined(separator: ", ")
            let keys = identity.keys.isEmpty ? "" : "; \(identity.keys.count) key(s)"
            text += "  \(AppIdentity.humanText(identity.app))\(identity.app != nil && identity.app == app ? " (--app)" : ""): \(accounts)\(keys)\n"
            if !identity.sharedAccounts.isEmpty, let app {
                text += "    shares \(identity.sharedAccounts.joined(separator: ", ")) with \(app)\n"
            }
        }
        if identities.contains(where: { $0.app != nil && $0.app != app }) {
            text += "An app that moved, or that now calls AppIdentity.set, no longer sees its old identity's items: "
                + "'ping-keyring move --from OLD --app APP' gives them to it.\n"
        }
        return text
    }
}

/// `move`: what giving an identity's items to an app did.
struct MoveReport: Sendable, Equatable {
    var from: String
    var app: String
    var service: String
    var move: KeychainIdentities.Move
    var backend: KeychainBackendChoice? = nil

    var json: JSONValue {
        .object([("from", .string(from)), ("app", .string(app)), ("service", .string(service)),
                 ("moved", .array(move.moved.map { .string($0) })), ("skipped", .array(move.skipped.map { .string($0) })),
                 ("keysCopied", .array(move.keysCopied.map { .string($0) })), ("backend", backend?.json ?? .null)])
    }

    var human: String {
        var text = move.moved.isEmpty
            ? "No item of service \(service) moved from \(from) to \(app).\n"
            : "Moved \(move.moved.count) item(s) of service \(service) from \(from) to \(app): \(move.moved.joined(separator: ", ")).\n"
        if !move.skipped.isEmpty {
            text += "Left with \(from), as \(app) has its own item of the account: \(move.skipped.joined(separator: ", ")).\n"
        }
        if !move.keysCopied.isEmpty {
            text += "Copied \(move.keysCopied.count) encryption key(s) of \(from) to \(app) (\(from) keeps them too).\n"
        }
        return text
    }
}
