import DBusTransport
import Foundation
import PingStorage
import SecretService
import Testing

// secret-tool's and Python keyring's habits (issue 27), through the binary, checked with those
// clients themselves.
extension Integration.PingKeyring {
    // MARK: --text

    @Test func textIsStoredAndPrintedAsSecretToolAndPythonKeyringReadIt() async throws {
        let account = uniqueAccount(), service = "org.example.text-\(UUID().uuidString.prefix(8))"
        defer { try? SecretTool.clear(["service": service]) }
        let notJSON = try pingKeyring(["save", "-s", service, "-a", account] + asTestApp, input: Data("hunter2\n".utf8))
        #expect(notJSON.status == 2)
        #expect(notJSON.stderr.contains("add --text"), "the refusal says how: \(notJSON.stderr)")

        let saved = try pingKeyring(["save", "--text", "-s", service, "-a", account] + asTestApp,
                                    input: Data("hunter2\n".utf8))
        #expect(saved.status == 0, "\(saved.stderr)")
        #expect(saved.output.contains("Saved 7 bytes"), "echo's newline dropped: \(saved.output)")
        #expect(try SecretTool.lookup(["service": service, "account": account]) == Data("hunter2".utf8),
                "secret-tool reads the bytes, no quotes")
        let fromPython = try python("print(repr(keyring.get_password(\(pythonLiteral(service)), \(pythonLiteral(account)))))")
        #expect(fromPython.output == "'hunter2'\n", "Python keyring reads the text exactly")

