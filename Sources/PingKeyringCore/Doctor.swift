import Foundation
import PingStorage
import PingStorageCrypto
import SecretService

/// What the doctor asks of the keyring. The live one talks to the Secret Service; unit tests give
/// a scripted one, so the order of checks, skips and exit statuses are tested without D-Bus.
protocol DoctorEnvironment: Sendable {
    /// The session bus address the client will use, as shown to the user; nil when there is none.
    var busAddress: String? { get }
    /// The collection the checks use, as shown to the user (`alias 'default'`).
    var collectionDescription: String { get }
    /// Who provides the Secret Service.
    /// - Throws: ``ToolError`` (`noSessionBus`, `noSecretService`, `timedOut`, …).
    func provider() async throws(ToolError) -> ProviderInfo
    /// The configured collection's path, label and lock state.
    /// - Throws: ``ToolError`` (`collectionNotFound`, …).
    func collection() async throws(ToolError) -> SecretCollectionInfo
    /// Writes, reads back and deletes an item under probe attributes, cleaning up whatever
    /// happens; returns a description of what was done.
    /// - Throws: ``ToolError`` describing the step that failed.
    func probe() async throws(ToolError) -> String
    /// The encryption key items (`xdg:schema` = ``KeyringCommands/keySchemaName``) in the
    /// collection, each read only to measure it. Never creates a key, never unlocks, never prompts.
    /// - Throws: ``ToolError`` (`locked` when key items are locked, `timedOut`, …).
    func encryptionKeys() async throws(ToolError) -> [EncryptionKeyItem]
}

/// A key item of ``SecuredKeyEncryptor``, as the doctor sees it: never the key itself.
struct EncryptionKeyItem: Sendable, Equatable {
    var path: String
    /// The `key-id` attribute when it is 32 hex digits (lowercased); nil otherwise, and then
    /// SecuredKeyEncryptor ignores the item.
    var keyID: String?
    /// The size of the secret; a sound key has ``SymmetricKey/byteCount`` (32).
    var byteCount: Int
    var created: Date
}

/// One line of the doctor's report.
struct DoctorCheck: Sendable, Equatable {
    enum Status: String, Sendable { case pass, fail, skip }

    /// Stable identifier: `sessionBus`, `provider`, `collection`, `unlocked`, `transport`, `probe`,
    /// `encryptionKey`.
    var id: String
    var title: String
    var status: Status
    /// What was found (for a failure: what went wrong, with the library's message).
    var detail: String
    /// For a failure: the library's developer detail (object paths, D-Bus names), if any.
    var technicalDetail: String?
    /// What to do; only for failures.
    var fix: String?
    /// The error kind behind a failure (``KeychainError/kind`` and the like).
    var errorKind: String?
    /// The exit status a failure maps to.
    var exitStatus: ExitCode?

    static func pass(_ id: String, _ title: String, _ detail: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, status: .pass, detail: detail)
    }

    static func skip(_ id: String, _ title: String, _ detail: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, status: .skip, detail: "skipped: \(detail)")
    }

    static func fail(_ id: String, _ title: String, _ error: ToolError, fix: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, status: .fail, detail: error.message, technicalDetail: error.detail, fix: fix,
                    errorKind: error.kind, exitStatus: error.status)
    }

    var json: JSONValue {
        .object([
            ("id", .string(id)),
            ("title", .string(title)),
            ("status", .string(status.rawValue)),
            ("detail", .string(detail)),
            ("technicalDetail", .string(technicalDetail)),
            ("fix", .string(fix)),
            ("errorKind", .string(errorKind)),
        ])
    }
}

/// The doctor's findings.
struct DoctorReport: Sendable, Equatable {
    var checks: [DoctorCheck]
    var busAddress: String?
    var collection: String
    var provider: ProviderInfo?

    /// True when no check failed (skips are fine).
    var ok: Bool { !checks.contains { $0.status == .fail } }

    /// 0 when ok; else the status of the first failed check.
    var exitStatus: ExitCode {
        checks.first { $0.status == .fail }.map { $0.exitStatus ?? .other } ?? .ok
    }

    var json: JSONValue {
        .object([
            ("ok", .bool(ok)),
            ("exitCode", .int(Int(exitStatus.rawValue))),
            ("busAddress", .string(busAddress)),
            ("collection", .string(collection)),
            ("provider", provider?.json ?? .null),
            ("checks", .array(checks.map(\.json))),
        ])
    }

