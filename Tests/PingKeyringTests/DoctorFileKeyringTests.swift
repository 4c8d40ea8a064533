import Foundation
import PingStorage
import Testing
@testable import PingKeyringCore

private func statuses(_ report: DoctorReport) -> [String] {
    report.checks.map { "\($0.id):\($0.status.rawValue)" }
}

/// A doctor environment whose items are in a file keyring. The Secret Service's calls fail, so a
/// check that asked them would fail rather than be skipped.
private func fileEnvironment() -> FakeDoctorEnvironment {
    var environment = FakeDoctorEnvironment()
    environment.backendResult = .success(fileBackend)
    environment.providerResult = .failure(ToolError(kind: "other", message: "the provider must not be asked"))
    environment.collectionResult = .failure(ToolError(kind: "other", message: "the collection must not be asked"))
    return environment
}

private let secretServiceSkipped = ["provider:skip", "collection:skip", "unlocked:skip", "transport:skip"]
private let noSecret = ToolError(kind: "noSecretService",
                                 message: "No Secret portal can give the app its secret. Install xdg-desktop-portal.")

@Suite("Doctor on a file keyring: the portal, the file, moving in; the Secret Service's checks skipped")
struct DoctorFileKeyringTests {
    @Test func healthy() async throws {
        let report = await Doctor.run(fileEnvironment())
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "portal:pass", "fileKeyring:pass", "probe:pass",
                                     "encryptionKey:pass", "keyBinding:pass"] + secretServiceSkipped)
        #expect(report.exitStatus == .ok)
        #expect(report.checks[1].detail == "file keyring \(keyringPath) (in a Flatpak sandbox)")
        #expect(report.checks[2].detail == "gave the app's secret (64 bytes)")
        #expect(report.checks[3].detail == "\(keyringPath) exists, with 3 items")
        for check in report.checks.suffix(4) {
            #expect(check.detail == "skipped: the file keyring is used: in a Flatpak sandbox")
        }
        #expect(report.human.hasPrefix("ping-keyring doctor (file keyring: \(keyringPath))\n"))
        #expect(report.human.contains("ok    backend            file keyring \(keyringPath) (in a Flatpak sandbox)\n"))
        #expect(report.human.contains("ok    Secret portal      gave the app's secret (64 bytes)\n"))
        #expect(report.human.hasSuffix("All checks passed.\n"))
    }

    @Test func aFileNotCreatedYetPasses() async {
        var environment = fileEnvironment()
        environment.fileResult = .success(FileKeyringState(path: keyringPath, exists: false, itemCount: 0))
        environment.keysResult = .success([])
        let report = await Doctor.run(environment)
        #expect(report.checks[3].status == .pass)
        #expect(report.checks[3].detail == "\(keyringPath) is not created yet: created on the first save")
        #expect(report.exitStatus == .ok)
        #expect(FileKeyringState(path: "/k", exists: true, itemCount: 1).description == "/k exists, with 1 item")
    }

    @Test func movingInIsReportedWhenItRan() async {
        var environment = fileEnvironment()
        environment.moveIn = MoveInFinding(description: "from the host's Secret Service: 2 item(s) copied in")
        var report = await Doctor.run(environment)
        #expect(statuses(report).prefix(8) == ["sessionBus:pass", "backend:pass", "portal:pass", "fileKeyring:pass",
                                               "movedIn:pass", "probe:pass", "encryptionKey:pass", "keyBinding:pass"])
        #expect(report.checks[4].detail == "from the host's Secret Service: 2 item(s) copied in")

        environment.moveIn = MoveInFinding(description: "not done", error: ToolError(kind: "locked", message: "The keyring is locked."))
        report = await Doctor.run(environment)
        #expect(report.checks[4].status == .fail)
        #expect(report.checks[4].detail == "the host's items were not copied in: The keyring is locked.")
        #expect(report.checks[4].fix == Doctor.FileFix.moveIn)
        #expect(statuses(report).suffix(7).prefix(3) == ["probe:pass", "encryptionKey:pass", "keyBinding:pass"], "the file is still used")
        #expect(report.exitStatus == .keyringUnavailable)
    }

    @Test func aPortalWithoutASecretFailsWithWhatASandboxedAppNeeds() async {
        var environment = fileEnvironment()
        environment.portalResult = .failure(noSecret)
        environment.fileResult = .failure(ToolError(kind: "other", message: "the file must not be read"))
        environment.probeResult = .failure(ToolError(kind: "other", message: "no probe without the secret"))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "portal:fail", "fileKeyring:skip", "probe:skip",
                                     "encryptionKey:skip"] + secretServiceSkipped)
        #expect(report.exitStatus == .keyringUnavailable)
        let portal = report.checks[2]
        #expect(portal.title == "Secret portal")
        #expect(portal.errorKind == "noSecretService")
        #expect(portal.fix?.contains("xdg-desktop-portal") == true)
        #expect(portal.fix?.contains("gnome-keyring") == true)
        #expect(portal.fix?.contains("--talk-name=org.freedesktop.secrets") == true)
        #expect(report.checks[3].detail == "skipped: needs the app's secret from the Secret portal")
        #expect(report.human.hasSuffix("1 check failed (exit status 3).\n"))
    }

    @Test func aPortalThatHangsOrRefusesGetsItsOwnFix() async {
        var environment = fileEnvironment()
        environment.portalResult = .failure(ToolError(kind: "timedOut", message: "no answer."))
        #expect(await Doctor.run(environment).checks[2].fix == Doctor.FileFix.portalHung)
        environment.portalResult = .failure(ToolError(kind: "promptDismissed", message: "cancelled."))
        #expect(await Doctor.run(environment).checks[2].fix == Doctor.FileFix.portalRefused)
    }

    @Test func whenChoosingTheBackendFailedThePortalCheckIsThatFailureNotASecondRequest() async throws {
        var environment = fileEnvironment()
        environment.backendResult = .failure(BackendProblem(planned: fileBackend, error: noSecret))
        environment.portalResult = .success(64)  // must not be asked: the choice asked already
        let report = await Doctor.run(environment)
        #expect(statuses(report).prefix(3) == ["sessionBus:pass", "backend:pass", "portal:fail"])
        #expect(report.checks[1].detail == "file keyring \(keyringPath) (in a Flatpak sandbox)", "the one aimed at")
        #expect(report.checks[2].detail == noSecret.message)
        #expect(report.exitStatus == .keyringUnavailable)
        let json = try parseJSON(report.json.document)
        let backend = try #require(json["backend"] as? [String: Any])
        #expect(backend["kind"] as? String == "fileKeyring")
        #expect(backend["path"] as? String == keyringPath)
    }

    @Test func noSessionBusFailsTheBusCheck() async {
        var environment = fileEnvironment()
        environment.busAddress = nil
        environment.backendResult = .failure(BackendProblem(planned: fileBackend, error: ToolError(
            kind: "noSessionBus", message: "no D-Bus session bus.")))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:fail", "backend:pass", "portal:skip", "fileKeyring:skip", "probe:skip",
                                     "encryptionKey:skip"] + secretServiceSkipped)
        #expect(report.checks[0].detail == "DBUS_SESSION_BUS_ADDRESS is not set: no D-Bus session bus.")
        #expect(report.checks[0].fix == Doctor.Fix.bus)
        #expect(report.exitStatus == .keyringUnavailable)
    }

    @Test func aDamagedFileFailsAndStopsTheChecksThatNeedIt() async {
        var environment = fileEnvironment()
        environment.fileResult = .failure(ToolError(kind: "corruptItem", message: "The app's keyring file cannot be read: decryption failed."))
        var report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "portal:pass", "fileKeyring:fail", "probe:skip",
                                     "encryptionKey:skip"] + secretServiceSkipped)
        #expect(report.checks[3].fix == Doctor.FileFix.corruptFile)
        #expect(report.checks[4].detail == "skipped: needs a readable file keyring")
        #expect(report.exitStatus == .corrupt)

        environment.fileResult = .failure(ToolError(kind: "providerError", message: "could not be used: permission denied."))
        report = await Doctor.run(environment)
        #expect(report.checks[3].fix == Doctor.FileFix.unreadableFile)
        #expect(report.exitStatus == .other)
    }

    @Test func damagedRecordsFailTheFileCheckByNameAndTheChecksAfterItGoOn() async throws {
        var environment = fileEnvironment()
        let record = DamagedRecordFinding(number: 2, damage: "failedMAC", problem: "it fails its MAC check",
                                          hashedAttributeNames: ["account", "service"])
        environment.fileResult = .success(FileKeyringState(path: keyringPath, exists: true, itemCount: 1, damaged: [record]))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "portal:pass", "fileKeyring:fail", "probe:pass",
                                     "encryptionKey:pass", "keyBinding:pass"] + secretServiceSkipped)
        let check = report.checks[3]
        #expect(check.detail == "\(keyringPath) exists, with 1 readable item and 1 damaged record: "
                + "record 2 (it fails its MAC check; hashed attributes: account, service)")
        #expect(check.errorKind == "corruptItem" && check.fix == Doctor.FileFix.damagedRecords)
        #expect(report.exitStatus == .corrupt)
        #expect(report.human.contains("FAIL  file keyring       \(check.detail)\n"))

        let json = try parseJSON(report.json.document)
        let checks = try #require(json["checks"] as? [[String: Any]])
        let damaged = try #require(checks[3]["damagedRecords"] as? [[String: Any]])
        #expect(damaged.count == 1)
        #expect(damaged.first?["record"] as? Int == 2)
        #expect(damaged.first?["damage"] as? String == "failedMAC")
        #expect(damaged.first?["problem"] as? String == "it fails its MAC check")
        #expect(damaged.first?["hashedAttributes"] as? [String] == ["account", "service"])
        #expect(checks[4]["damagedRecords"] == nil, "only the file check has them")

        let sound = try parseJSON(await Doctor.run(fileEnvironment()).json.document)
        #expect((sound["checks"] as? [[String: Any]])?[3]["damagedRecords"] as? [Any] != nil, "a sound file: an empty list")
        #expect(((sound["checks"] as? [[String: Any]])?[3]["damagedRecords"] as? [Any])?.isEmpty == true)
    }

    @Test func theProbeAndTheKeysAreTheFilesOwn() async {
        var environment = fileEnvironment()
        environment.probeResult = .failure(ToolError(kind: "probeMismatch", message: "different bytes", status: .other))
        environment.keysResult = .success([EncryptionKeyItem(path: "/file/default/2", keyID: "0123456789abcdef0123456789abcdef",
                                                             byteCount: 16, created: Date())])
        let report = await Doctor.run(environment)
        #expect(statuses(report).prefix(6) == ["sessionBus:pass", "backend:pass", "portal:pass", "fileKeyring:pass",
                                               "probe:fail", "encryptionKey:fail"])
        #expect(report.checks[4].fix == Doctor.Fix.probeMismatch)
        #expect(report.checks[5].detail.hasPrefix("key 0123456789abcdef0123456789abcdef (/file/default/2) holds 16 bytes"))
        #expect(report.exitStatus == .other, "the first failure's")
    }

    @Test func anUnusableBackendSettingFailsWithExitStatus2() async throws {
        var environment = FakeDoctorEnvironment()
        environment.backendResult = .failure(BackendProblem(planned: nil, error: ToolError(
            kind: "invalidArgument", message: "PINGSTORAGE_BACKEND is 'kwallet', which is not a backend.")))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:skip", "backend:fail", "provider:skip", "collection:skip", "unlocked:skip",
                                     "transport:skip", "probe:skip", "encryptionKey:skip"])
        #expect(report.checks[1].fix == Doctor.Fix.backendSetting)
        #expect(report.exitStatus == .usage)
        #expect(try parseJSON(report.json.document)["backend"] is NSNull)
    }

    @Test func jsonNamesTheBackendAndHasNoCollection() async throws {
        let document = await Doctor.run(fileEnvironment()).json.document
        #expect(keysInOrder(document) == ["ok", "exitCode", "busAddress", "backend", "collection", "appIdentity", "otherIdentities", "provider", "checks"])
        let json = try parseJSON(document)
        let backend = try #require(json["backend"] as? [String: Any])
        #expect(backend.count == 3)
        #expect(backend["kind"] as? String == "fileKeyring")
        #expect(backend["path"] as? String == keyringPath)
        #expect(backend["reason"] as? String == "in a Flatpak sandbox")
        #expect(json["collection"] is NSNull, "the file is one collection")
        #expect(json["provider"] is NSNull)
        let checks = try #require(json["checks"] as? [[String: Any]])
        #expect(checks.map { $0["id"] as? String } == ["sessionBus", "backend", "portal", "fileKeyring", "probe",
                                                      "encryptionKey", "keyBinding", "provider", "collection", "unlocked", "transport"])
    }

    @Test func onTheSecretServiceTheBackendIsTheSecondLine() async throws {
        let report = await Doctor.run(FakeDoctorEnvironment())
        #expect(report.checks[1].id == "backend")
        #expect(report.checks[1].detail == "Secret Service (not in a Flatpak sandbox)")
        #expect(report.human.hasPrefix("ping-keyring doctor (collection: the default collection)\n"))
        let json = try parseJSON(report.json.document)
        let backend = try #require(json["backend"] as? [String: Any])
        #expect(backend["kind"] as? String == "secretService")
        #expect(backend["path"] is NSNull)
        #expect(json["collection"] as? String == "the default collection")
    }
}
