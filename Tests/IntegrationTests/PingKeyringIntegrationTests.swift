import Foundation
import PingStorage
import SecretService
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
        var keyID: String?
        var schema: String?
    }
    var collection: String
    var service: String?
    var items: [Item]
}

private let defaultService = KeychainConfiguration.defaultService
private let probeService = "com.pingidentity.ping-keyring.doctor"
private let keySchema = "com.pingidentity.PingStorage.SecuredKey"
/// The collection the key tests fill: `session` where the provider has one, else the default.
private var sessionCollection: String {
    Harness.hasSessionCollection ? "/org/freedesktop/secrets/collection/session" : Harness.defaultCollectionPath
}

/// The key id an envelope names: bytes 5..<21, as 32 lowercase hex digits (README, "Encryption").
private func keyID(of envelope: Data) -> String {
    envelope.dropFirst(5).prefix(16).map { String(format: "%02x", $0) }.joined()
}

private let envelopeMagic = Data([0x89, 0x50, 0x53, 0x45])

/// The key items of the session collection (secret-tool cannot tell collections apart: it
/// prints item paths without theirs).
private func sessionKeyItems(_ attributes: [String: String] = [:]) async throws -> [ItemPath] {
    try await SecretServiceClient().searchItems(matching: attributes.merging(["xdg:schema": keySchema]) { $1 },
                                                in: Harness.scratchCollection).all
}

/// Deletes the key items of the session collection, so that it has no key (the login
/// collection's keys, which other tests' processes use, are left alone).
private func clearSessionKeys() async throws {
    let client = SecretServiceClient()
    for path in try await sessionKeyItems() { try await client.deleteItem(path) }
}

