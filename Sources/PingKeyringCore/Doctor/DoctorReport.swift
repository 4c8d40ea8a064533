#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage
import PingStorageCrypto

/// One line of the doctor's report.
struct DoctorCheck: Sendable, Equatable {
    enum Status: String, Sendable { case pass, fail, skip }

    /// Stable identifier: `sessionBus`, `backend`, `provider`, `collection`, `unlocked`,
    /// `transport`, `portal`, `fileKeyring`, `movedIn`, `probe`, `encryptionKey`.
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
    /// The file keyring check's damaged records, once the file was read (then in its JSON as
    /// `damagedRecords`, empty for a sound file); nil for every other check.
    var damagedRecords: [DamagedRecordFinding]? = nil

    static func pass(_ id: String, _ title: String, _ detail: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, status: .pass, detail: detail)
    }

    static func skip(_ id: String, _ title: String, _ detail: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, status: .skip, detail: "skipped: \(detail)")
    }

    /// A failed check: what happened, and one piece of advice: `fix`, or the library's own advice
    /// where the doctor has none of its own (``Doctor/Fix/seeMessage``), never both.
    static func fail(_ id: String, _ title: String, _ error: ToolError, fix: String) -> DoctorCheck {
        DoctorCheck(id: id, title: title, status: .fail, detail: error.happened, technicalDetail: error.detail,
                    fix: fix == Doctor.Fix.seeMessage ? error.recovery ?? fix : fix,
                    errorKind: error.kind, exitStatus: error.status)
    }

    var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", .string(id)),
            ("title", .string(title)),
            ("status", .string(status.rawValue)),
            ("detail", .string(detail)),
            ("technicalDetail", .string(technicalDetail)),
            ("fix", .string(fix)),
            ("errorKind", .string(errorKind)),
        ]
        if let damagedRecords { members.append(("damagedRecords", .array(damagedRecords.map(\.json)))) }
        return .object(members)
    }
}

/// The doctor's findings.
struct DoctorReport: Sendable, Equatable {
    var checks: [DoctorCheck]
    var busAddress: String?
    /// The collection the Secret Service checks use; nil when the file keyring is used.
    var collection: String?
    /// The identity a program run here gets without `AppIdentity.set`, or `--app`'s (not a check:
    /// it never fails, but the executable fallback is warned about).
    var appIdentity: AppIdentity? = nil
    /// Other identities' items, when the app has none (a warning after the identity).
    var otherIdentities: OtherIdentitiesFinding? = nil
    var provider: ProviderInfo?
    /// The backend in use and why (in a sandbox whose portal gave no secret, the file keyring
    /// aimed at); nil when the backend setting is unusable.
    var backend: KeychainBackendChoice?

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
            ("backend", backend?.json ?? .null),
            ("collection", .string(collection)),
            ("appIdentity", appIdentity.map(Self.json) ?? .null),
            ("otherIdentities", otherIdentities?.json ?? .null),
            ("provider", provider?.json ?? .null),
            ("checks", .array(checks.map(\.json))),
        ])
    }

    /// `{"id", "source", "detail", "warning"}`; `id` is null for the executable fallback, whose
    /// id is each program's own path.
    private static func json(_ identity: AppIdentity) -> JSONValue {
        let fallback = identity.source == .executable
        return .object([
            ("id", .string(fallback ? nil : identity.id)),
            ("source", .string(identity.source.rawValue)),
            ("detail", .string(appDetail(identity))),
            ("warning", .string(fallback ? fallbackWarning : nil)),
        ])
    }

    /// What the identity line says.
    static func appDetail(_ identity: AppIdentity) -> String {
        switch identity.source {
        case .executable:
            "each program's own executable path (this one's: \(identity.id)): not in a Flatpak or snap "
                + "(no /.flatpak-info, not run from a snap); ping-keyring without --app sees every app's items"
        case .flatpak: "\(identity.id) (the Flatpak's id; ping-keyring acts as it without --app)"
        case .snap: "\(identity.id) (the snap's name; ping-keyring acts as it without --app)"
        case .setByApp: "\(identity.id) (set by the app)"
        }
    }

    /// Why the executable fallback deserves a warning, and what to do.
    static let fallbackWarning = "a program that does not call AppIdentity.set keeps its items under its executable's "
        + "path: moving, renaming or reinstalling it elsewhere loses them, and another build is another app. Call "
        + "AppIdentity.set(\"com.example.App\") at start-up."

    var human: String {
        let identityTitle = "app identity"
        let width = max(checks.map(\.title.count).max() ?? 0, appIdentity == nil ? 0 : identityTitle.count,
                        otherIdentities == nil ? 0 : "other identities".count)
        var text = "ping-keyring doctor (" + (backend?.filePath.map { "file keyring: \($0)" }
            ?? "collection: \(collection ?? "?")") + ")\n"
        for check in checks {
            let mark = switch check.status {
            case .pass: "ok  "
            case .fail: "FAIL"
            case .skip: "skip"
            }
            text += "\(mark)  \(check.title.padded(to: width))  \(check.detail)\n"
            if let details = check.technicalDetail {
                text += String(repeating: " ", count: width + 8) + "details: \(details)\n"
            }
            if let fix = check.fix {
                text += String(repeating: " ", count: width + 8) + "fix: \(fix)\n"
            }
        }
        // After the checks, which scripts read by position: it is not one of them.
        if let appIdentity {
            let fallback = appIdentity.source == .executable
            text += "\(fallback ? "warn" : "ok  ")  \(identityTitle.padded(to: width))  \(Self.appDetail(appIdentity))\n"
            if fallback { text += String(repeating: " ", count: width + 8) + "warning: \(Self.fallbackWarning)\n" }
        }
        if let otherIdentities {
            text += "warn  \("other identities".padded(to: width))  \(otherIdentities.text)\n"
        }
        let failures = checks.filter { $0.status == .fail }.count
        text += failures == 0
            ? "All checks passed.\n"
            : "\(failures) check\(failures == 1 ? "" : "s") failed (exit status \(exitStatus.rawValue)).\n"
        return text
    }
}

