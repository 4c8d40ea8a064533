import Foundation
import PingStorage
import Testing
@testable import PingKeyringCore

/// A scripted keyring for the doctor.
struct FakeDoctorEnvironment: DoctorEnvironment {
    var backendResult: Result<KeychainBackendChoice, BackendProblem> = .success(secretServiceBackend)
    var portalResult: Result<Int, ToolError> = .success(64)
    var fileResult: Result<FileKeyringState, ToolError> = .success(FileKeyringState(path: keyringPath, exists: true, itemCount: 3))
    var moveIn: MoveInFinding?
    var busAddress: String? = "unix:path=/run/user/1000/bus"
    var appIdentity = AppIdentity(id: "/usr/bin/example-app", source: .executable)
    var collectionDescription = "the default collection"
    var providerResult: Result<ProviderInfo, ToolError> = .success(ProviderInfo(
        name: "GNOME Keyring", executable: "/usr/bin/gnome-keyring-daemon", processID: 42, uniqueName: ":1.3", transport: "dh-ietf1024-sha256-aes128-cbc-pkcs7"))
    var collectionResult: Result<KeyringCollection, ToolError> = .success(KeyringCollection(location: "/org/freedesktop/secrets/collection/login", label: "Login", isLocked: false))
    var probeResult: Result<String, ToolError> = .success("wrote, read back and deleted an item")
    var keysResult: Result<[EncryptionKeyItem], ToolError> = .success([keyItem(keyA, created: 100)])
    var others: OtherIdentitiesFinding?

    func backend() async throws(BackendProblem) -> KeychainBackendChoice { try backendResult.get() }
    func portalSecretSize() async throws(ToolError) -> Int { try portalResult.get() }
    func fileKeyring() async throws(ToolError) -> FileKeyringState { try fileResult.get() }
    func movedIn() async -> MoveInFinding? { moveIn }
    func provider() async throws(ToolError) -> ProviderInfo { try providerResult.get() }
    func collection() async throws(ToolError) -> KeyringCollection { try collectionResult.get() }
    func probe() async throws(ToolError) -> String { try probeResult.get() }
    func encryptionKeys() async throws(ToolError) -> [EncryptionKeyItem] { try keysResult.get() }
    func otherIdentities() async -> OtherIdentitiesFinding? { others }
}

let secretServiceBackend = KeychainBackendChoice(kind: .secretService, reason: "not in a Flatpak sandbox")
let keyringPath = "/home/u/.var/app/org.example.App/data/keyrings/default.keyring"
let fileBackend = KeychainBackendChoice(kind: .fileKeyring(path: keyringPath), reason: "in a Flatpak sandbox")

private let keyA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
private let keyB = "0123456789abcdef0123456789abcdef"

private func keyItem(_ keyID: String?, created: TimeInterval, byteCount: Int = 32, number: Int = 1,
                     app: String? = "com.example.App") -> EncryptionKeyItem {
    EncryptionKeyItem(path: "/org/freedesktop/secrets/collection/login/\(number)", keyID: keyID,
                      byteCount: byteCount, created: Date(timeIntervalSince1970: created), app: app)
}

private func statuses(_ report: DoctorReport) -> [String] {
    report.checks.map { "\($0.id):\($0.status.rawValue)" }
}

