import Foundation
import PingStorage
import Testing

/// Runs `ping-keyring` (built next to the test binaries) as a process.
@discardableResult
private func pingKeyring(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
                         timeout: TimeInterval = 60) throws -> ProcessResult {
    try run(Harness.binaryDirectory.appendingPathComponent("ping-keyring").path, arguments, input: input,
            environment: environment, timeout: timeout)
}

/// The top-level JSON object a `--json` run printed on stdout.
private func jsonObject(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: result.stdout)
    return try #require(object as? [String: Any], "stdout is one JSON object: \(result.output)",
                        sourceLocation: sourceLocation)
}

/// `list --json`, decoded with the documented field names and types.
private struct ListJSON: Decodable {
    struct Item: Decodable {
        var account: String
        var service: String
        var label: String
        var item: String
        var collection: String
        var created: String
        var modified: String
        var size: Int
        var contentType: String
        var encrypted: String
        var schema: String?
    }
    var collection: String
    var service: String?
    var items: [Item]
}

private let defaultService = KeychainConfiguration.defaultService
private let probeService = "com.pingidentity.ping-keyring.doctor"

extension Integration {
    @Suite("ping-keyring")
    struct PingKeyring {
        // MARK: save, get, list, delete

        @Test func saveGetListDelete() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            let json = #"{"accessToken":"secret-access-\#(UUID().uuidString)","expiresIn":3600}"#
            defer { try? SecretTool.clear(lookup(account)) }