        let listed = try pingKeyring(["list", "-s", service])
        #expect(listed.output.contains("  encrypted:  unknown: plain text, not JSON (stored with --text or by another "
                                           + "tool, or another Encryptor's output; get prints it as text)\n"), "\(listed.output)")

        let got = try pingKeyring(["get", "--text", "-s", service, "-a", account])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.stdout == Data("hunter2\n".utf8))
        // Without --text too (issue 38): printed as its text, with a warning on stderr, because the
        // app's KeychainStorage fails on it with corruptItem (checked with the app's own storage).
        let plain = try pingKeyring(["get", "-s", service, "-a", account])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == Data("hunter2\n".utf8))
        #expect(plain.stderr.contains("ping-keyring: warning: the value is plain text, not JSON")
                    && plain.stderr.contains("KeychainStorage.get() fails on it with corruptItem"), "\(plain.stderr)")
        let app = KeychainStorage<String>(account: account, configuration: KeychainConfiguration(service: service, app: testApp))
        #expect(await keychainError { _ = try await app.get() }?.kind == "corruptItem", "the warning is true")
        let plainJSON = try jsonObject(try pingKeyring(["get", "--json", "-s", service, "-a", account]))
        #expect(plainJSON["appReadsIt"] as? Bool == false && plainJSON["encoding"] as? String == "utf8")
        #expect(plainJSON["value"] as? String == "hunter2")
        // JSON stays JSON, with no warning.
        let json = uniqueAccount("json")
        #expect(try pingKeyring(["save", "-s", service, "-a", json] + asTestApp, input: Data("\"hunter2\"".utf8)).status == 0)
        let quoted = try pingKeyring(["get", "-s", service, "-a", json])
        #expect(quoted.stdout == Data("\"hunter2\"\n".utf8) && !quoted.stderr.contains("warning"), "\(quoted.stderr)")
        #expect(try jsonObject(try pingKeyring(["get", "--json", "-s", service, "-a", json]))["appReadsIt"] as? Bool == true)

        // What Python keyring stores, get --text prints.
        let other = uniqueAccount("python")
        _ = try python("keyring.set_password(\(pythonLiteral(service)), \(pythonLiteral(other)), 'pässword with spaces ')")
        #expect(try pingKeyring(["get", "--text", "-s", service, "-a", other]).stdout
                == Data("pässword with spaces \n".utf8))
    }

    // MARK: search, lookup

    @Test func searchAndLookupReadAnyToolsItemsAndChangeNothing() async throws {
        let tag = "habits-\(UUID().uuidString.prefix(8))"
        defer { try? SecretTool.clear(["ping-keyring-test": tag]) }
        try SecretTool.store(label: "another app's", attributes: ["ping-keyring-test": tag, "kind": "token", "user": "alice"],
                             secret: Data("s3cret-\(tag)".utf8))
        try SecretTool.store(label: "a second one", attributes: ["ping-keyring-test": tag, "kind": "other"],
                             secret: Data("other-\(tag)".utf8))
        let before = try SecretTool.search(["ping-keyring-test": tag])
        try #require(before.count == 2)

        let all = try pingKeyring(["search", "ping-keyring-test", tag])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.output.components(separatedBy: "\n[/").count == 2, "two items: \(all.output)")
        #expect(all.output.contains("label = another app's\n"))
        #expect(all.output.contains("attribute.user = alice\n"))
        #expect(!all.output.contains("s3cret") && !all.output.contains("other-\(tag)"), "never a secret")
        let one = try jsonObject(try pingKeyring(["search", "--json", "ping-keyring-test", tag, "kind", "token"]))
        let items = try #require(one["items"] as? [[String: Any]])
        #expect(items.count == 1)
        #expect((items.first?["attributes"] as? [String: String])?["user"] == "alice")

        let looked = try pingKeyring(["lookup", "kind", "token", "ping-keyring-test", tag])
        #expect(looked.status == 0, "\(looked.stderr)")
        #expect(looked.stdout == Data("s3cret-\(tag)".utf8), "the bytes as secret-tool prints them into a pipe")

        let none = try pingKeyring(["lookup", "ping-keyring-test", tag, "kind", "missing"])
        #expect(none.status == 1 && none.stdout.isEmpty, "no match: exit 1, nothing printed")
        #expect(try pingKeyring(["search", "ping-keyring-test", tag, "kind", "missing"]).status == 1)

        let after = try SecretTool.search(["ping-keyring-test": tag])
        #expect(Set(after.map(\.path)) == Set(before.map(\.path)))
        #expect(Set(after.map(\.secret)) == Set(before.map(\.secret)), "nothing changed")
    }

    // MARK: list: items get reads by username

    @Test func listShowsThePythonKeyringAndGoKeyringItemsGetReads() async throws {
        let service = "org.example.list-\(UUID().uuidString.prefix(8))"
        let pythonAccount = uniqueAccount("python"), goAccount = uniqueAccount("go")
        defer { try? SecretTool.clear(["service": service]) }
        _ = try python("keyring.set_password(\(pythonLiteral(service)), \(pythonLiteral(pythonAccount)), '\"from python\"')")
        // go-keyring's item: service and username, labelled as go-keyring labels it.
        try SecretTool.store(label: "Password for '\(goAccount)' on '\(service)'",
                             attributes: ["service": service, "username": goAccount], secret: Data("\"from go\"".utf8))
        #expect(try pingKeyring(["get", "-s", service, "-a", pythonAccount]).output == "\"from python\"\n", "get reads it")

        let listed = try pingKeyring(["list", "-s", service])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.output.hasPrefix("2 items with service \(service)"), "\(listed.output)")
        #expect(listed.output.contains("\n\(pythonAccount)\n  service:    \(service)\n"))
        #expect(listed.output.contains("written by: Python keyring (service and username, no account attribute)"))
        #expect(listed.output.contains("\n\(goAccount)\n  service:    \(service)\n"))
        #expect(listed.output.contains("written by: go-keyring (service and username, no account attribute)"))
        let json = try JSONDecoder().decode(ListJSON.self, from: try pingKeyring(["list", "--json", "-s", service]).stdout)
        #expect(json.items.map(\.account).sorted() == [goAccount, pythonAccount].sorted())
        let rows = try JSONSerialization.jsonObject(with: try pingKeyring(["list", "--json", "-s", service]).stdout)
            as? [String: Any]
        let writers = (rows?["items"] as? [[String: Any]])?.map { "\($0["writtenBy"] ?? "") \($0["accountAttribute"] ?? "")" }
        #expect(Set(writers ?? []) == ["pythonKeyring username", "goKeyring username"])
    }

    // MARK: their verbs and positional words

    @Test func theirVerbsAndPositionalWordsGetTheCommandLineToType() async throws {
        let set = try pingKeyring(["set", "org.example.App", "alice"])
        #expect(set.status == 2)
        #expect(set.stdout.isEmpty)
        let suggested = "ping-keyring save --text --app APP --service org.example.App --account alice"
        #expect(set.stderr.contains(suggested), "\(set.stderr)")
        #expect(!set.stderr.contains("echo"), "no value on a command line: \(set.stderr)")
        // The line works as typed, APP filled in, the value on stdin: secret-tool reads it back.
        let typed = suggested.split(separator: " ").dropFirst(1).map { $0 == "APP" ? "org.example.App" : String($0) }
        let saved = try pingKeyring(Array(typed), input: Data("hunter2\n".utf8))
        #expect(saved.status == 0, "\(typed): \(saved.stderr)")
        defer { try? SecretTool.clear(["service": "org.example.App", "account": "alice"]) }
        #expect(try SecretTool.lookup(["service": "org.example.App", "account": "alice"]) == Data("hunter2".utf8))
        #expect(!set.stderr.contains("'get'"), "set means save, whatever its spelling is close to")
        for verb in ["store", "lookup", "clear"] {
            let run = try pingKeyring([verb, "service", "S", "account", "A"])
            #expect(!run.stderr.contains("did you mean"), "\(verb): \(run.stderr)")
        }
        #expect(try pingKeyring(["clear", "service", "S", "account", "A"]).stderr
                    .contains("ping-keyring delete --service S --account A"))
        // secret-tool's label, its value apart, is no service; a value typed as a word is never echoed.
        let store = try pingKeyring(["store", "--label", "My token", "service", "S", "account", "A", "hunter2"])
        #expect(store.stderr.contains("ping-keyring save --text --app APP --service S --account A"), "\(store.stderr)")
        #expect(!store.stderr.contains("hunter2") && !store.stderr.contains("My token"), "\(store.stderr)")
        let get = try pingKeyring(["get", "org.example.App", "alice"])
        #expect(get.status == 2)
        #expect(get.stderr.contains("'get' takes the service and account as options, not as words: "
                                        + "ping-keyring get --service org.example.App --account alice"), "\(get.stderr)")
    }

    // MARK: lock, unlock

    @Test func lockAndUnlockTheCollectionWithThePromptRules() async throws {
        let fake = try await FakeSecretServiceInstance()
        let environment = fake.environment
        let locked = try await runPingKeyring(["lock"], environment: environment)
        #expect(locked.status == 0, "\(locked.stderr)\n\(fake.log)")
        #expect(locked.output.hasPrefix("Locked the collection \(ObjectPath.fakeLogin.rawValue)"), "\(locked.output)")
        #expect(try fake.state().collection(fakeLogin)?.locked == true)
        let again = try await runPingKeyring(["lock", "--json"], environment: environment)
        #expect(try jsonObject(again)["changed"] as? Bool == false, "locking a locked collection succeeds")
        let session = "/org/freedesktop/secrets/collection/session"
        #expect(try fake.state().collection(session)?.locked == false, "only the default collection")
        let named = try await runPingKeyring(["lock", "--collection", "session"], environment: environment)
        #expect(named.status == 0, "\(named.stderr)")
        #expect(try fake.state().collection(session)?.locked == true, "a named collection")

        try fake.scenario("locked-prompt-completes")
        let refused = try await runPingKeyring(["unlock", "--no-prompt"], environment: environment)
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.hasPrefix("ping-keyring: error: locked: "), "\(refused.stderr)")
        #expect(try fake.state().collection(fakeLogin)?.locked == true)

        let unlocked = try await runPingKeyring(["unlock"], environment: environment)
        #expect(unlocked.status == 0, "\(unlocked.stderr)\n\(fake.log)")
        #expect(unlocked.output.hasPrefix("Unlocked the collection \(ObjectPath.fakeLogin.rawValue)"))
        #expect(try fake.calls("Prompt") == 1, "through the provider's prompt")
        #expect(try fake.state().collection(fakeLogin)?.locked == false)
    }
}