@Suite("Doctor: order of checks, skips, fixes, exit status")
struct DoctorTests {
    @Test func healthy() async throws {
        let report = await Doctor.run(FakeDoctorEnvironment())
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "provider:pass", "collection:pass", "unlocked:pass",
                                     "transport:pass", "probe:pass", "encryptionKey:pass", "keyBinding:pass"])
        #expect(report.ok)
        #expect(report.exitStatus == .ok)
        #expect(report.checks[0].detail == "unix:path=/run/user/1000/bus", "the bus address is shown")
        #expect(report.checks[2].detail == "GNOME Keyring (/usr/bin/gnome-keyring-daemon, pid 42, :1.3)")
        #expect(report.checks[7].detail == "1 key present: \(keyA) (app com.example.App)")
        #expect(report.human.hasSuffix("All checks passed.\n"))
        #expect(!report.human.contains("fix:"))
    }

    @Test func noSessionBus() async {
        var environment = FakeDoctorEnvironment()
        environment.busAddress = nil
        environment.providerResult = .failure(ToolError(kind: "noSessionBus", message: "no D-Bus session bus."))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:fail", "backend:pass", "provider:skip", "collection:skip", "unlocked:skip",
                                     "transport:skip", "probe:skip", "encryptionKey:skip"])
        #expect(report.exitStatus == .keyringUnavailable)
        #expect(report.checks[0].detail == "DBUS_SESSION_BUS_ADDRESS is not set: no D-Bus session bus.")
        #expect(report.checks[0].fix?.contains("DBUS_SESSION_BUS_ADDRESS") == true)
        #expect(report.checks[0].errorKind == "noSessionBus")
        #expect(report.human.contains("FAIL  session bus"))
        #expect(report.human.hasSuffix("1 check failed (exit status 3).\n"))
    }

    @Test func noProvider() async {
        var environment = FakeDoctorEnvironment()
        environment.providerResult = .failure(ToolError(kind: "noSecretService", message: "no Secret Service."))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "provider:fail", "collection:skip", "unlocked:skip",
                                     "transport:skip", "probe:skip", "encryptionKey:skip"])
        #expect(report.checks[2].fix?.contains("gnome-keyring-daemon") == true)
        #expect(report.exitStatus == .keyringUnavailable)
    }

    @Test func hungProvider() async {
        var environment = FakeDoctorEnvironment()
        environment.providerResult = .failure(ToolError(kind: "timedOut", message: "no answer."))
        let report = await Doctor.run(environment)
        #expect(report.checks[2].status == .fail)
        #expect(report.checks[2].fix?.contains("--timeout") == true)
    }

    @Test func missingDefaultCollection() async {
        var environment = FakeDoctorEnvironment()
        environment.collectionResult = .failure(ToolError(kind: "collectionNotFound", message: "Collections: /x (X)."))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "provider:pass", "collection:fail", "unlocked:skip",
                                     "transport:pass", "probe:skip", "encryptionKey:skip"])
        #expect(report.checks[3].detail == "Collections: /x (X).", "the library's message lists the collections")
        // What the person will see and what works without a desktop, by provider; never
        // `secret-tool store`, which meets the same prompt.
        let gnome = report.checks[3].fix ?? ""
        #expect(gnome.hasPrefix("no default keyring exists yet: create one: run a program that allows prompts in the desktop "
                                + "session once (GNOME Keyring shows \"Choose password for new keyring\""), "\(gnome)")
        #expect(gnome.contains("`gnome-keyring-daemon --replace --unlock`") && !gnome.contains("secret-tool"), "\(gnome)")
        #expect(report.exitStatus == .keyringUnavailable)
        environment.providerResult = .success(ProviderInfo(name: "KWallet", executable: "/usr/bin/kwalletd5", processID: 7,
                                                           uniqueName: nil, transport: "dh-ietf1024-sha256-aes128-cbc-pkcs7"))
        let kde = await Doctor.run(environment).checks[3].fix ?? ""
        #expect(kde.contains("KWallet Manager") && kde.contains("\"Classic, blowfish encrypted file\""), "\(kde)")

        environment.collectionDescription = "the 'work' collection"
        #expect(await Doctor.run(environment).checks[3].fix?.contains("create the alias") == true)
    }

    @Test func lockedCollection() async {
        var environment = FakeDoctorEnvironment()
        environment.collectionResult = .success(KeyringCollection(location: "/org/freedesktop/secrets/collection/login", label: "Login", isLocked: true))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "provider:pass", "collection:pass", "unlocked:fail",
                                     "transport:pass", "probe:skip", "encryptionKey:skip"])
        #expect(report.checks[4].errorKind == "locked")
        #expect(report.checks[4].fix?.contains("unlock") == true)
        #expect(report.exitStatus == .keyringUnavailable)
    }

    @Test func plainTransport() async {
        var environment = FakeDoctorEnvironment()
        environment.providerResult = .success(ProviderInfo(name: "KWallet", executable: "/usr/bin/kwalletd6", processID: 7, uniqueName: nil,
                                                           transport: "plain"))
        let report = await Doctor.run(environment)
        #expect(statuses(report) == ["sessionBus:pass", "backend:pass", "provider:pass", "collection:pass", "unlocked:pass",
                                     "transport:fail", "probe:skip", "encryptionKey:skip"])
        #expect(report.checks[2].detail == "KWallet (/usr/bin/kwalletd6, pid 7)")
        #expect(report.checks[5].errorKind == "insecureTransport")
        #expect(report.exitStatus == .keyringUnavailable)
    }

    @Test func probeFailures() async {
        var environment = FakeDoctorEnvironment()
        environment.probeResult = .failure(ToolError(kind: "providerError", message: "write failed."))
        var report = await Doctor.run(environment)
        #expect(statuses(report).last(where: { $0.hasPrefix("probe") }) == "probe:fail")
        #expect(report.exitStatus == .other)

        environment.probeResult = .failure(ToolError(kind: "probeMismatch", message: "different bytes", status: .other))
        report = await Doctor.run(environment)
        #expect(report.checks[6].fix?.contains("other bytes") == true)
    }

    @Test func exitStatusIsTheFirstFailures() async {
        var environment = FakeDoctorEnvironment()
        environment.collectionResult = .failure(ToolError(kind: "collectionNotFound", message: "none"))
        environment.providerResult = .success(ProviderInfo(name: "unknown", executable: nil, processID: 1, uniqueName: nil, transport: "plain"))
        let report = await Doctor.run(environment)
        #expect(report.checks.filter { $0.status == .fail }.count == 2)
        #expect(report.exitStatus == .keyringUnavailable)
        #expect(report.human.hasSuffix("2 checks failed (exit status 3).\n"))
    }

    @Test func jsonFieldNames() async throws {
        var environment = FakeDoctorEnvironment()
        environment.collectionResult = .success(KeyringCollection(location: "/c", label: "", isLocked: true))
        let document = await Doctor.run(environment).json.document
        #expect(keysInOrder(document) == ["ok", "exitCode", "busAddress", "backend", "collection", "appIdentity", "otherIdentities", "provider", "checks"])
        let json = try parseJSON(document)
        #expect(json["ok"] as? Bool == false)
        #expect(json["exitCode"] as? Int == 3)
        #expect(json["busAddress"] as? String == "unix:path=/run/user/1000/bus")
        #expect(json["collection"] as? String == "the default collection")
        let provider = try #require(json["provider"] as? [String: Any])
        #expect(Set(provider.keys) == ["name", "executable", "pid", "uniqueName", "transport"])
        #expect(provider["name"] as? String == "GNOME Keyring")
        #expect(provider["pid"] as? Int == 42)
        let checks = try #require(json["checks"] as? [[String: Any]])
        #expect(checks.map { $0["id"] as? String } == ["sessionBus", "backend", "provider", "collection", "unlocked", "transport",
                                                      "probe", "encryptionKey"])
        for check in checks {
            #expect(Set(check.keys) == ["id", "title", "status", "detail", "technicalDetail", "fix", "errorKind"])
        }
        #expect(checks[4]["status"] as? String == "fail")
        #expect(checks[4]["fix"] is String)
        #expect(checks[4]["errorKind"] as? String == "locked")
        #expect(checks[0]["fix"] is NSNull)
        #expect(checks[7]["status"] as? String == "skip")

        environment.providerResult = .failure(ToolError(kind: "noSecretService", message: "none"))
        let failed = try parseJSON(await Doctor.run(environment).json.document)
        #expect(failed["provider"] is NSNull)
    }

    // MARK: The encryption key

    @Test func noKeyYetPasses() async {
        var environment = FakeDoctorEnvironment()
        environment.keysResult = .success([])
        let report = await Doctor.run(environment)
        #expect(report.checks[7].status == .pass)
        #expect(report.checks[7].detail == "no key yet: one is created on the first encrypted save")
        #expect(report.exitStatus == .ok)
        #expect(report.human.contains("ok    encryption key     no key yet: one is created on the first encrypted save\n"))
    }

    @Test func severalKeysAreListedOldestFirst() {
        let check = Doctor.encryptionKeyCheck(.success([
            keyItem(keyA, created: 200, number: 5), keyItem(keyB, created: 100, number: 2),
        ]))
        #expect(check.status == .pass)
        #expect(check.detail == "2 keys present: \(keyB) (app com.example.App), \(keyA) (app com.example.App); "
                    + "each app seals new data with its own oldest key")
        // Same creation time: the lower id is the one SecuredKeyEncryptor settles on.
        let tied = Doctor.encryptionKeyCheck(.success([keyItem(keyA, created: 1), keyItem(keyB, created: 1)]))
        #expect(tied.detail.hasPrefix("2 keys present: \(keyB) "))
    }

    /// Each key names its app (issue 38): apps seal with their own keys, not the keyring's oldest.
    @Test func eachKeyNamesItsApp() {
        let check = Doctor.encryptionKeyCheck(.success([
            keyItem(keyA, created: 100, app: "com.example.A"), keyItem(keyB, created: 200, app: "com.example.B"),
            keyItem(String(repeating: "c", count: 32), created: 50, app: nil),
        ]))
        #expect(check.detail == "3 keys present: \(String(repeating: "c", count: 32)) (no app: PingStorage 1.x's, which every "
                    + "app opens data with), \(keyA) (app com.example.A), \(keyB) (app com.example.B); each app seals new data "
                    + "with its own oldest key", "\(check.detail)")
        #expect(!check.detail.contains("new data uses the oldest"))
        // A damaged key that is its app's oldest stops that app's encrypted saves, though older keys exist.
        let damaged = Doctor.encryptionKeyCheck(.success([
            keyItem(keyA, created: 100, app: "com.example.A"), keyItem(keyB, created: 200, byteCount: 5, app: "com.example.B"),
        ]))
        #expect(damaged.status == .fail)
        #expect(damaged.detail.contains("encrypted saves fail while it is its app's oldest key"), "\(damaged.detail)")
    }

    @Test func itemsWithoutAValidKeyIDAreIgnoredButMentioned() {
        let onlyInvalid = Doctor.encryptionKeyCheck(.success([keyItem(nil, created: 1, byteCount: 5)]))
        #expect(onlyInvalid.status == .pass, "SecuredKeyEncryptor ignores them, so they harm nothing")
        #expect(onlyInvalid.detail == "no key yet: one is created on the first encrypted save; 1 item with the key "
                + "schema but no valid key-id attribute is ignored")
        let mixed = Doctor.encryptionKeyCheck(.success([keyItem(keyA, created: 1), keyItem(nil, created: 0),
                                                        keyItem(nil, created: 0)]))
        #expect(mixed.detail == "1 key present: \(keyA) (app com.example.App); 2 items with the key schema but no valid key-id "
                + "attribute are ignored")
    }

    @Test func aKeyItemThatIsNot32BytesFails() async {
        var environment = FakeDoctorEnvironment()
        environment.keysResult = .success([keyItem(keyA, created: 1, byteCount: 16, number: 9), keyItem(keyB, created: 2)])
        let report = await Doctor.run(environment)
        let check = report.checks[7]
        #expect(check.status == .fail)
        #expect(check.errorKind == "unsupportedFormat")
        #expect(report.exitStatus == .corrupt, "exit 4, as for a value that cannot be decrypted")
        #expect(check.detail.hasPrefix("key \(keyA) (/org/freedesktop/secrets/collection/login/9) holds 16 bytes, not 32: "))
        #expect(check.detail.contains("encrypted saves fail while it is its app's oldest key"))
        #expect(check.detail.hasSuffix("In all: 2 keys present: \(keyA) (app com.example.App), \(keyB) (app com.example.App); "
                                           + "each app seals new data with its own oldest key"))
        #expect(check.fix?.contains("secret-tool clear xdg:schema com.pingidentity.PingStorage.SecuredKey key-id \(keyA)") == true)
        #expect(check.fix?.contains("backup") == true)

        let notOldest = Doctor.encryptionKeyCheck(.success([keyItem(keyA, created: 1), keyItem(keyB, created: 2, byteCount: 33)]))
        #expect(notOldest.status == .fail)
        #expect(notOldest.detail.hasPrefix("key \(keyB) "))
        #expect(!notOldest.detail.contains("encrypted saves fail"))
    }

    @Test func aKeyringThatCannotBeSearchedFailsWithTheUsualFix() async {
        var environment = FakeDoctorEnvironment()
        environment.keysResult = .failure(ToolError(kind: "locked", message: "1 encryption key item is locked (/c/1)"))
        var report = await Doctor.run(environment)
        #expect(statuses(report).last == "encryptionKey:fail")
        #expect(report.checks[7].detail == "cannot search the keyring for encryption keys: 1 encryption key item is locked (/c/1)")
        #expect(report.checks[7].fix == Doctor.Fix.unlocked)
        #expect(report.checks[7].errorKind == "locked")
        #expect(report.exitStatus == .keyringUnavailable)

        environment.keysResult = .failure(ToolError(kind: "timedOut", message: "no answer."))
        report = await Doctor.run(environment)
        #expect(report.checks[7].fix == Doctor.Fix.providerHung)
        environment.keysResult = .failure(ToolError(kind: "providerError", message: "boom"))
        report = await Doctor.run(environment)
        #expect(report.checks[7].fix == Doctor.Fix.seeMessage)
        #expect(report.exitStatus == .other)
    }

    @Test func theKeyIsCheckedEvenWhenOnlyTheProbeFailed() async {
        var environment = FakeDoctorEnvironment()
        environment.probeResult = .failure(ToolError(kind: "providerError", message: "write refused."))
        let report = await Doctor.run(environment)
        #expect(statuses(report).suffix(3) == ["probe:fail", "encryptionKey:pass", "keyBinding:pass"], "the key search needs no write")
        #expect(report.exitStatus == .other, "the first failure's status")
    }

    @Test func theKeyIsSkippedAfterTheKeyringFailed() async {
        var environment = FakeDoctorEnvironment()
        environment.collectionResult = .success(KeyringCollection(location: "/c", label: "", isLocked: true))
        environment.keysResult = .failure(ToolError(kind: "other", message: "must not be asked"))
        let report = await Doctor.run(environment)
        #expect(report.checks[7].status == .skip)
        #expect(report.checks[7].detail == "skipped: an earlier check failed")
        environment.providerResult = .failure(ToolError(kind: "noSecretService", message: "none"))
        #expect(await Doctor.run(environment).checks[7].detail == "skipped: needs a Secret Service provider")
    }

    @Test func liveEnvironmentShowsTheBusAddress() {
        let settings = KeyringSettings(GlobalOptions())
        #expect(LiveDoctorEnvironment(settings: settings, environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"])
            .busAddress == "unix:path=/x")
        #expect(LiveDoctorEnvironment(settings: settings, environment: ["XDG_RUNTIME_DIR": "/nonexistent-dir"])
            .busAddress == nil)
        var options = GlobalOptions()
        options.collection = .alias("work")
        #expect(LiveDoctorEnvironment(settings: KeyringSettings(options), environment: [:]).collectionDescription
                == "the 'work' collection")
    }
}