            let saved = try pingKeyring(["save", "--account", account], input: Data((json + "\n").utf8))
            #expect(saved.status == 0, "\(saved.stderr)")
            #expect(saved.output.hasPrefix("Saved \(json.utf8.count) bytes for account '\(account)'"))
            #expect(saved.stderr.isEmpty)
            // What secret-tool finds: the JSON text (newline dropped), under PingStorage's attributes and label.
            #expect(try SecretTool.lookup(lookup(account)) == Data(json.utf8))
            let items = try SecretTool.search(lookup(account))
            try #require(items.count == 1)
            #expect(items[0].attributes == ["service": defaultService, "account": account, "username": account,
                                            "xdg:schema": "com.pingidentity.PingStorage"])
            #expect(items[0].label == "\(account) (\(defaultService))")

            let got = try pingKeyring(["get", "--account", account])
            #expect(got.status == 0)
            #expect(got.output == json + "\n")
            #expect(try pingKeyring(["get", "--account", account, "--raw"]).stdout == Data(json.utf8), "--raw adds nothing")

            let listed = try pingKeyring(["list"])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.output.contains("\n\(account)\n  service:    \(defaultService)\n"))
            #expect(listed.output.contains("  size:       \(json.utf8.count) bytes (text/plain)\n"))
            #expect(!listed.output.contains("secret-access"), "list never prints a secret")

            let deleted = try pingKeyring(["delete", "--account", account])
            #expect(deleted.status == 0)
            #expect(deleted.output == "Deleted the item of account '\(account)' (service \(defaultService)).\n")
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
            try Harness.requireHarness()
            let account = uniqueAccount()
            let storage = KeychainStorage<TestItem>(account: account)
            defer { try? SecretTool.clear(lookup(account)) }

            #expect(try pingKeyring(["save", "--account", account], input: Data(#"{"id":7,"name":"from the tool"}"#.utf8))
                .status == 0)
            #expect(try await storage.get() == TestItem(id: 7, name: "from the tool"))

            try await storage.save(item: TestItem(id: 8, name: "from the app"))
            let got = try pingKeyring(["get", "--account", account])
            #expect(try JSONDecoder().decode(TestItem.self, from: got.stdout) == TestItem(id: 8, name: "from the app"))
            try await storage.delete()
        }

        @Test func saveReplacesInPlaceAndCollapsesDuplicates() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }
            // Left by other tools: same service and account, told apart by an extra attribute.
            for copy in 1...2 {
                try SecretTool.store(label: "copy \(copy)", attributes: lookup(account).merging(["copy": "\(copy)"]) { $1 },
                                     secret: Data("\"copy \(copy)\"".utf8))
            }
            #expect(try SecretTool.search(lookup(account)).count == 2)
            #expect(try pingKeyring(["save", "--account", account], input: Data(#""one""#.utf8)).status == 0)
            let items = try SecretTool.search(lookup(account))
            #expect(items.count == 1, "the library's write rules: exactly one item remains")
            #expect(items.first?.secret == #""one""#)
            #expect(items.first?.label == "\(account) (\(defaultService))")
        }

        @Test func listFindsItemsOtherToolsWroteAndFiltersByService() async throws {
            try Harness.requireHarness()
            let plain = uniqueAccount("plain"), binary = uniqueAccount("binary"), ours = uniqueAccount("ours")
            let service = "com.example.ping-keyring-test.\(UUID().uuidString.prefix(8))"
            defer {
                for account in [plain, binary] { try? SecretTool.clear(lookup(account)) }
                try? SecretTool.clear(lookup(ours, service: service))
            }
            try SecretTool.store(label: "by secret-tool", attributes: lookup(plain), secret: Data(#"{"k":"v"}"#.utf8))
            try SecretTool.store(label: "binary", attributes: lookup(binary), secret: Data("not json at all".utf8))
            #expect(try pingKeyring(["save", "--account", ours, "--service", service], input: Data("42".utf8)).status == 0)

            let result = try pingKeyring(["list", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let list = try JSONDecoder().decode(ListJSON.self, from: result.stdout)
            #expect(list.collection == "/org/freedesktop/secrets/collection/login")
            #expect(list.service == nil)
            let byAccount = Dictionary(list.items.map { ($0.account, $0) }, uniquingKeysWith: { first, _ in first })
            let foreign = try #require(byAccount[plain], "items of the default service written by other tools")
            #expect(foreign.schema == nil)
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
            #expect(!result.output.contains("not json at all") && !result.output.contains(#""k""#), "no secrets")

            let filtered = try JSONDecoder().decode(
                ListJSON.self, from: try pingKeyring(["list", "--service", service, "--json"]).stdout)
            #expect(filtered.service == service)
            #expect(filtered.items.map(\.account) == [ours])
        }

        @Test func getRefusesAValueThatIsNotJSONUnlessRaw() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }
            try SecretTool.store(label: "bytes", attributes: lookup(account), secret: Data("opaque bytes".utf8))

            let refused = try pingKeyring(["get", "--account", account])
            #expect(refused.status == 4)
            #expect(refused.output.isEmpty)
            #expect(refused.stderr.contains("error: corruptItem:"))
            #expect(refused.stderr.contains("--raw"), "the message says what to do")
            #expect(!refused.stderr.contains("opaque"), "the message never quotes the value")

            #expect(try pingKeyring(["get", "--account", account, "--raw"]).stdout == Data("opaque bytes".utf8))
            let raw = try jsonObject(try pingKeyring(["get", "--account", account, "--raw", "--json"]))
            #expect(raw["value"] as? String == "opaque bytes")
            #expect(raw["encoding"] as? String == "utf8")
            #expect(raw["encrypted"] as? String == "unknown")
            #expect(try SecretTool.lookup(lookup(account)) == Data("opaque bytes".utf8), "left unchanged")
        }

        @Test func jsonOutputOfEveryCommand() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }
            let value = #"{"token":"t\n\"quoted\" é"}"#

            let saved = try jsonObject(try pingKeyring(["save", "--json", "--account", account], input: Data(value.utf8)))
            #expect(Set(saved.keys) == ["account", "service", "item", "collection", "size"])
            #expect(saved["account"] as? String == account)
            #expect(saved["service"] as? String == defaultService)
            #expect(saved["size"] as? Int == value.utf8.count)
            let path = try #require(saved["item"] as? String)

            let got = try jsonObject(try pingKeyring(["get", "--account", account, "--json"]))
            #expect(Set(got.keys) == ["account", "service", "item", "collection", "contentType", "size", "encrypted",
                                      "encoding", "value"])
            #expect(got["value"] as? String == value)
            #expect(got["item"] as? String == path)
            #expect(got["collection"] as? String == "/org/freedesktop/secrets/collection/login")
            #expect(got["contentType"] as? String == "text/plain")
            #expect(got["encrypted"] as? String == "no")

            let deleted = try jsonObject(try pingKeyring(["delete", "--account", account, "--json"]))
            #expect(Set(deleted.keys) == ["account", "service", "deleted"])
            #expect(deleted["deleted"] as? Bool == true)
            #expect(try jsonObject(try pingKeyring(["--json", "delete", "--account", account]))["deleted"] as? Bool == false)

            let missing = try pingKeyring(["get", "--account", account, "--json"])
            #expect(missing.status == 1)
            let error = try #require(try jsonObject(missing)["error"] as? [String: Any])
            #expect(Set(error.keys) == ["kind", "message", "exitCode"])
            #expect(error["kind"] as? String == "notFound")
            #expect(error["exitCode"] as? Int == 1)
            #expect(missing.stderr.contains("error: notFound:"), "stderr has the message too")
        }

        // MARK: Command line

        @Test func helpForEveryCommandAndUsageErrors() async throws {
            try Harness.requireHarness()
            let overview = try pingKeyring(["--help"])
            #expect(overview.status == 0)
            for command in ["list", "get", "save", "delete", "doctor"] {
                #expect(overview.output.contains("  \(command) "))
                let help = try pingKeyring([command, "--help"])
                #expect(help.status == 0)
                #expect(help.output.hasPrefix("Usage: ping-keyring \(command)"))
                #expect(help.output.contains("Exit status:"))
            }
            for bad in [[], ["get"], ["frobnicate"], ["list", "--bogus"], ["get", "--account"], ["doctor", "extra"],
                        ["get", "--account", "A", "--timeout", "0"]] {
                let result = try pingKeyring(bad)
                #expect(result.status == 2, "\(bad)")
                #expect(result.stderr.hasPrefix("ping-keyring: error: usage:"), "\(bad): \(result.stderr)")
                #expect(result.output.isEmpty)
            }
            let json = try pingKeyring(["--json", "get"])
            #expect((try jsonObject(json)["error"] as? [String: Any])?["kind"] as? String == "usage")
        }

        @Test func saveRefusesBadInputAndEncryptIsNotAvailable() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            let notJSON = try pingKeyring(["save", "--account", account], input: Data("plain text".utf8))
            #expect(notJSON.status == 2)
            #expect(notJSON.stderr.contains("error: invalidInput: stdin is not JSON text"))

            let encrypt = try pingKeyring(["save", "--account", account, "--encrypt"], input: Data("\"v\"".utf8))
            #expect(encrypt.status == 5)
            #expect(encrypt.stderr.contains("error: notAvailable:"))
            #expect(encrypt.stderr.contains("SecuredKeyEncryptor, which is not available in this build"))
            #expect(try SecretTool.lookup(lookup(account)) == nil, "nothing was written")
        }

        @Test func collectionOption() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }
            let saved = try jsonObject(try pingKeyring(["save", "--account", account, "--collection", "session", "--json"],
                                                       input: Data("1".utf8)))
            #expect(saved["collection"] as? String == "/org/freedesktop/secrets/collection/session")
            #expect(try SecretTool.lookup(lookup(account)) == Data("1".utf8))
            let inSession = try JSONDecoder().decode(
                ListJSON.self, from: try pingKeyring(["list", "--collection", "session", "--json"]).stdout)
            #expect(inSession.collection == "/org/freedesktop/secrets/collection/session")
            #expect(inSession.items.contains { $0.account == account })
            let inDefault = try JSONDecoder().decode(ListJSON.self, from: try pingKeyring(["list", "--json"]).stdout)
            #expect(!inDefault.items.contains { $0.account == account })
            #expect(try pingKeyring(["get", "--account", account]).status == 1, "not in the default collection")
            #expect(try pingKeyring(["get", "--account", account, "--collection", "session"]).output == "1\n")

            let missing = try pingKeyring(["list", "--collection", "no-such-alias"])
            #expect(missing.status == 3)
            #expect(missing.stderr.contains("error: collectionNotFound:"))
            #expect(missing.stderr.contains("/org/freedesktop/secrets/collection/login"), "lists the collections")
        }

        // MARK: doctor

        @Test func doctorInAHealthyEnvironment() async throws {
            try Harness.requireHarness()
            let result = try pingKeyring(["doctor"])
            #expect(result.status == 0, "\(result.output)\(result.stderr)")
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines.first == "ping-keyring doctor (collection: alias 'default')")
            let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] ?? "?"
            #expect(lines.contains { $0.hasPrefix("ok    session bus ") && $0.hasSuffix(address) })
            #expect(lines.contains { $0.hasPrefix("ok    Secret Service ") && $0.contains("GNOME Keyring (gnome-keyring-d, pid ") })
            #expect(lines.contains { $0.hasPrefix("ok    collection ")
                && $0.hasSuffix("alias 'default' is /org/freedesktop/secrets/collection/login (Login)") })
            #expect(lines.contains { $0.hasPrefix("ok    unlocked ") })
            #expect(lines.contains { $0.hasPrefix("ok    transport ") && $0.contains("dh-ietf1024-sha256-aes128-cbc-pkcs7") })
            #expect(lines.contains { $0.hasPrefix("ok    write/read/delete ") })
            #expect(lines.contains { $0.hasPrefix("skip  encryption key ")
                && $0.hasSuffix("skipped: SecuredKeyEncryptor not available in this build") })
            #expect(lines.last == "All checks passed.")
            #expect(try SecretTool.search(["service": probeService]).isEmpty, "the probe cleaned up")

            let json = try jsonObject(try pingKeyring(["doctor", "--json"]))
            #expect(json["ok"] as? Bool == true)
            #expect(json["exitCode"] as? Int == 0)
            #expect(json["busAddress"] as? String == address)
            let provider = try #require(json["provider"] as? [String: Any])
            #expect(provider["name"] as? String == "GNOME Keyring")
            #expect(provider["pid"] as? Int == Int(try run(Harness.ctlPath, ["pid"]).output.trimmingCharacters(in: .whitespacesAndNewlines)))
            let checks = try #require(json["checks"] as? [[String: Any]])
            #expect(checks.map { $0["id"] as? String } == ["sessionBus", "provider", "collection", "unlocked", "transport",
                                                          "probe", "encryptionKey"])
            #expect(checks.map { $0["status"] as? String } == ["pass", "pass", "pass", "pass", "pass", "pass", "skip"])
            #expect(try SecretTool.search(["service": probeService]).isEmpty)
        }

        @Test func doctorWithoutASessionBus() async throws {
            try Harness.requireHarness()
            var environment = ProcessInfo.processInfo.environment
            let address = "unix:path=\(environment["DBUS_TEST_DIR"]!)/no-such-bus"
            environment["DBUS_SESSION_BUS_ADDRESS"] = address
            environment["DISPLAY"] = nil
            let started = ContinuousClock.now
            let result = try pingKeyring(["doctor"], environment: environment, timeout: 30)
            #expect(ContinuousClock.now - started < .seconds(10), "a diagnosis, not a hang")
            #expect(result.status == 3)
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines[1].hasPrefix("FAIL  session bus "))
            #expect(lines[1].contains(address), "names the address it tried")
            #expect(lines[1].contains("no D-Bus session bus"), "the library's message")
            #expect(lines[2].contains("fix: ") && lines[2].contains("DBUS_SESSION_BUS_ADDRESS"))
            #expect(lines.filter { $0.hasPrefix("skip ") }.count == 6)
            #expect(lines.last == "1 check failed (exit status 3).")

            let json = try jsonObject(try pingKeyring(["doctor", "--json"], environment: environment, timeout: 30))
            #expect(json["ok"] as? Bool == false)
            #expect(json["exitCode"] as? Int == 3)
            let checks = try #require(json["checks"] as? [[String: Any]])
            #expect(checks[0]["status"] as? String == "fail")
            #expect(checks[0]["errorKind"] as? String == "noSessionBus")
            #expect(checks[0]["fix"] is String)

            let list = try pingKeyring(["list"], environment: environment, timeout: 30)
            #expect(list.status == 3)
            #expect(list.stderr.hasPrefix("ping-keyring: error: noSessionBus:"))
        }

        @Test func doctorWithoutASecretServiceProvider() async throws {
            try Harness.requireHarness()
            let config = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]! + "/session.conf"
            let binary = Harness.binaryDirectory.appendingPathComponent("ping-keyring").path
            let result = try run("dbus-run-session", ["--config-file=\(config)", "--", binary, "doctor"], timeout: 30)
            #expect(result.status == 3)
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines[1].hasPrefix("ok    session bus "))
            #expect(lines[2].hasPrefix("FAIL  Secret Service "))
            #expect(lines[2].contains("no Secret Service on the session bus"))
            #expect(lines[3].contains("fix: start a Secret Service provider"))
            #expect(lines.filter { $0.hasPrefix("skip ") }.count == 5)

            let json = try run("dbus-run-session", ["--config-file=\(config)", "--", binary, "doctor", "--json"], timeout: 30)
            let checks = try #require(try jsonObject(json)["checks"] as? [[String: Any]])
            #expect(checks.map { $0["status"] as? String } == ["pass", "fail", "skip", "skip", "skip", "skip", "skip"])
            #expect(checks[1]["errorKind"] as? String == "noSecretService")
            #expect(try jsonObject(json)["provider"] is NSNull)
        }

        @Test func doctorWithALockedCollection() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            try SecretTool.store(label: "locked away", attributes: lookup(account), secret: Data("\"kept\"".utf8))
            try Harness.ctl("lock")
            defer {
                try? Harness.ctl("restart")
                try? SecretTool.clear(lookup(account))
            }

            let result = try pingKeyring(["doctor"])
            #expect(result.status == 3)
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("ok    collection ") })
            let locked = try #require(lines.firstIndex { $0.hasPrefix("FAIL  unlocked ") })
            #expect(lines[locked].hasSuffix("/org/freedesktop/secrets/collection/login is locked"))
            #expect(lines[locked + 1].contains("fix: unlock the keyring"))
            #expect(lines.contains { $0.hasPrefix("skip  write/read/delete ") }, "no probe (and no prompt) when locked")
            #expect(lines.last == "1 check failed (exit status 3).")

            let json = try jsonObject(try pingKeyring(["doctor", "--json"]))
            let checks = try #require(json["checks"] as? [[String: Any]])
            #expect(checks.map { $0["status"] as? String } == ["pass", "pass", "pass", "fail", "pass", "skip", "skip"])
            #expect(checks[3]["errorKind"] as? String == "locked")

            // The other commands say "locked" (exit 3), never "not found".
            for arguments in [["list", "--no-prompt"], ["get", "--account", account, "--no-prompt"],
                              ["get", "--account", uniqueAccount(), "--no-prompt"]] {
                let failed = try pingKeyring(arguments)
                #expect(failed.status == 3, "\(arguments)")
                #expect(failed.stderr.hasPrefix("ping-keyring: error: locked:"), "\(arguments): \(failed.stderr)")
                #expect(failed.stderr.contains("unlock the keyring"), "the library's hint")
            }

            try Harness.ctl("restart")
            #expect(try pingKeyring(["doctor"]).status == 0, "healthy again once unlocked")
            #expect(try pingKeyring(["get", "--account", account]).output == "\"kept\"\n")
        }

        @Test func aStoppedDaemonTimesOutAtTheGivenDeadline() async throws {
            try Harness.requireHarness()
            try Harness.ctl("suspend")
            defer { try? Harness.ctl("resume") }
            let started = ContinuousClock.now
            let result = try pingKeyring(["get", "--account", uniqueAccount(), "--timeout", "1"], timeout: 30)
            #expect(ContinuousClock.now - started < .seconds(8))
            #expect(result.status == 3)
            #expect(result.stderr.hasPrefix("ping-keyring: error: timedOut:"), "\(result.stderr)")
        }
    }
}