    var human: String {
        let width = checks.map(\.title.count).max() ?? 0
        var text = "ping-keyring doctor (collection: \(collection))\n"
        for check in checks {
            let mark = switch check.status {
            case .pass: "ok  "
            case .fail: "FAIL"
            case .skip: "skip"
            }
            text += "\(mark)  \(check.title.padding(toLength: width, withPad: " ", startingAt: 0))  \(check.detail)\n"
            if let details = check.technicalDetail {
                text += String(repeating: " ", count: width + 8) + "details: \(details)\n"
            }
            if let fix = check.fix {
                text += String(repeating: " ", count: width + 8) + "fix: \(fix)\n"
            }
        }
        let failures = checks.filter { $0.status == .fail }.count
        text += failures == 0
            ? "All checks passed.\n"
            : "\(failures) check\(failures == 1 ? "" : "s") failed (exit status \(exitStatus.rawValue)).\n"
        return text
    }
}

/// `ping-keyring doctor`: the checks, in order, each with a fix when it fails.
enum Doctor {
    /// What to do when a check fails.
    enum Fix {
        static let bus = "run inside a desktop session, or export DBUS_SESSION_BUS_ADDRESS (usually "
            + "unix:path=$XDG_RUNTIME_DIR/bus), or start one with `dbus-run-session -- COMMAND`."
        static let provider = "start a Secret Service provider: GNOME Keyring (`gnome-keyring-daemon --start "
            + "--components=secrets`), KeePassXC with Tools > Settings > Secret Service Integration on, or KWallet."
        static let providerHung = "check that the provider is running and not stopped "
            + "(`ps -C gnome-keyring-daemon -o pid,stat`), or raise --timeout."
        static let defaultCollection = "set a default collection in your keyring manager (Passwords and Keys on "
            + "GNOME: set a keyring as default; KeePassXC: expose a group under Secret Service Integration), or pass "
            + "--collection with one of the collections listed in the details."
        static let collection = "pass --collection with one of the collections listed in the details, or create "
            + "the alias in your keyring manager."
        static let unlocked = "unlock the keyring: log in to the desktop, or unlock it in your keyring manager "
            + "(Passwords and Keys on GNOME, KWallet Manager on KDE, or the KeePassXC database). Apps that allow "
            + "prompts ask for the password instead."
        static let transport = "the provider only offers 'plain' sessions, so secrets would cross the bus "
            + "unencrypted and PingStorage refuses them: use GNOME Keyring or KeePassXC, or for KWallet install "
            + "libqca-qt5-2-plugins."
        static let probeMismatch = "the provider returned other bytes than were written; check its logs or try "
            + "another provider."
        static let seeMessage = "see the message; apps fail the same way."
        static func damagedKey(_ keyID: String) -> String {
            "the key item was left unchanged: restore the keyring from a backup. Once no item needs this key, "
                + "delete it (`secret-tool clear xdg:schema \(KeyringCommands.keySchemaName) key-id \(keyID)`) so "
                + "that encrypted saves use a sound one."
        }
    }

