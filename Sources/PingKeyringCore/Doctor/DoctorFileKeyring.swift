#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

/// The doctor's checks when the items are in a sandbox's file keyring: the portal that unlocks
/// it, the file, copying the host's items in, a real write/read/delete and the encryption keys.
/// The Secret Service's checks do not apply and are reported as skipped.
extension Doctor {
    /// What to do when a file keyring check fails.
    enum FileFix {
        /// The portal has no Secret backend, or there is no portal.
        static let portal = "install xdg-desktop-portal with a Secret backend (e.g. gnome-keyring, which provides "
            + "org.freedesktop.impl.portal.Secret) and log in again, or let the app talk to the Secret Service "
            + "instead: grant --talk-name=org.freedesktop.secrets in its Flatpak manifest."
        /// The portal did not answer in time.
        static let portalHung = "check that xdg-desktop-portal and its Secret backend (e.g. gnome-keyring-daemon) "
            + "are running and not stopped, or raise --timeout."
        /// The portal's request was cancelled.
        static let portalRefused = "the portal's request for the app's secret was refused: allow it when the "
            + "desktop asks, then run the doctor again."
        /// The file cannot be decrypted or parsed.
        static let corruptFile = "the file was left as it is: restore it from a backup, or move it aside so that the "
            + "next save starts a new keyring (the items in it are then lost to the app)."
        /// Records of the file are damaged; the others are read.
        static let damagedRecords = "the damaged records were left as they are and every other item works; an account "
            + "whose item may be in one fails with corruptItem (its save and delete too). Restore the file from a backup "
            + "(libsecret keeps the previous version as default.keyring~), or remove a damaged record with libsecret's "
            + "`secret-tool clear` and its attributes, run inside the sandbox."
        /// The file cannot be read.
        static let unreadableFile = "check that the file and its directory are readable and writable by the app "
            + "(and that the disk is not full)."
        /// Reading the file did not end in time.
        static let slowFile = "the file could not be read in time: raise --timeout."
        /// Copying the host's items in failed.
        static let moveIn = "see the message; the host's items stay on the host, and the next process that uses "
            + "the keyring copies them in."
    }

    /// The checks that need the portal's secret, in order: skipped together when it is missing.
    private static let needingTheSecret = [
        ("fileKeyring", "file keyring"), ("probe", "write/read/delete"), ("encryptionKey", "encryption key"),
    ]
    /// The Secret Service's checks, which do not apply to the file keyring.
    static let secretServiceOnly = [
        ("provider", "Secret Service"), ("collection", "collection"), ("unlocked", "unlocked"), ("transport", "transport"),
    ]

    /// The checks of the file keyring (without the backend line): session bus, Secret portal,
    /// file keyring, copied in (when the host's items were looked at), write/read/delete,
    /// encryption key, then the Secret Service's checks, skipped.
    /// - Parameters:
    ///   - reason: why the file keyring is used, for the skipped checks.
    ///   - problem: why choosing the backend failed (the portal gave no secret), if it did: then
    ///     it is the portal check's failure, and the portal is not asked again.
    static func fileKeyringChecks(_ environment: any DoctorEnvironment, reason: String,
                                  problem: ToolError?) async -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        let address = environment.busAddress ?? "DBUS_SESSION_BUS_ADDRESS is not set"
        let portal: Result<Int, ToolError>
        if let problem {
            portal = .failure(problem)
        } else {
            do {
                portal = .success(try await environment.portalSecretSize())
            } catch {
                portal = .failure(error)
            }
        }
        let skips = secretServiceOnly.map { DoctorCheck.skip($0.0, $0.1, "the file keyring is used: \(reason)") }

        switch portal {
        case .failure(let error) where error.kind == "noSessionBus":
            checks.append(.fail("sessionBus", "session bus", ToolError(
                kind: error.kind, message: "\(address): \(error.message)", status: error.status), fix: Fix.bus))
            checks.append(.skip("portal", "Secret portal", "needs a session bus"))
            checks += needingTheSecret.map { .skip($0.0, $0.1, "needs a session bus") }
            return checks + skips
        case .failure(let error):
            checks.append(.pass("sessionBus", "session bus", address))
            checks.append(.fail("portal", "Secret portal", error, fix: portalFix(error)))
            checks += needingTheSecret.map { .skip($0.0, $0.1, "needs the app's secret from the Secret portal") }
            return checks + skips
        case .success(let size):
            checks.append(.pass("sessionBus", "session bus", address))
            checks.append(.pass("portal", "Secret portal", "gave the app's secret (\(size) bytes)"))
        }