/// Where an app that moved, or that started calling AppIdentity.set, left its items: the doctor
/// points to them when the app has none of its own.
@Suite("Doctor: an old identity's items")
struct DoctorOtherIdentitiesTests {
    static let items = [
        KeychainIdentities.Item(app: "/old/path/tool", account: "ACCESS_TOKEN_STORAGE", keyID: nil),
        KeychainIdentities.Item(app: "/old/path/tool", account: "REFRESH", keyID: nil),
        KeychainIdentities.Item(app: "/old/path/tool", account: nil, keyID: "aa"),
        KeychainIdentities.Item(app: nil, account: "legacy", keyID: nil),
    ]

    @Test func anAppWithoutItemsIsPointedToTheIdentitiesThatHaveSome() async throws {
        let finding = try #require(OtherIdentitiesFinding(app: "com.example.Tool", service: "svc", items: Self.items))
        #expect(finding.others.map(\.app) == ["/old/path/tool"] && finding.others[0].accounts == ["ACCESS_TOKEN_STORAGE", "REFRESH"])
        #expect(finding.text.contains("ping-keyring move --from OLD --app com.example.Tool"))
        #expect(OtherIdentitiesFinding(app: "com.example.Tool", service: "svc",
                                       items: Self.items + [.init(app: "com.example.Tool", account: "x", keyID: nil)]) == nil,
                "the app has items of its own")
        #expect(OtherIdentitiesFinding(app: "com.example.Tool", service: "svc", items: [Self.items[3]]) == nil, "no app's only")

        var environment = FakeDoctorEnvironment()
        environment.others = finding
        let report = await Doctor.run(environment)
        #expect(report.human.contains("\nwarn  other identities   com.example.Tool has no items of service svc, but other identities do: "
                                      + "/old/path/tool (ACCESS_TOKEN_STORAGE, REFRESH)."), "\(report.human)")
        #expect(report.ok, "a warning, not a failed check")
        #expect(report.json.document.contains("\"otherIdentities\": {\n    \"app\": \"com.example.Tool\""), "\(report.json.document)")
    }
}
