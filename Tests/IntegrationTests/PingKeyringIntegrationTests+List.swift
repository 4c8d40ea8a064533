import Foundation
import PingStorage
import SecretService
import Testing

extension Integration.PingKeyring {
    // MARK: save, get, list, delete

    @Test func saveGetListDelete() async throws {
        let account = uniqueAccount()
        let json = #"{"accessToken":"secret-access-\#(UUID().uuidString)","expiresIn":3600}"#
        defer { try? SecretTool.clear(lookup(account)) }

        let saved = try pingKeyring(["save", "--account", account] + asTestApp, input: Data((json + "\n").utf8))
        #expect(saved.status == 0, "\(saved.stderr)")
        #expect(saved.output.hasPrefix("Saved \(json.utf8.count) bytes for account '\(account)'"))
        #expect(saved.stderr.isEmpty, "the backend line only with --verbose")
        // What secret-tool finds: the JSON text (newline dropped), under PingStorage's attributes and label.
        #expect(try SecretTool.lookup(lookup(account)) == Data(json.utf8))
        let items = try SecretTool.search(lookup(account))
        try #require(items.count == 1)
        #expect(items[0].storedAttributes == ["service": defaultService, "account": account, "username": account,
                                        "xdg:schema": "com.pingidentity.PingStorage", AppIdentity.attribute: testApp])
        #expect(items[0].label == "\(account) (\(defaultService))")

        let got = try pingKeyring(["get", "--account", account])
        #expect(got.status == 0)
        #expect(got.output == json + "\n")
        #expect(got.stderr == testAppLine, "stdout is the value alone; without --app, the one app's")
        let verbose = try pingKeyring(["get", "--account", account, "--verbose"])
        #expect(verbose.output == json + "\n")
        #expect(verbose.stderr == hostBackendLine + testAppLine, "--verbose: the backend line, on stderr")
        #expect(try pingKeyring(["get", "--account", account, "--raw"]).stdout == Data(json.utf8), "--raw adds nothing")

        let listed = try pingKeyring(["list"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.output.hasPrefix("1 item") || listed.output.contains(" items "), "no backend line: \(listed.output)")
        #expect(listed.stderr.isEmpty)
        for command in [["list"], ["save", "--account", account] + asTestApp, ["delete", "--account", "nobody-\(account)"]] {
            let verbose = try pingKeyring(command + ["-v"], input: Data(json.utf8))
            #expect(verbose.status == 0, "\(verbose.stderr)")
            #expect(verbose.stderr == hostBackendLine, "\(command[0]) -v: the backend on stderr")
            #expect(!verbose.output.contains("backend:"), "\(command[0]) -v: never on stdout")
        }
        #expect(listed.output.contains("\n\(account)\n  service:    \(defaultService)\n  app:        \(testApp)\n"))
        #expect(listed.output.contains("  size:       \(json.utf8.count) bytes (text/plain)\n"))
        #expect(!listed.output.contains("secret-access"), "list never prints a secret")

        let deleted = try pingKeyring(["delete", "--account", account])
        #expect(deleted.status == 0)
        #expect(deleted.output == "Deleted the item of account '\(account)' (service \(defaultService), "
            + "items of app \(testApp) or of no app).\n")
        #expect(try SecretTool.lookup(lookup(account)) == nil)
        let again = try pingKeyring(["delete", "--account", account])
        #expect(again.status == 0, "deleting nothing succeeds, as KeychainStorage.delete() does")
        #expect(again.output.contains("nothing to delete"))

        let missing = try pingKeyring(["get", "--account", account])
        #expect(missing.status == 1)
        #expect(missing.output.isEmpty)
        #expect(missing.stderr.hasPrefix("ping-keyring: error: notFound: no item for account '\(account)'"))
    }

    @Test func appsAndTheToolReadEachOthersItems() async throws {
        let account = uniqueAccount()
        let storage = KeychainStorage<TestItem>(account: account, configuration: testAppConfiguration)
        defer { try? SecretTool.clear(lookup(account)) }

        #expect(try pingKeyring(["save", "--account", account] + asTestApp, input: Data(#"{"id":7,"name":"from the tool"}"#.utf8))
            .status == 0)
        #expect(try await storage.get() == TestItem(id: 7, name: "from the tool"))

        try await storage.save(item: TestItem(id: 8, name: "from the app"))
        let got = try pingKeyring(["get", "--account", account])
        #expect(try JSONDecoder().decode(TestItem.self, from: got.stdout) == TestItem(id: 8, name: "from the app"))
        try await storage.delete()
    }

    @Test func saveReplacesInPlaceAndCollapsesDuplicates() async throws {
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }
        // Left by crashed processes of the app: same service, account and app, told apart by an
        // extra attribute.
        for copy in 1...2 {
            try SecretTool.store(label: "copy \(copy)", attributes: lookup(account).merging(["copy": "\(copy)",
                                                                                              AppIdentity.attribute: testApp]) { $1 },
                                 secret: Data("\"copy \(copy)\"".utf8))
        }
        #expect(try SecretTool.search(lookup(account)).count == 2)
        #expect(try pingKeyring(["save", "--account", account] + asTestApp, input: Data(#""one""#.utf8)).status == 0)
        let items = try SecretTool.search(lookup(account))
        #expect(items.count == 1, "the library's write rules: exactly one item remains")
        #expect(items.first?.secret == #""one""#)
        #expect(items.first?.label == "\(account) (\(defaultService))")
    }

    @Test func listFindsItemsOtherToolsWroteAndFiltersByService() async throws {
        let plain = uniqueAccount("plain"), binary = uniqueAccount("binary"), ours = uniqueAccount("ours")
        let service = "com.example.ping-keyring-test.\(UUID().uuidString.prefix(8))"
        defer {
            for account in [plain, binary] { try? SecretTool.clear(lookup(account)) }
            try? SecretTool.clear(lookup(ours, service: service))
        }
        try SecretTool.store(label: "by secret-tool", attributes: lookup(plain), secret: Data(#"{"k":"v"}"#.utf8))
        try SecretTool.store(label: "binary", attributes: lookup(binary), secret: Data("not json at all".utf8))
        #expect(try pingKeyring(["save", "--account", ours, "--service", service] + asTestApp, input: Data("42".utf8)).status == 0)

        let result = try pingKeyring(["list", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let list = try JSONDecoder().decode(ListJSON.self, from: result.stdout)
        #expect(list.collection == Harness.defaultCollectionPath)
        #expect(list.service == nil)
        let byAccount = Dictionary(list.items.map { ($0.account, $0) }, uniquingKeysWith: { first, _ in first })
        let foreign = try #require(byAccount[plain], "items of the default service written by other tools")
        // Not ours; what other tools put there varies (secret-tool sometimes adds its generic schema).
        #expect(foreign.schema != "com.pingidentity.PingStorage")
        #expect(foreign.label == "by secret-tool")
        #expect(foreign.encrypted == "no")
        #expect(foreign.size == 9)
        #expect(foreign.collection == list.collection)
        #expect(foreign.item.hasPrefix(list.collection + "/"))
        #expect(foreign.created.hasSuffix("Z") && foreign.modified.hasSuffix("Z"), "ISO 8601 UTC")
        #expect(byAccount[binary]?.encrypted == "unknown", "not JSON text: binary/unknown")
        let mine = try #require(byAccount[ours], "PingStorage's items of any service")
        #expect(mine.service == service)
        #expect(mine.schema == "com.pingidentity.PingStorage")
        #expect(mine.size == 2)
        #expect(mine.app == testApp)
        #expect(foreign.app == nil, "secret-tool's item has no app")
        #expect(!result.output.contains("not json at all") && !result.output.contains(#""k""#), "no secrets")

        let filtered = try JSONDecoder().decode(
            ListJSON.self, from: try pingKeyring(["list", "--service", service, "--json"]).stdout)
        #expect(filtered.service == service)
        #expect(filtered.items.map(\.account) == [ours])
    }

    /// Bytes that are not text (another Encryptor's output, damage) are refused; plain text is
    /// printed as text (PingKeyringIntegrationTests+Habits.swift).
    @Test func getRefusesAValueThatIsNotTextUnlessRaw() async throws {
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }
        let opaque = Data("opaque\u{0}bytes".utf8) + Data([0xFF, 0xFE])
        // As binary (secret-tool stores text/plain, which KWallet cuts at the NUL and re-encodes).
        try await SecretTool.storeBinary(label: "bytes", attributes: lookup(account), secret: opaque)

        let refused = try pingKeyring(["get", "--account", account])
        #expect(refused.status == 4)
        #expect(refused.output.isEmpty)
        #expect(refused.stderr.contains("error: corruptItem:"))
        #expect(refused.stderr.contains("--raw"), "the message says what to do")
        #expect(!refused.stderr.contains("opaque"), "the message never quotes the value")

        let raw = try pingKeyring(["get", "--account", account, "--raw"])
        #expect(raw.stdout == opaque, "status \(raw.status), \(raw.stdout.count) bytes, stderr: \(raw.stderr)")
        let rawJSON = try jsonObject(try pingKeyring(["get", "--account", account, "--raw", "--json"]))
        #expect(rawJSON["value"] as? String == opaque.base64EncodedString())
        #expect(rawJSON["encoding"] as? String == "base64")
        #expect(rawJSON["encrypted"] as? String == "unknown")
        #expect(rawJSON["appReadsIt"] is NSNull, "not looked at with --raw")
        #expect(try SecretTool.lookup(lookup(account)) == opaque, "left unchanged")
    }

    @Test func getPrintsOneTrailingNewlineAndEmbedsJSON() async throws {
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }
        // Another tool's item whose JSON text ends with a newline: printed with that one only.
        let stored = Data("{\"a\": [1, true]}\n".utf8)
        try await SecretTool.storeBinary(label: "newline", attributes: lookup(account), secret: stored)
        let got = try pingKeyring(["get", "-a", account])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.stdout == stored, "no second newline")
        let json = try jsonObject(try pingKeyring(["get", "-a", account, "-j"]))
        #expect(json["encoding"] as? String == "json")
        let value = try #require(json["value"] as? [String: Any], "the value as JSON, not a string")
        #expect((value["a"] as? [Any])?.count == 2)
    }

    @Test func jsonOutputOfEveryCommand() async throws {
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }
        let value = #"{"token":"t\n\"quoted\" é"}"#

        let saved = try jsonObject(try pingKeyring(["save", "--json", "--account", account] + asTestApp,
                                                   input: Data(value.utf8)))
        #expect(Set(saved.keys) == ["account", "service", "app", "item", "collection", "size", "encrypted", "keyID", "backend"])
        let backend = try #require(saved["backend"] as? [String: Any])
        #expect(backend["kind"] as? String == "secretService")
        #expect(backend["path"] is NSNull)
        #expect(backend["reason"] as? String == "not in a Flatpak sandbox (/.flatpak-info does not exist)")
        #expect(saved["encrypted"] as? String == "no")
        #expect(saved["keyID"] is NSNull)
        #expect(saved["account"] as? String == account)
        #expect(saved["service"] as? String == defaultService)
        #expect(saved["app"] as? String == testApp)
        #expect(saved["size"] as? Int == value.utf8.count)
        let path = try #require(saved["item"] as? String)

        let got = try jsonObject(try pingKeyring(["get", "--account", account, "--json"]))
        #expect(Set(got.keys) == ["account", "service", "app", "item", "collection", "contentType", "size", "encrypted",
                                  "keyID", "backend", "appReadsIt", "encoding", "value"])
        #expect(got["keyID"] is NSNull)
        #expect(got["app"] as? String == testApp)
        #expect(got["encoding"] as? String == "json")
        #expect((got["value"] as? [String: Any])?["token"] as? String == "t\n\"quoted\" é", "embedded as JSON")
        #expect(got["item"] as? String == path)
        #expect(got["collection"] as? String == Harness.defaultCollectionPath)
        #expect(got["contentType"] as? String == "text/plain")
        #expect(got["encrypted"] as? String == "no")

        let deleted = try jsonObject(try pingKeyring(["delete", "--account", account, "--json"]))
        #expect(Set(deleted.keys) == ["account", "service", "app", "deleted", "backend"])
        #expect(deleted["app"] as? String == testApp, "the one app with items of the account")
        #expect(deleted["deleted"] as? Bool == true)
        #expect(try jsonObject(try pingKeyring(["--json", "delete", "--account", account]))["deleted"] as? Bool == false)

        let missing = try pingKeyring(["get", "--account", account, "--json"])
        #expect(missing.status == 1)
        let error = try #require(try jsonObject(missing)["error"] as? [String: Any])
        #expect(Set(error.keys) == ["kind", "message", "detail", "exitCode"])
        #expect(error["kind"] as? String == "notFound")
        #expect(error["exitCode"] as? Int == 1)
        #expect(missing.stderr.contains("error: notFound:"), "stderr has the message too")
    }
}
