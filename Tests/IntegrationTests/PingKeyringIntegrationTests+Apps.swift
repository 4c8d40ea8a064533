import Foundation
import PingStorage
import SecretService
import Testing

/// Saves `value` for `account` as app `app`'s KeychainStorage does; returns the storage.
@discardableResult
private func save(_ value: String, account: String, as app: String) async throws -> KeychainStorage<String> {
    let storage = KeychainStorage<String>(account: account, configuration: KeychainConfiguration(app: app))
    try await storage.save(item: value)
    return storage
}

extension Integration.PingKeyring {
    // MARK: apps and move: an old identity's items (docs/ping-keyring.md, "Apps")

    /// A program that set no identity (its path is its identity) saved items, one of them
    /// encrypted; it now calls AppIdentity.set and no longer sees them. `apps` lists the old
    /// identity with its accounts; `move` gives them to the new one (and copies the key), leaving an
    /// account the new one already has with the old one; the new identity then reads them, a client
    /// we did not write sees the new attribute, and the old identity's no longer has them.
    @Test func anOldIdentitysItemsAreListedAndMovedToTheNewOne() async throws {
        let (plain, sealed, both) = (uniqueAccount("plain"), uniqueAccount("sealed"), uniqueAccount("both"))
        let new = "com.example.ping-keyring-test.moved-\(plain.suffix(8))"
        defer { for account in [plain, sealed, both] { try? SecretTool.clear(lookup(account)) } }
        // The old program: the probe under another name (its path is its identity).
        let old = Harness.probePath + "-old-\(plain.suffix(8))"
        guard link(Harness.probePath, old) == 0 else { throw HarnessError("link failed: errno \(errno)") }
        defer { unlink(old) }
        func program(_ path: String, app: String?, _ arguments: [String]) async throws -> ProcessResult {
            try await run(path, arguments, environment: ProcessInfo.processInfo.environment.merging(["KEYCHAIN_PROBE_APP": app ?? ""]) { $1 })
        }
        #expect(try await program(old, app: nil, ["save", plain, "plain value"]).status == 0)
        #expect(try await program(old, app: nil, ["--encrypt", "--unbound", "save", sealed, "sealed value"]).status == 0)
        #expect(try await program(old, app: nil, ["save", both, "old's"]).status == 0)
        let pointed = try await runPingKeyring(["doctor", "--app", new])
        #expect(pointed.output.contains("warn  other identities") && pointed.output.contains(old)
                && pointed.output.contains("ping-keyring move --from OLD --app \(new)"), "the doctor points to them: \(pointed.output)")
        #expect(try await program(Harness.probePath, app: new, ["save", both, "new's"]).status == 0)
        #expect(try await program(Harness.probePath, app: new, ["get", plain]).status == 1, "not the new identity's yet")

        let listed = try JSONDecoder().decode(AppsJSON.self, from: try await runPingKeyring(["apps", "--app", new, "--json"]).stdout)
        let oldIdentity = try #require(listed.identities.first { $0.app == old }, "\(listed)")
        #expect(Set(oldIdentity.accounts).isSuperset(of: [plain, sealed, both]) && oldIdentity.keys.count == 1)
        #expect(oldIdentity.sharedAccounts.contains(both) && !oldIdentity.sharedAccounts.contains(plain))
        #expect(try await runPingKeyring(["apps", "--app", new]).output.contains("ping-keyring move --from OLD --app APP"))

        let refused = try await runPingKeyring(["move", "--from", old])
        #expect(refused.status == 2 && refused.stderr.contains("move needs --app ID"), "outside a sandbox: --app is required")
        let moved = try JSONDecoder().decode(MoveJSON.self, from: try await runPingKeyring(["move", "--from", old, "--app", new, "--json"]).stdout)
        #expect(Set(moved.moved).isSuperset(of: [plain, sealed]) && !moved.moved.contains(both), "\(moved)")
        #expect(moved.skipped.contains(both) && moved.keysCopied.count == 1)