    static func run(_ environment: any DoctorEnvironment) async -> DoctorReport {
        var checks: [DoctorCheck] = []
        var report = DoctorReport(checks: [], busAddress: environment.busAddress,
                                  collection: environment.collectionDescription)
        let address = environment.busAddress ?? "DBUS_SESSION_BUS_ADDRESS is not set"

        // 1, 2: the bus and the provider (one call tells both apart).
        let provider: ProviderInfo
        do {
            provider = try await environment.provider()
            report.provider = provider
            checks.append(.pass("sessionBus", "session bus", address))
            checks.append(.pass("provider", "Secret Service", provider.description))
        } catch {
            let noBus = error.kind == "noSessionBus"
            if noBus {
                checks.append(.fail("sessionBus", "session bus", ToolError(
                    kind: error.kind, message: "\(address): \(error.message)", status: error.status), fix: Fix.bus))
                checks.append(.skip("provider", "Secret Service", "needs a session bus"))
            } else {
                checks.append(.pass("sessionBus", "session bus", address))
                checks.append(.fail("provider", "Secret Service", error,
                                    fix: error.kind == "timedOut" ? Fix.providerHung : Fix.provider))
            }
            for (id, title) in [("collection", "collection"), ("unlocked", "unlocked"), ("transport", "transport"),
                                ("probe", "write/read/delete"), ("encryptionKey", "encryption key")] {
                checks.append(.skip(id, title, noBus ? "needs a session bus" : "needs a Secret Service provider"))
            }
            report.checks = checks
            return report
        }

        // 3, 4: the collection exists and is unlocked.
        do {
            let collection = try await environment.collection()
            let label = collection.label.isEmpty ? "" : " (\(collection.label))"
            checks.append(.pass("collection", "collection", "\(environment.collectionDescription) is \(collection.path)\(label)"))
            if collection.isLocked {
                checks.append(.fail("unlocked", "unlocked", ToolError(
                    kind: "locked", message: "\(collection.path) is locked"), fix: Fix.unlocked))
            } else {
                checks.append(.pass("unlocked", "unlocked", "\(collection.path) is unlocked"))
            }
        } catch {
            checks.append(.fail("collection", "collection", error,
                                fix: error.kind == "collectionNotFound"
                                    ? (environment.collectionDescription == CollectionReference.default.description
                                        ? Fix.defaultCollection : Fix.collection)
                                    : error.kind == "timedOut" ? Fix.providerHung : Fix.seeMessage))
            checks.append(.skip("unlocked", "unlocked", "needs the collection"))
        }

        // 5: the transport is encrypted.
        if provider.transport == "plain" {
            checks.append(.fail("transport", "transport", ToolError(
                kind: "insecureTransport", message: "plain: secrets would cross the bus unencrypted"), fix: Fix.transport))
        } else {
            checks.append(.pass("transport", "transport", "encrypted (\(provider.transport))"))
        }

        // 6: a real write, read and delete, only when everything it needs passed.
        let keyringUsable = !checks.contains { $0.status == .fail }
        if !keyringUsable {
            checks.append(.skip("probe", "write/read/delete", "an earlier check failed"))
        } else {
            do {
                checks.append(.pass("probe", "write/read/delete", try await environment.probe()))
            } catch {
                checks.append(.fail("probe", "write/read/delete", error,
                                    fix: error.kind == "probeMismatch"
                                        ? Fix.probeMismatch : Fix.seeMessage))
            }
        }

        // 7: the encryption key: a search (no unlock, no prompt) and a read of each key item,
        // when the collection is there, unlocked and the transport encrypted (the probe need not pass).
        if keyringUsable {
            let keys: Result<[EncryptionKeyItem], ToolError>
            do {
                keys = .success(try await environment.encryptionKeys())
            } catch {
                keys = .failure(error)
            }
            checks.append(encryptionKeyCheck(keys))
        } else {
            checks.append(.skip("encryptionKey", "encryption key", "an earlier check failed"))
        }
        report.checks = checks
        return report
    }

    /// The encryption key line: the keys present (or none yet), each of the size of a key.
    static func encryptionKeyCheck(_ result: Result<[EncryptionKeyItem], ToolError>) -> DoctorCheck {
        let id = "encryptionKey", title = "encryption key"
        let items: [EncryptionKeyItem]
        switch result {
        case .failure(let error):
            let failure = ToolError(kind: error.kind, message: "cannot search the keyring for encryption keys: "
                                        + error.message, status: error.status)
            let fix = switch error.kind {
            case "locked", "promptDismissed": Fix.unlocked
            case "timedOut": Fix.providerHung
            default: Fix.seeMessage
            }
            return .fail(id, title, failure, fix: fix)
        case .success(let found):
            items = found
        }
        // Oldest first: SecuredKeyEncryptor encrypts new data with the oldest key (then lowest id).
        let keys = items.filter { $0.keyID != nil }
            .sorted { ($0.created, $0.keyID!) < ($1.created, $1.keyID!) }
        let ignored = items.count - keys.count
        let ignoredNote = ignored == 0 ? "" : "; \(ignored) item\(ignored == 1 ? "" : "s") with the key schema but "
            + "no valid key-id attribute \(ignored == 1 ? "is" : "are") ignored"
        guard let oldest = keys.first else {
            return .pass(id, title, "no key yet: one is created on the first encrypted save" + ignoredNote)
        }
        let ids = keys.map { $0.keyID! }
        var present = keys.count == 1
            ? "1 key present (id \(ids[0]))"
            : "\(keys.count) keys present (ids \(ids.joined(separator: ", ")); new data uses the oldest, \(ids[0]))"
        present += ignoredNote
        if let damaged = keys.first(where: { $0.byteCount != SymmetricKey.byteCount }) {
            let consequence = damaged.keyID == oldest.keyID
                ? "items encrypted with it cannot be decrypted, and encrypted saves fail while it is the oldest key"
                : "items encrypted with it cannot be decrypted"
            return .fail(id, title, ToolError(
                kind: "unsupportedFormat",
                message: "key \(damaged.keyID!) (\(damaged.path)) holds \(damaged.byteCount) bytes, not "
                    + "\(SymmetricKey.byteCount): \(consequence). In all: \(present)"),
                fix: Fix.damagedKey(damaged.keyID!))
        }
        return .pass(id, title, present)
    }
}

