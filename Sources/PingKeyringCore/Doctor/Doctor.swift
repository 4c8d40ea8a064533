#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage
import PingStorageCrypto

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
        /// No default collection on `provider`: what an app will show the person, and what works
        /// where it cannot (the library's own advice for an app that may not prompt, as the doctor).
        static func defaultCollection(_ provider: ProviderInfo) -> String {
            let advice = KeyringProvider.adviceForAFirstKeyring(executable: provider.executable)
            return "no default keyring exists yet: " + advice.prefix(1).lowercased() + advice.dropFirst()
                + " Or pass --collection with one of the collections listed in the details."
        }
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
        /// `PINGSTORAGE_BACKEND` is not a backend, or the file keyring has no place.
        static let backendSetting = "set PINGSTORAGE_BACKEND to secret-service, file-keyring or automatic, or unset "
            + "it (or pass --backend); the file keyring needs XDG_DATA_HOME or HOME."
        static func damagedKey(_ keyID: String) -> String {
            "the key item was left unchanged: restore the keyring from a backup. Once no item needs this key, "
                + "delete it (`secret-tool clear xdg:schema \(KeyringCommands.keySchemaName) key-id \(keyID)`) so "
                + "that encrypted saves use a sound one."
        }
    }

    /// Runs the checks of the backend in use: first which it is and why, then the Secret
    /// Service's checks, or the file keyring's (``fileKeyringChecks(_:reason:problem:)``).
    static func run(_ environment: any DoctorEnvironment) async -> DoctorReport {
        var report = DoctorReport(checks: [], busAddress: environment.busAddress,
                                  collection: environment.collectionDescription,
                                  appIdentity: environment.appIdentity)
        let backend: KeychainBackendChoice
        var problem: ToolError?
        do {
            backend = try await environment.backend()
        } catch {
            guard let planned = error.planned else {
                report.checks = unusableBackendSetting(error.error)
                return report
            }
            // In a sandbox, the file keyring is what the app aims at; why it cannot have it is the
            // portal check's failure.
            (backend, problem) = (planned, error.error)
        }
        report.backend = backend
        let backendCheck = DoctorCheck.pass("backend", "backend", backend.summary)
        if backend.filePath != nil {
            report.collection = nil
            report.checks = await fileKeyringChecks(environment, reason: backend.reason, problem: problem)
        } else {
            report.checks = await secretServiceChecks(environment, provider: &report.provider)
        }
        // Second, after the session bus.
        report.checks.insert(backendCheck, at: 1)
        report.otherIdentities = await environment.otherIdentities()
        return report
    }

    /// The backend setting is wrong (`PINGSTORAGE_BACKEND`): nothing else can be checked.
    private static func unusableBackendSetting(_ error: ToolError) -> [DoctorCheck] {
        [.skip("sessionBus", "session bus", "needs a usable backend setting"),
         .fail("backend", "backend", error, fix: Fix.backendSetting)]
            + [("provider", "Secret Service"), ("collection", "collection"), ("unlocked", "unlocked"),
               ("transport", "transport"), ("probe", "write/read/delete"), ("encryptionKey", "encryption key")]
            .map { DoctorCheck.skip($0.0, $0.1, "needs a usable backend setting") }
    }

    /// The Secret Service's checks, in order (without the backend line); `provider` gets the
    /// provider when it answered.
    private static func secretServiceChecks(_ environment: any DoctorEnvironment,
                                            provider found: inout ProviderInfo?) async -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        let address = environment.busAddress ?? "DBUS_SESSION_BUS_ADDRESS is not set"

        // 1, 2: the bus and the provider (one call tells both apart).
        let provider: ProviderInfo
        do {
            provider = try await environment.provider()
            found = provider
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
                                    fix: providerFix(error)))
            }
            for (id, title) in [("collection", "collection"), ("unlocked", "unlocked"), ("transport", "transport"),
                                ("probe", "write/read/delete"), ("encryptionKey", "encryption key")] {
                checks.append(.skip(id, title, noBus ? "needs a session bus" : "needs a Secret Service provider"))
            }
            return checks
        }

        // 3, 4: the collection exists and is unlocked.
        do {
            let collection = try await environment.collection()
            let label = collection.label.isEmpty ? "" : " (\(collection.label))"
            checks.append(.pass("collection", "collection", "\(environment.collectionDescription) is \(collection.location)\(label)"))
            if collection.isLocked {
                checks.append(.fail("unlocked", "unlocked", ToolError(
                    kind: "locked", message: "\(collection.location) is locked"), fix: Fix.unlocked))
            } else {
                checks.append(.pass("unlocked", "unlocked", "\(collection.location) is unlocked"))
            }
        } catch {
            checks.append(.fail("collection", "collection", error,
                                fix: error.kind == "collectionNotFound"
                                    ? (environment.collectionDescription == KeychainConfiguration.Collection.default.description
                                        ? Fix.defaultCollection(provider) : Fix.collection)
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
            checks.append(await encryptionKeyCheck(environment))
            if let binding = await keyBindingCheck(environment) { checks.append(binding) }
        } else {
            checks.append(.skip("encryptionKey", "encryption key", "an earlier check failed"))
        }
        return checks
    }

    /// The encryption key line: the keys present (or none yet), each of the size of a key.
    /// The encryption-key check on what `environment` finds (Secret Service or file keyring).
    static func encryptionKeyCheck(_ environment: any DoctorEnvironment) async -> DoctorCheck {
        do {
            return encryptionKeyCheck(.success(try await environment.encryptionKeys()))
        } catch {
            return encryptionKeyCheck(.failure(error))
        }
    }

    static func encryptionKeyCheck(_ result: Result<[EncryptionKeyItem], ToolError>) -> DoctorCheck {
        let id = "encryptionKey", title = "encryption key"
        let items: [EncryptionKeyItem]
        switch result {
        case .failure(let error):
            var failure = ToolError(kind: error.kind, message: "cannot search the keyring for encryption keys: "
                                        + error.message, status: error.status)
            failure.recovery = error.recovery
            let fix = switch error.kind {
            case "locked", "promptDismissed": Fix.unlocked
            case "timedOut": Fix.providerHung
            default: Fix.seeMessage
            }
            return .fail(id, title, failure, fix: fix)
        case .success(let found):
            items = found
        }
        // Oldest first: SecuredKeyEncryptor encrypts an app's new data with its oldest key (then lowest id).
        let keys = items.filter { $0.keyID != nil }
            .sorted { ($0.created, $0.keyID!) < ($1.created, $1.keyID!) }
        let ignored = items.count - keys.count
        let ignoredNote = ignored == 0 ? "" : "; \(ignored) item\(ignored == 1 ? "" : "s") with the key schema but "
            + "no valid key-id attribute \(ignored == 1 ? "is" : "are") ignored"
        guard !keys.isEmpty else {
            return .pass(id, title, "no key yet: one is created on the first encrypted save" + ignoredNote)
        }
        let present = keysPresent(keys) + ignoredNote
        if let damaged = keys.first(where: { !$0.holdsAKey }) {
            let consequence = isItsAppsOldest(damaged, in: keys)
                ? "items encrypted with it cannot be decrypted, and encrypted saves fail while it is its app's oldest key"
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