/// An app's encryptor with a key cache of its own. `SecuredKeyEncryptor()` instances share one
/// cache per configuration in this process, and another test may have deleted (with secret-tool)
/// the key that cache holds; the service does not matter to the encryptor (the key is found by
/// its schema in the collection; KeychainStorage supplies the service it binds to).
private func appEncryptorWithAFreshKeyCache() throws -> SecuredKeyEncryptor {
    try #require(SecuredKeyEncryptor(configuration: KeychainConfiguration(service: "fresh-cache-\(UUID().uuidString)")))
}

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
            #expect(items[0].storedAttributes == ["service": defaultService, "account": account, "username": account,
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

        @Test func getPrintsOneTrailingNewlineAndEmbedsJSON() async throws {
            try Harness.requireHarness()
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
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }
            let value = #"{"token":"t\n\"quoted\" é"}"#

            let saved = try jsonObject(try pingKeyring(["save", "--json", "--account", account], input: Data(value.utf8)))
            #expect(Set(saved.keys) == ["account", "service", "item", "collection", "size", "encrypted", "keyID"])
            #expect(saved["encrypted"] as? String == "no")
            #expect(saved["keyID"] is NSNull)
            #expect(saved["account"] as? String == account)
            #expect(saved["service"] as? String == defaultService)
            #expect(saved["size"] as? Int == value.utf8.count)
            let path = try #require(saved["item"] as? String)

            let got = try jsonObject(try pingKeyring(["get", "--account", account, "--json"]))
            #expect(Set(got.keys) == ["account", "service", "item", "collection", "contentType", "size", "encrypted",
                                      "keyID", "encoding", "value"])
            #expect(got["keyID"] is NSNull)
            #expect(got["encoding"] as? String == "json")
            #expect((got["value"] as? [String: Any])?["token"] as? String == "t\n\"quoted\" é", "embedded as JSON")
            #expect(got["item"] as? String == path)
            #expect(got["collection"] as? String == Harness.defaultCollectionPath)
            #expect(got["contentType"] as? String == "text/plain")
            #expect(got["encrypted"] as? String == "no")

            let deleted = try jsonObject(try pingKeyring(["delete", "--account", account, "--json"]))
            #expect(Set(deleted.keys) == ["account", "service", "deleted"])
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

        // MARK: Encryption

        @Test func saveEncryptThenGetPrintsTheValue() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            let secret = "secret-access-\(UUID().uuidString)"
            let json = #"{"accessToken":"\#(secret)","expiresIn":3600}"#
            defer { try? SecretTool.clear(lookup(account)) }

            let saved = try pingKeyring(["save", "--account", account, "--encrypt"], input: Data((json + "\n").utf8))
            #expect(saved.status == 0, "\(saved.stderr)")
            #expect(saved.stderr.isEmpty)
            // In the keyring: the envelope (magic, version 1, key id, …), 49 bytes longer than the JSON,
            // with PingStorage's attributes and label; the key it names is an item of its own.
            let stored = try #require(try SecretTool.lookup(lookup(account)))
            #expect(stored.prefix(4) == envelopeMagic)
            #expect(stored[4] == 1)
            #expect(stored.count == json.utf8.count + 49)
            #expect(stored.range(of: Data(secret.utf8)) == nil, "no plaintext in the stored bytes")
            let key = keyID(of: stored)
            #expect(try SecretTool.search(["xdg:schema": keySchema, "key-id": key]).count == 1)
            #expect(saved.output.hasPrefix("Saved \(json.utf8.count) bytes for account '\(account)' (service \(defaultService)) "
                                           + "in \(Harness.defaultCollectionPath)/"))
            #expect(saved.output.hasSuffix(", encrypted with SecuredKeyEncryptor (key \(key)).\n"))
            let items = try SecretTool.search(lookup(account))
            #expect(items.count == 1)
            #expect(items.first?.storedAttributes == ["service": defaultService, "account": account, "username": account,
                                                "xdg:schema": "com.pingidentity.PingStorage"])
            #expect(items.first?.label == "\(account) (\(defaultService))")

            let got = try pingKeyring(["get", "--account", account])
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.output == json + "\n", "decrypted")
            #expect(try pingKeyring(["get", "--account", account, "--raw"]).stdout == stored, "--raw: the envelope as stored")

            let gotJSON = try jsonObject(try pingKeyring(["get", "--account", account, "--json"]))
            #expect((gotJSON["value"] as? [String: Any])?["accessToken"] as? String == secret, "decrypted, as JSON")
            #expect(gotJSON["encrypted"] as? String == "yes")
            #expect(gotJSON["keyID"] as? String == key)
            #expect(gotJSON["encoding"] as? String == "json")
            let rawJSON = try jsonObject(try pingKeyring(["get", "--account", account, "--json", "--raw"]))
            #expect(rawJSON["encoding"] as? String == "base64")
            #expect(rawJSON["value"] as? String == stored.base64EncodedString())

            let savedJSON = try jsonObject(try pingKeyring(["save", "--account", account, "--encrypt", "--json"],
                                                           input: Data(json.utf8)))
            #expect(savedJSON["encrypted"] as? String == "yes")
            #expect(savedJSON["keyID"] as? String == key, "the same (oldest) key for every save")
            #expect(savedJSON["size"] as? Int == json.utf8.count)
            #expect(try SecretTool.lookup(lookup(account)) != stored, "a fresh nonce on every save")
            #expect(try SecretTool.search(lookup(account)).count == 1, "replaced in place")
        }

        @Test func listShowsAnEncryptedItemAsEncryptedWithItsKey() async throws {
            try Harness.requireHarness()
            let encrypted = uniqueAccount("encrypted"), plain = uniqueAccount("plain")
            defer { for account in [encrypted, plain] { try? SecretTool.clear(lookup(account)) } }
            #expect(try pingKeyring(["save", "--account", encrypted, "--encrypt"], input: Data(#""hidden""#.utf8)).status == 0)
            #expect(try pingKeyring(["save", "--account", plain], input: Data(#""shown""#.utf8)).status == 0)
            let key = keyID(of: try #require(try SecretTool.lookup(lookup(encrypted))))

            let result = try pingKeyring(["list", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let list = try JSONDecoder().decode(ListJSON.self, from: result.stdout)
            let byAccount = Dictionary(list.items.map { ($0.account, $0) }, uniquingKeysWith: { first, _ in first })
            let item = try #require(byAccount[encrypted])
            #expect(item.encrypted == "yes")
            #expect(item.keyID == key)
            #expect(item.size == #""hidden""#.utf8.count + 49, "the size of the envelope as stored")
            #expect(item.schema == "com.pingidentity.PingStorage")
            #expect(byAccount[plain]?.encrypted == "no")
            #expect(byAccount[plain]?.keyID == nil)
            #expect(!list.items.contains { $0.account.isEmpty }, "key items (no account) are not listed")
            #expect(!result.output.contains("hidden"))

            let human = try pingKeyring(["list"]).output
            #expect(human.contains("\n\(encrypted)\n"))
            #expect(human.contains("  encrypted:  yes (SecuredKeyEncryptor, key \(key))\n"))
            #expect(human.contains("  encrypted:  no (JSON text)\n"))
        }

        @Test func appsWithSecuredKeyEncryptorAndTheToolReadEachOthersEncryptedItems() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }

            // The tool writes, an app reads with SecuredKeyEncryptor(), as in the README.
            #expect(try pingKeyring(["save", "--account", account, "--encrypt"],
                                    input: Data(#"{"id":7,"name":"from the tool"}"#.utf8)).status == 0)
            let app = KeychainStorage<TestItem>(account: account, encryptor: try #require(SecuredKeyEncryptor()))
            #expect(try await app.get() == TestItem(id: 7, name: "from the tool"))
            let plainApp = KeychainStorage<TestItem>(account: account)
            await #expect(throws: KeychainError.self, "an app without the encryptor cannot decode it") {
                _ = try await plainApp.get()
            }

            // An app writes, the tool reads.
            let writer = KeychainStorage<TestItem>(account: account, encryptor: try appEncryptorWithAFreshKeyCache())
            try await writer.save(item: TestItem(id: 8, name: "from the app"))
            let stored = try #require(try SecretTool.lookup(lookup(account)))
            #expect(stored.prefix(4) == envelopeMagic)
            let got = try pingKeyring(["get", "--account", account])
            #expect(got.status == 0, "\(got.stderr)")
            #expect(try JSONDecoder().decode(TestItem.self, from: got.stdout) == TestItem(id: 8, name: "from the app"))

            // With another service: the tool binds to it as KeychainStorage does.
            let service = "com.example.ping-keyring-test.\(UUID().uuidString.prefix(8))"
            defer { try? SecretTool.clear(lookup(account, service: service)) }
            #expect(try pingKeyring(["save", "--account", account, "--service", service, "--encrypt"],
                                    input: Data(#"{"id":9,"name":"other service"}"#.utf8)).status == 0)
            let other = KeychainStorage<TestItem>(account: account, encryptor: try #require(SecuredKeyEncryptor()),
                                                  configuration: KeychainConfiguration(service: service))
            #expect(try await other.get() == TestItem(id: 9, name: "other service"))
        }

        @Test func getRefusesACopiedOrTamperedEnvelopeAndLeavesIt() async throws {
            try Harness.requireHarness()
            let victim = uniqueAccount("victim"), thief = uniqueAccount("thief"), tampered = uniqueAccount("tampered"),
                future = uniqueAccount("future")
            defer { for account in [victim, thief, tampered, future] { try? SecretTool.clear(lookup(account)) } }
            #expect(try pingKeyring(["save", "--account", victim, "--encrypt"], input: Data(#""victim's token""#.utf8))
                .status == 0)
            let stored = try #require(try SecretTool.lookup(lookup(victim)))

            try await SecretTool.storeBinary(label: "copied", attributes: lookup(thief), secret: stored)
            var changed = stored
            changed[changed.count - 20] ^= 0x01
            try await SecretTool.storeBinary(label: "changed", attributes: lookup(tampered), secret: changed)
            var newer = stored
            newer[4] = 2
            try await SecretTool.storeBinary(label: "newer", attributes: lookup(future), secret: newer)

            for (account, kind, bytes) in [(thief, "failedToDecrypt", stored), (tampered, "failedToDecrypt", changed),
                                           (future, "unsupportedFormat", newer)] {
                let result = try pingKeyring(["get", "--account", account])
                #expect(result.status == 4, "\(account): \(result.stderr)")
                #expect(result.output.isEmpty)
                #expect(result.stderr.hasPrefix("ping-keyring: error: \(kind): the item for account '\(account)'"),
                        "\(result.stderr)")
                #expect(!result.stderr.contains("victim's token"), "never the secret")
                #expect(try SecretTool.lookup(lookup(account)) == bytes, "left unchanged")
                let json = try jsonObject(try pingKeyring(["get", "--account", account, "--json"]))
                #expect((json["error"] as? [String: Any])?["exitCode"] as? Int == 4)
            }
            #expect(try pingKeyring(["get", "--account", victim]).output == "\"victim's token\"\n", "the original still reads")
        }

        @Test func getAfterTheKeyWasDeletedSaysKeyNotFoundAndKeepsTheItem() async throws {
            try Harness.requireHarness()
            // In the session collection, so that deleting its key cannot affect the login
            // collection's key, which this process and other tests use.
            let account = uniqueAccount()
            var keys: [String] = []
            defer {
                try? SecretTool.clear(lookup(account))
                for key in keys { try? SecretTool.clear(["xdg:schema": keySchema, "key-id": key]) }
            }
            let session = ["--collection", Harness.scratchCollectionName]
            #expect(try pingKeyring(["save", "--account", account, "--encrypt"] + session, input: Data(#""orphan""#.utf8))
                .status == 0)
            let stored = try #require(try SecretTool.lookup(lookup(account)))
            let key = keyID(of: stored)
            keys.append(key)
            #expect(try await sessionKeyItems(["key-id": key]).count == 1, "the key is made in the collection used")
            #expect(try pingKeyring(["get", "--account", account] + session).output == "\"orphan\"\n")

            try SecretTool.clear(["xdg:schema": keySchema, "key-id": key])
            let result = try pingKeyring(["get", "--account", account] + session)
            #expect(result.status == 4)
            #expect(result.output.isEmpty)
            #expect(result.stderr.hasPrefix("ping-keyring: error: keyNotFound: the item for account '\(account)'"),
                    "\(result.stderr)")
            #expect(result.stderr.contains("The encryption key \(key) this item was encrypted with is not in the keyring"),
                    "the library's message, naming the key")
            #expect(!result.stderr.contains("orphan"))
            #expect(try SecretTool.lookup(lookup(account)) == stored, "the item is left unchanged")
            let json = try jsonObject(try pingKeyring(["get", "--account", account, "--json"] + session))
            let error = try #require(json["error"] as? [String: Any])
            #expect(error["kind"] as? String == "keyNotFound")
            #expect(error["exitCode"] as? Int == 4)
            #expect(try pingKeyring(["get", "--account", account, "--raw"] + session).stdout == stored, "--raw still works")
            let listed = try JSONDecoder().decode(ListJSON.self, from: try pingKeyring(["list", "--json"] + session).stdout)
            #expect(listed.items.first { $0.account == account }?.keyID == key, "list names the missing key")

            // New saves work, with a new key.
            let again = try jsonObject(try pingKeyring(["save", "--account", account, "--encrypt", "--json"] + session,
                                                       input: Data(#""fresh""#.utf8)))
            let newKey = try #require(again["keyID"] as? String)
            keys.append(newKey)
            #expect(newKey != key)
            #expect(try pingKeyring(["get", "--account", account] + session).output == "\"fresh\"\n")
        }

        @Test func doctorReportsTheEncryptionKeys() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }

            // The login collection: whichever key the tool encrypts with is listed.
            #expect(try pingKeyring(["save", "--account", account, "--encrypt"], input: Data("1".utf8)).status == 0)
            let key = keyID(of: try #require(try SecretTool.lookup(lookup(account))))
            let result = try pingKeyring(["doctor"])
            #expect(result.status == 0, "\(result.output)")
            let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("ok    encryption key ") })
            #expect(line.contains(" present (id") && line.contains(key), "\(line)")
            let checks = try #require(try jsonObject(try pingKeyring(["doctor", "--json"]))["checks"] as? [[String: Any]])
            #expect(checks.last?["id"] as? String == "encryptionKey")
            #expect(checks.last?["status"] as? String == "pass")
            #expect((checks.last?["detail"] as? String)?.contains(key) == true)
            try SecretTool.clear(lookup(account))

            // The session collection, emptied of keys: none yet, and doctor creates none.
            try await clearSessionKeys()
            let empty = try pingKeyring(["doctor", "--collection", Harness.scratchCollectionName])
            #expect(empty.status == 0, "\(empty.output)")
            #expect(empty.output.contains("ok    encryption key     no key yet: one is created on the first encrypted save\n"))
            #expect(try await sessionKeyItems().isEmpty, "the doctor created no key")

            // One key, then a damaged one (5 bytes instead of 32): exit 4, with the fix.
            #expect(try pingKeyring(["save", "--account", account, "--encrypt", "--collection", Harness.scratchCollectionName],
                                    input: Data("2".utf8)).status == 0)
            let sessionKey = keyID(of: try #require(try SecretTool.lookup(lookup(account))))
            let damagedID = String(repeating: "d", count: 32)
            defer {
                for key in [sessionKey, damagedID] { try? SecretTool.clear(["xdg:schema": keySchema, "key-id": key]) }
            }
            #expect(try pingKeyring(["doctor", "--collection", Harness.scratchCollectionName]).output
                .contains("ok    encryption key     1 key present (id \(sessionKey))\n"))
            try SecretTool.clear(["xdg:schema": keySchema, "key-id": sessionKey])
            let stored = try SecretTool.retryingRejectedKeys { try run("secret-tool", ["store", "--label=damaged", "--collection=\(sessionCollection)",
                                                 "xdg:schema", keySchema, "key-id", damagedID], input: Data("short".utf8)) }
            #expect(stored.status == 0, "\(stored.stderr)")
            let damaged = try pingKeyring(["doctor", "--collection", Harness.scratchCollectionName])
            #expect(damaged.status == 4)
            let lines = damaged.output.split(separator: "\n").map(String.init)
            let failed = try #require(lines.firstIndex { $0.hasPrefix("FAIL  encryption key ") })
            #expect(lines[failed].contains("key \(damagedID) (\(sessionCollection)/"))
            #expect(lines[failed].contains("holds 5 bytes, not 32"))
            #expect(!lines[failed].contains("short"), "never the key's bytes")
            #expect(lines[failed + 1].contains("fix: ") && lines[failed + 1].contains("key-id \(damagedID)"))
            #expect(lines.last == "1 check failed (exit status 4).")
            // What an encrypted save then meets: the library's error for that key item, exit 4.
            let save = try pingKeyring(["save", "--account", account, "--encrypt", "--collection", Harness.scratchCollectionName],
                                       input: Data("3".utf8))
            #expect(save.status == 4)
            #expect(save.stderr.hasPrefix("ping-keyring: error: unsupportedFormat: The encryption key item"), "\(save.stderr)")
        }

        // MARK: Command line

        @Test func helpForEveryCommandAndUsageErrors() async throws {
            try Harness.requireHarness()
            let overview = try pingKeyring(["--help"])
            #expect(overview.status == 0)
            #expect(overview.output.contains("Exit status:"))
            for command in ["list", "get", "save", "delete", "doctor"] {
                #expect(overview.output.contains("  \(command) "))
                let help = try pingKeyring([command, "--help"])
                #expect(help.status == 0)
                #expect(help.output.hasPrefix("Usage: ping-keyring \(command)"))
                #expect(help.output.hasSuffix("See 'ping-keyring --help' for exit statuses.\n"))
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
            for flag in ["--version", "-V"] {
                let version = try pingKeyring([flag])
                #expect(version.status == 0)
                #expect(version.output.hasPrefix("ping-keyring ") && version.output.split(separator: "\n").count == 1)
            }
            let typo = try pingKeyring(["lst"])
            #expect(typo.stderr.hasPrefix("ping-keyring: error: usage: unknown command 'lst'; did you mean 'list'?"))
            #expect(try pingKeyring(["-j", "-g"]).stdout.isEmpty == false, "-j makes a usage error JSON too")
        }

        @Test func saveRefusesBadInputWithOrWithoutEncrypt() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            for extra in [[], ["--encrypt"]] {
                let notJSON = try pingKeyring(["save", "--account", account] + extra, input: Data("plain text".utf8))
                #expect(notJSON.status == 2, "\(extra)")
                #expect(notJSON.stderr.contains("error: invalidInput: stdin is not JSON text"), "\(extra)")
            }
            #expect(try SecretTool.lookup(lookup(account)) == nil, "nothing was written")
        }

        @Test func collectionOption() async throws {
            try Harness.requireHarness()
            let account = uniqueAccount()
            defer { try? SecretTool.clear(lookup(account)) }
            guard Harness.hasSessionCollection else {
                // One collection only (KeePassXC, KWallet): --collection by path reaches it, and a
                // missing alias is a clear error naming it.
                let path = Harness.defaultCollectionPath
                let saved = try jsonObject(try pingKeyring(["save", "--account", account, "--collection", path, "--json"],
                                                           input: Data("1".utf8)))
                #expect(saved["collection"] as? String == path)
                #expect(try pingKeyring(["get", "--account", account, "--collection", path]).output == "1\n")
                let noSession = try pingKeyring(["list", "--collection", "session"])
                #expect(noSession.status == 3)
                #expect(noSession.stderr.contains("error: collectionNotFound:") && noSession.stderr.contains(path))
                return
            }
            let saved = try jsonObject(try pingKeyring(["save", "--account", account, "--collection", Harness.scratchCollectionName, "--json"],
                                                       input: Data("1".utf8)))
            #expect(saved["collection"] as? String == "/org/freedesktop/secrets/collection/session")
            #expect(try SecretTool.lookup(lookup(account)) == Data("1".utf8))
            let inSession = try JSONDecoder().decode(
                ListJSON.self, from: try pingKeyring(["list", "--collection", Harness.scratchCollectionName, "--json"]).stdout)
            #expect(inSession.collection == "/org/freedesktop/secrets/collection/session")
            #expect(inSession.items.contains { $0.account == account })
            let inDefault = try JSONDecoder().decode(ListJSON.self, from: try pingKeyring(["list", "--json"]).stdout)
            #expect(!inDefault.items.contains { $0.account == account })
            #expect(try pingKeyring(["get", "--account", account]).status == 1, "not in the default collection")
            #expect(try pingKeyring(["get", "--account", account, "--collection", Harness.scratchCollectionName]).output == "1\n")

            let missing = try pingKeyring(["list", "--collection", "no-such-alias"])
            #expect(missing.status == 3)
            #expect(missing.stderr.contains("error: collectionNotFound:"))
            #expect(!missing.stderr.contains("below"), "no promise of a list that is not there: \(missing.stderr)")
            #expect(missing.stderr.contains("\n  details: collections: ") && missing.stderr.contains(Harness.defaultCollectionPath),
                    "the paths that exist, on the details line: \(missing.stderr)")
        }

        // MARK: doctor

        @Test func doctorInAHealthyEnvironment() async throws {
            try Harness.requireHarness()
            let result = try pingKeyring(["doctor"])
            #expect(result.status == 0, "\(result.output)\(result.stderr)")
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines.first == "ping-keyring doctor (collection: the default collection)")
            let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] ?? "?"
            #expect(lines.contains { $0.hasPrefix("ok    session bus ") && $0.hasSuffix(address) })
            #expect(lines.contains { $0.hasPrefix("ok    Secret Service ") && $0.contains("\(Harness.providerDisplayName) (") })
            #expect(lines.contains { $0.hasPrefix("ok    collection ")
                && $0.contains("the default collection is \(Harness.defaultCollectionPath)") })
            #expect(lines.contains { $0.hasPrefix("ok    unlocked ") })
            #expect(lines.contains { $0.hasPrefix("ok    transport ") && $0.contains("dh-ietf1024-sha256-aes128-cbc-pkcs7") })
            #expect(lines.contains { $0.hasPrefix("ok    write/read/delete ") })
            #expect(lines.contains { $0.hasPrefix("ok    encryption key ")
                && ($0.contains(" present (id") || $0.contains("no key yet: one is created on the first encrypted save")) })
            #expect(lines.last == "All checks passed.")
            #expect(try SecretTool.search(["service": probeService]).isEmpty, "the probe cleaned up")

            let json = try jsonObject(try pingKeyring(["doctor", "--json"]))
            #expect(json["ok"] as? Bool == true)
            #expect(json["exitCode"] as? Int == 0)
            #expect(json["busAddress"] as? String == address)
            let provider = try #require(json["provider"] as? [String: Any])
            #expect(provider["name"] as? String == Harness.providerDisplayName)
            #expect(provider["pid"] as? Int == Int(try run(Harness.ctlPath, ["pid"]).output.trimmingCharacters(in: .whitespacesAndNewlines)))
            let checks = try #require(json["checks"] as? [[String: Any]])
            #expect(checks.map { $0["id"] as? String } == ["sessionBus", "provider", "collection", "unlocked", "transport",
                                                          "probe", "encryptionKey"])
            #expect(checks.map { $0["status"] as? String } == ["pass", "pass", "pass", "pass", "pass", "pass", "pass"])
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
            #expect(lines[2].contains("No keyring service (Secret Service) is running"))
            #expect(lines[3].contains("details: ") && lines[3].contains("org.freedesktop.DBus.Error.ServiceUnknown"))
            #expect(lines[4].contains("fix: start a Secret Service provider"))
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
            #expect(lines[locked].hasSuffix("\(Harness.defaultCollectionPath) is locked"))
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
                #expect(failed.stderr.contains("Unlock your keyring"), "the library's advice")
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