        #expect(try await program(Harness.probePath, app: new, ["get", plain]).output == "plain value\n")
        let opened = try await program(Harness.probePath, app: new, ["--encrypt", "--unbound", "get", sealed])
        #expect(opened.output == "sealed value\n", "the copied key opens it: \(opened.stderr)")
        #expect(try await program(Harness.probePath, app: new, ["get", both]).output == "new's\n", "never overwritten")
        #expect(try await program(old, app: nil, ["get", both]).output == "old's\n", "left with the old identity")
        #expect(try await program(old, app: nil, ["get", plain]).status == 1, "no longer the old identity's")
        #expect(try SecretTool.search(lookup(plain)).map { $0.storedAttributes[AppIdentity.attribute] } == [new])
        #expect(!(try await runPingKeyring(["doctor", "--app", new]).output.contains("other identities")), "the app has its items now")
    }

    private struct AppsJSON: Decodable {
        struct Identity: Decodable { var app: String?; var accounts: [String]; var keys: [String]; var sharedAccounts: [String] }
        var identities: [Identity]
    }

    private struct MoveJSON: Decodable { var moved: [String]; var skipped: [String]; var keysCopied: [String] }

    // MARK: apps (docs/ping-keyring.md, "Apps")

    @Test func twoAppsItemsOfOneAccountAreListedReadAndDeletedApart() async throws {
        let account = uniqueAccount()
        let (appA, appB) = ("com.example.ping-keyring-test.A", "com.example.ping-keyring-test.B")
        defer { try? SecretTool.clear(lookup(account)) }
        try await save("value of A", account: account, as: appA)
        let storageB = try await save("value of B", account: account, as: appB)

        let listed = try JSONDecoder().decode(ListJSON.self, from: try pingKeyring(["list", "--json"]).stdout)
        #expect(listed.app == nil, "outside a sandbox without --app: every app's items")
        #expect(listed.items.filter { $0.account == account }.map(\.app).sorted { ($0 ?? "") < ($1 ?? "") } == [appA, appB])
        let human = try pingKeyring(["list"]).output
        #expect(human.contains("\n\(account)\n  service:    \(defaultService)\n  app:        \(appA)\n"))
        #expect(human.contains("\n\(account)\n  service:    \(defaultService)\n  app:        \(appB)\n"))
        let onlyA = try JSONDecoder().decode(ListJSON.self, from: try pingKeyring(["list", "--app", appA, "--json"]).stdout)
        #expect(onlyA.app == appA)
        #expect(onlyA.items.filter { $0.account == account }.map(\.app) == [appA])
        #expect(onlyA.items.allSatisfy { $0.app == appA }, "a filter shows exactly that app's items")

        let ambiguous = try pingKeyring(["get", "--account", account])
        #expect(ambiguous.status == 2, "two apps: --app must choose")
        #expect(ambiguous.stderr.contains("has items of 2 apps (\(appA), \(appB)): choose one with --app"), "\(ambiguous.stderr)")
        #expect(ambiguous.output.isEmpty)
        let a = try pingKeyring(["--app", appA, "get", "--account", account])
        #expect(a.output == "\"value of A\"\n", "\(a.stderr)")
        #expect(a.stderr.isEmpty, "the app asked for is not repeated")
        let b = try jsonObject(try pingKeyring(["get", "--account", account, "--app", appB, "--json"]))
        #expect(b["value"] as? String == "value of B")
        #expect(b["app"] as? String == appB)

        #expect(try pingKeyring(["delete", "--account", account]).status == 2, "delete without --app refuses too")
        #expect(try SecretTool.search(lookup(account)).count == 2, "nothing was deleted")
        let deleted = try jsonObject(try pingKeyring(["delete", "--account", account, "--app", appA, "--json"]))
        #expect(deleted["deleted"] as? Bool == true)
        #expect(deleted["app"] as? String == appA)
        #expect(try await storageB.get() == "value of B", "B's item is left")
        let onlyB = try pingKeyring(["get", "--account", account])
        #expect(onlyB.output == "\"value of B\"\n", "now the one app's")
        #expect(onlyB.stderr == "app: \(appB)\n", "the app ping-keyring chose is named")
    }

    @Test func saveWithoutAnAppWhenNoAppOwnsTheAccountSavesNothing() async throws {
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }
        let refused = try pingKeyring(["save", "--account", account], input: Data(#""x""#.utf8))
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("give --app ID"), "\(refused.stderr)")
        #expect(refused.stderr.contains("Nothing was saved."))
        #expect(try SecretTool.search(lookup(account)).isEmpty)

        // An item with no app (secret-tool's): read without --app, taken over only by a save naming the app.
        try SecretTool.store(label: "by secret-tool", attributes: lookup(account), secret: Data(#""legacy""#.utf8))
        let got = try pingKeyring(["get", "--account", account])
        #expect(got.output == "\"legacy\"\n")
        #expect(got.stderr.hasSuffix("app: none (another tool's, or PingStorage 1.x's: every app reads it)\n"))
        #expect(try pingKeyring(["save", "--account", account], input: Data(#""x""#.utf8)).status == 2)
        #expect(try SecretTool.lookup(lookup(account)) == Data(#""legacy""#.utf8), "left as it was")
    }

    @Test func encryptedSavesUseTheAppsKey() async throws {
        let account = uniqueAccount()
        let app = "com.example.ping-keyring-test.encrypted"
        defer { try? SecretTool.clear(lookup(account)) }
        let saved = try jsonObject(try pingKeyring(["save", "--account", account, "--app", app, "--encrypt", "--json"],
                                                   input: Data(#""sealed""#.utf8)))
        let key = try #require(saved["keyID"] as? String, "\(saved)")
        defer { try? SecretTool.clear(["xdg:schema": keySchema, "key-id": key]) }
        let keyItems = try SecretTool.search(["xdg:schema": keySchema, "key-id": key])
        #expect(keyItems.first?.storedAttributes[AppIdentity.attribute] == app, "the key is the app's")
        let configuration = KeychainConfiguration(app: app)
        let storage = KeychainStorage<String>(account: account,
                                              encryptor: try #require(SecuredKeyEncryptor(configuration: configuration)),
                                              configuration: configuration)
        #expect(try await storage.get() == "sealed", "the app reads it with its own key")
    }

    @Test func theDefaultInASandboxIsItsIdAndTheDoctorSaysWhichIdentity() async throws {
        let account = uniqueAccount()
        let (sandboxed, other) = ("com.example.ping-keyring-test.Sandboxed", "com.example.ping-keyring-test.Other")
        defer { try? SecretTool.clear(lookup(account)) }
        try await save("mine", account: account, as: sandboxed)
        try await save("theirs", account: account, as: other)
        // In a Flatpak (its /.flatpak-info names the app) whose backend is set to the Secret Service.
        var environment = ProcessInfo.processInfo.environment
        environment["PINGSTORAGE_BACKEND"] = "secret-service"
        let tool = Harness.binaryDirectory.appendingPathComponent("ping-keyring").path
        func inFlatpak(_ arguments: [String]) throws -> ProcessResult {
            try runAsFlatpak(sandboxed, tool, arguments, environment: environment)
        }
        #expect(try inFlatpak(["get", "--account", account]).output == "\"mine\"\n")
        let listed = try JSONDecoder().decode(ListJSON.self, from: try inFlatpak(["list", "--json"]).stdout)
        #expect(listed.app == sandboxed)
        #expect(listed.items.filter { $0.account == account }.map(\.app) == [sandboxed])
        // An inherited FLATPAK_ID alone (a program started from a Flatpak IDE) is no sandbox.
        environment["FLATPAK_ID"] = sandboxed
        #expect(try pingKeyring(["get", "--account", account], environment: environment).status == 2, "two apps: --app must choose")
        environment["FLATPAK_ID"] = nil

        let sandboxDoctor = try jsonObject(try inFlatpak(["doctor", "--json"]))
        let inSandbox = try #require(sandboxDoctor["appIdentity"] as? [String: Any])
        #expect(inSandbox["id"] as? String == sandboxed)
        #expect(inSandbox["source"] as? String == "flatpak")
        #expect(inSandbox["warning"] is NSNull)

        let doctor = try pingKeyring(["doctor", "--json"], environment: environment)
        let fallback = try #require(try jsonObject(doctor)["appIdentity"] as? [String: Any])
        #expect(fallback["id"] is NSNull, "each program's own path")
        #expect(fallback["source"] as? String == "executable")
        let warning = try #require(fallback["warning"] as? String)
        #expect(warning.contains("moving, renaming") && warning.contains("AppIdentity.set(\"com.example.App\")"))
        let human = try pingKeyring(["doctor"], environment: environment).output
        #expect(human.contains("warn  app identity       each program's own executable path"))
        #expect(human.hasSuffix("All checks passed.\n"), "a warning is not a failure")
    }
}