        let file: FileKeyringState
        do {
            file = try await environment.fileKeyring()
            // Damaged records fail the check, but the file is read: the checks after it go on.
            var check = file.damaged.isEmpty
                ? DoctorCheck.pass("fileKeyring", "file keyring", file.description)
                : DoctorCheck.fail("fileKeyring", "file keyring", ToolError(kind: "corruptItem", message: file.description),
                                   fix: FileFix.damagedRecords)
            check.damagedRecords = file.damaged
            checks.append(check)
        } catch {
            checks.append(.fail("fileKeyring", "file keyring", error,
                                fix: error.status == .corrupt ? FileFix.corruptFile
                                    : error.kind == "timedOut" ? FileFix.slowFile : FileFix.unreadableFile))
            checks.append(.skip("probe", "write/read/delete", "needs a readable file keyring"))
            checks.append(.skip("encryptionKey", "encryption key", "needs a readable file keyring"))
            return checks + skips
        }
        if let moveIn = await environment.movedIn() {
            if let error = moveIn.error {
                var failure = ToolError(kind: error.kind, message: "the host's items were not copied in: \(error.message)",
                                        status: error.status, detail: error.detail)
                failure.recovery = error.recovery
                checks.append(.fail("movedIn", "copied in", failure, fix: FileFix.moveIn))
            } else {
                checks.append(.pass("movedIn", "copied in", moveIn.description))
            }
        }
        do {
            checks.append(.pass("probe", "write/read/delete", try await environment.probe()))
        } catch {
            checks.append(.fail("probe", "write/read/delete", error,
                                fix: error.kind == "probeMismatch" ? Fix.probeMismatch : Fix.seeMessage))
        }
        checks.append(await encryptionKeyCheck(environment))
        if let binding = await keyBindingCheck(environment) { checks.append(binding) }
        return checks + skips
    }

    /// The fix for a portal that gave no secret.
    static func portalFix(_ error: ToolError) -> String {
        switch error.kind {
        case "timedOut": FileFix.portalHung
        case "promptDismissed": FileFix.portalRefused
        case "noSecretService": FileFix.portal
        default: Fix.seeMessage
        }
    }
}

/// The file keyring as the doctor sees it: where, whether it exists, how many items it holds
/// (decrypted with the portal's secret) and which records are damaged.
struct FileKeyringState: Sendable, Equatable {
    /// The keyring file.
    var path: String
    /// False until the first save creates it.
    var exists: Bool
    /// Every readable item of the file, PingStorage's and others'.
    var itemCount: Int
    /// The records that cannot be read (FileKeyring's `FileKeyringDamagedRecord`), in file order.
    var damaged: [DamagedRecordFinding] = []

    /// `PATH exists, with 3 items`, `PATH is not created yet: created on the first save`, or with
    /// damaged records `PATH exists, with 2 readable items and 1 damaged record: record 2 (…)`.
    var description: String {
        guard exists else { return "\(path) is not created yet: created on the first save" }
        guard !damaged.isEmpty else { return "\(path) exists, with \(itemCount) item\(itemCount == 1 ? "" : "s")" }
        return "\(path) exists, with \(itemCount) readable item\(itemCount == 1 ? "" : "s") and \(damaged.count) damaged "
            + "record\(damaged.count == 1 ? "" : "s"): " + damaged.map(\.description).joined(separator: "; ")
    }
}

/// A record of the file keyring that cannot be read, as the doctor names it: its position, what
/// is wrong and its hashed attributes' names, never a secret or an attribute value.
struct DamagedRecordFinding: Sendable, Equatable {
    /// Its position among the file's records, from 1.
    var number: Int
    /// `failedMAC`, `invalidItem` or `inconsistentAttributes`.
    var damage: String
    /// What is wrong, in words.
    var problem: String
    /// The names of its hashed attributes, in file order.
    var hashedAttributeNames: [String]

    /// `record 2 (it fails its MAC check; hashed attributes: account, service)`.
    var description: String {
        "record \(number) (\(problem); "
            + (hashedAttributeNames.isEmpty ? "no hashed attributes)" : "hashed attributes: \(hashedAttributeNames.joined(separator: ", ")))")
    }

    /// `{"record", "damage", "problem", "hashedAttributes"}`.
    var json: JSONValue {
        .object([
            ("record", .int(number)),
            ("damage", .string(damage)),
            ("problem", .string(problem)),
            ("hashedAttributes", .array(hashedAttributeNames.map(JSONValue.string))),
        ])
    }
}

/// What copying the host's items into the file keyring did in this process (PingStorage's
/// `HostMigration`), as the doctor shows it.
struct MoveInFinding: Sendable, Equatable {
    /// What happened, in words.
    var description: String
    /// Why it was not done, when it failed.
    var error: ToolError?
}