/// The doctor against the real Secret Service, with the command line's settings.
struct LiveDoctorEnvironment: DoctorEnvironment {
    let settings: KeyringSettings
    let environment: [String: String]

    var busAddress: String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        // GDBus falls back to $XDG_RUNTIME_DIR/bus when the variable is not set.
        if let runtime = environment["XDG_RUNTIME_DIR"], FileManager.default.fileExists(atPath: "\(runtime)/bus") {
            return "unix:path=\(runtime)/bus (DBUS_SESSION_BUS_ADDRESS is not set)"
        }
        return nil
    }

    var collectionDescription: String { settings.configuration().collection.description }

    func provider() async throws(ToolError) -> ProviderInfo {
        do {
            let provider = try await SecretServiceClient(options: settings.clientOptions()).provider()
            return ProviderInfo(name: provider.displayName, executable: provider.executable, processID: provider.processID,
                                uniqueName: provider.uniqueName, transport: provider.transportAlgorithm)
        } catch {
            throw ToolError.from(error)
        }
    }

    func collection() async throws(ToolError) -> SecretCollectionInfo {
        // Plain transport is reported by its own check; reading a collection sends no secret.
        let client = SecretServiceClient(options: settings.clientOptions(allowsPlainTransport: true))
        do {
            return try await client.collectionInfo(settings.configuration().collection)
        } catch {
            throw ToolError.from(error)
        }
    }

    func probe() async throws(ToolError) -> String {
        let account = "probe-\(UUID().uuidString)"
        let storage = KeychainStorage<String>(
            account: account, configuration: settings.configuration(service: CommandTable.probeService))
        let written = "ping-keyring doctor probe \(UUID().uuidString)"
        do {
            try await storage.save(item: written)
            let read = try await storage.get()
            guard read == written else {
                throw ToolError(kind: "probeMismatch",
                                message: read == nil ? "the item just written was not found"
                                    : "the item just written reads back different bytes",
                                status: .other)
            }
            try await storage.delete()
            guard try await storage.get() == nil else {
                throw ToolError(kind: "probeMismatch", message: "the item was still there after delete", status: .other)
            }
            return "wrote, read back and deleted an item (service \(CommandTable.probeService))"
        } catch {
            var failure = ToolError.from(error)
            do {
                try await storage.delete()
            } catch {
                failure.message += " The probe item may be left behind; remove it with "
                    + "`secret-tool clear service \(CommandTable.probeService) account \(account)`."
            }
            throw failure
        }
    }

    /// A key item as the doctor shows it (the size of its secret, never the secret); nil when it
    /// was deleted meanwhile.
    private static func keyItem(_ path: ItemPath, _ client: SecretServiceClient) async throws(SecretServiceError) -> EncryptionKeyItem? {
        do {
            let info = try await client.itemInfo(path)
            var secret = try await client.secret(of: path).value
            let byteCount = secret.bytes.count
            secret.bytes.resetBytes(in: secret.bytes.startIndex..<secret.bytes.endIndex)
            let keyID = info.attributes["key-id"].flatMap(KeyID.init(hexString:))?.hexString
            return EncryptionKeyItem(path: path.rawValue, keyID: keyID, byteCount: byteCount, created: info.created)
        } catch where error.code == .itemNotFound {
            return nil
        }
    }

    func encryptionKeys() async throws(ToolError) -> [EncryptionKeyItem] {
        let configuration = settings.configuration()
        // Never a prompt, never an unlock: a locked key item is reported, not opened.
        let client = SecretServiceClient(options: .init(timeout: configuration.timeout, allowsPrompts: false))
        do {
            let found = try await client.searchItems(matching: ["xdg:schema": KeyringCommands.keySchemaName],
                                                     in: configuration.collection)
            guard found.locked.isEmpty else {
                throw ToolError(
                    kind: "locked",
                    message: "\(found.locked.count) encryption key item\(found.locked.count == 1 ? " is" : "s are") "
                        + "locked (\(found.locked.map(\.rawValue).joined(separator: ", ")))")
            }
            var keys: [EncryptionKeyItem] = []
            for path in found.unlocked {
                if let key = try await Self.keyItem(path, client) { keys.append(key) }
            }
            return keys
        } catch {
            throw ToolError.from(error)
        }
    }
}
