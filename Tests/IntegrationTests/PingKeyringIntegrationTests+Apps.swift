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
        // FLATPAK_ID names the app as inside a Flatpak; the backend stays the Secret Service
        // (there is no /.flatpak-info).
        var environment = ProcessInfo.processInfo.environment
        environment["FLATPAK_ID"] = sandboxed
        #expect(try pingKeyring(["get", "--account", account], environment: environment).output == "\"mine\"\n")
        let listed = try JSONDecoder().decode(
            ListJSON.self, from: try pingKeyring(["list", "--json"], environment: environment).stdout)
        #expect(listed.app == sandboxed)
        #expect(listed.items.filter { $0.account == account }.map(\.app) == [sandboxed])

        let sandboxDoctor = try jsonObject(try pingKeyring(["doctor", "--json"], environment: environment))
        let inSandbox = try #require(sandboxDoctor["appIdentity"] as? [String: Any])
        #expect(inSandbox["id"] as? String == sandboxed)
        #expect(inSandbox["source"] as? String == "flatpak")
        #expect(inSandbox["warning"] is NSNull)

        environment["FLATPAK_ID"] = nil
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
