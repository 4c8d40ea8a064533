import Foundation
import PingStorage
import SecretService
import Testing

extension Integration.PingKeyring {
    // MARK: Encryption

    @Test func saveEncryptThenGetPrintsTheValue() async throws {
        let account = uniqueAccount()
        let secret = "secret-access-\(UUID().uuidString)"
        let json = #"{"accessToken":"\#(secret)","expiresIn":3600}"#
        defer { try? SecretTool.clear(lookup(account)) }

        let saved = try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt"], input: Data((json + "\n").utf8))
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
                                            "xdg:schema": "com.pingidentity.PingStorage", AppIdentity.attribute: testApp])
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

        let savedJSON = try jsonObject(try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt", "--json"],
                                                       input: Data(json.utf8)))
        #expect(savedJSON["encrypted"] as? String == "yes")
        #expect(savedJSON["keyID"] as? String == key, "the same (oldest) key for every save")
        #expect(savedJSON["size"] as? Int == json.utf8.count)
        #expect(try SecretTool.lookup(lookup(account)) != stored, "a fresh nonce on every save")
        #expect(try SecretTool.search(lookup(account)).count == 1, "replaced in place")
    }

    @Test func listShowsAnEncryptedItemAsEncryptedWithItsKey() async throws {
        let encrypted = uniqueAccount("encrypted"), plain = uniqueAccount("plain")
        defer { for account in [encrypted, plain] { try? SecretTool.clear(lookup(account)) } }
        #expect(try pingKeyring(asTestApp + ["save", "--account", encrypted, "--encrypt"], input: Data(#""hidden""#.utf8)).status == 0)
        #expect(try pingKeyring(asTestApp + ["save", "--account", plain], input: Data(#""shown""#.utf8)).status == 0)
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
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }

        // The tool writes, an app reads with SecuredKeyEncryptor(), as in the README.
        #expect(try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt"],
                                input: Data(#"{"id":7,"name":"from the tool"}"#.utf8)).status == 0)
        let app = KeychainStorage<TestItem>(account: account,
                                            encryptor: try #require(SecuredKeyEncryptor(configuration: testAppConfiguration)),
                                            configuration: testAppConfiguration)
        #expect(try await app.get() == TestItem(id: 7, name: "from the tool"))
        let plainApp = KeychainStorage<TestItem>(account: account, configuration: testAppConfiguration)
        await #expect(throws: KeychainError.self, "an app without the encryptor cannot decode it") {
            _ = try await plainApp.get()
        }

        // An app writes, the tool reads.
        let writer = KeychainStorage<TestItem>(account: account, encryptor: try appEncryptorWithAFreshKeyCache(),
                                               configuration: testAppConfiguration)
        try await writer.save(item: TestItem(id: 8, name: "from the app"))
        let stored = try #require(try SecretTool.lookup(lookup(account)))
        #expect(stored.prefix(4) == envelopeMagic)
        let got = try pingKeyring(["get", "--account", account])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(try JSONDecoder().decode(TestItem.self, from: got.stdout) == TestItem(id: 8, name: "from the app"))

        // With another service: the tool binds to it as KeychainStorage does.
        let service = "com.example.ping-keyring-test.\(UUID().uuidString.prefix(8))"
        defer { try? SecretTool.clear(lookup(account, service: service)) }
        #expect(try pingKeyring(asTestApp + ["save", "--account", account, "--service", service, "--encrypt"],
                                input: Data(#"{"id":9,"name":"other service"}"#.utf8)).status == 0)
        let otherConfiguration = KeychainConfiguration(service: service, app: testApp)
        let other = KeychainStorage<TestItem>(account: account,
                                              encryptor: try #require(SecuredKeyEncryptor(configuration: otherConfiguration)),
                                              configuration: otherConfiguration)
        #expect(try await other.get() == TestItem(id: 9, name: "other service"))
    }

    @Test func getRefusesACopiedOrTamperedEnvelopeAndLeavesIt() async throws {
        let victim = uniqueAccount("victim"), thief = uniqueAccount("thief"), tampered = uniqueAccount("tampered"),
            future = uniqueAccount("future")
        defer { for account in [victim, thief, tampered, future] { try? SecretTool.clear(lookup(account)) } }
        #expect(try pingKeyring(asTestApp + ["save", "--account", victim, "--encrypt"], input: Data(#""victim's token""#.utf8))
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
            // Items with no app, read as the app whose key sealed the copy (without --app, the
            // tool's own identity would not see that key at all: keyNotFound).
            let result = try pingKeyring(["get", "--account", account] + asTestApp)
            #expect(result.status == 4, "\(account): \(result.stderr)")
            #expect(result.output.isEmpty)
            #expect(result.stderr.hasPrefix("ping-keyring: error: \(kind): the item for account '\(account)'"),
                    "\(result.stderr)")
            #expect(!result.stderr.contains("victim's token"), "never the secret")
            #expect(try SecretTool.lookup(lookup(account)) == bytes, "left unchanged")
            let json = try jsonObject(try pingKeyring(["get", "--account", account, "--json"] + asTestApp))
            #expect((json["error"] as? [String: Any])?["exitCode"] as? Int == 4)
        }
        #expect(try pingKeyring(["get", "--account", victim]).output == "\"victim's token\"\n", "the original still reads")
    }

    @Test func getAfterTheKeyWasDeletedSaysKeyNotFoundAndKeepsTheItem() async throws {
        // In the session collection, so that deleting its key cannot affect the login
        // collection's key, which this process and other tests use.
        let account = uniqueAccount()
        var keys: [String] = []
        defer {
            try? SecretTool.clear(lookup(account))
            for key in keys { try? SecretTool.clear(["xdg:schema": keySchema, "key-id": key]) }
        }
        let session = ["--collection", Harness.scratchCollectionName]
        #expect(try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt"] + session, input: Data(#""orphan""#.utf8))
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
        let again = try jsonObject(try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt", "--json"] + session,
                                                   input: Data(#""fresh""#.utf8)))
        let newKey = try #require(again["keyID"] as? String)
        keys.append(newKey)
        #expect(newKey != key)
        #expect(try pingKeyring(["get", "--account", account] + session).output == "\"fresh\"\n")
    }

    @Test func doctorReportsTheEncryptionKeys() async throws {
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }

        // The login collection: whichever key the tool encrypts with is listed.
        #expect(try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt"], input: Data("1".utf8)).status == 0)
        let key = keyID(of: try #require(try SecretTool.lookup(lookup(account))))
        let result = try pingKeyring(["doctor"])
        #expect(result.status == 0, "\(result.output)")
        let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("ok    encryption key ") })
        #expect(line.contains(" present: ") && line.contains("\(key) (app \(testApp))"), "each key with its app: \(line)")
        let checks = try #require(try jsonObject(try pingKeyring(["doctor", "--json"]))["checks"] as? [[String: Any]])
        let keyCheck = checks.first { $0["id"] as? String == "encryptionKey" }
        #expect(keyCheck?["status"] as? String == "pass")
        #expect((keyCheck?["detail"] as? String)?.contains(key) == true)
        #expect(checks.last?["id"] as? String == "keyBinding", "whether the keys are bound to a TPM comes last")
        try SecretTool.clear(lookup(account))

        // The session collection, emptied of keys: none yet, and doctor creates none.
        try await clearSessionKeys()
        let empty = try pingKeyring(["doctor", "--collection", Harness.scratchCollectionName])
        #expect(empty.status == 0, "\(empty.output)")
        #expect(empty.output.contains("ok    encryption key     no key yet: one is created on the first encrypted save\n"))
        #expect(try await sessionKeyItems().isEmpty, "the doctor created no key")

        // One key, then a damaged one (5 bytes instead of 32): exit 4, with the fix.
        #expect(try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt", "--collection", Harness.scratchCollectionName],
                                input: Data("2".utf8)).status == 0)
        let sessionKey = keyID(of: try #require(try SecretTool.lookup(lookup(account))))
        let damagedID = String(repeating: "d", count: 32)
        defer {
            for key in [sessionKey, damagedID] { try? SecretTool.clear(["xdg:schema": keySchema, "key-id": key]) }
        }
        #expect(try pingKeyring(["doctor", "--collection", Harness.scratchCollectionName]).output
            .contains("ok    encryption key     1 key present: \(sessionKey) (app \(testApp))\n"))
        try SecretTool.clear(["xdg:schema": keySchema, "key-id": sessionKey])
        let stored = try SecretTool.retryingRejectedKeys { try run("secret-tool", ["store", "--label=damaged", "--collection=\(sessionCollection)",
                                             "xdg:schema", keySchema, "key-id", damagedID,
                                             // The app's: new data is sealed with one of the app's own keys only.
                                             AppIdentity.attribute, testApp]
                                             // Under `dbus-test/run --tpm`, new data is sealed with a key bound
                                             // to the TPM: the damaged key claims to be one.
                                             + (Harness.hasTPM ? ["key-binding", "tpm"] : []), input: Data("short".utf8)) }
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
        let save = try pingKeyring(asTestApp + ["save", "--account", account, "--encrypt", "--collection", Harness.scratchCollectionName],
                                   input: Data("3".utf8))
        #expect(save.status == 4)
        #expect(save.stderr.hasPrefix("ping-keyring: error: unsupportedFormat: The encryption key item"), "\(save.stderr)")
    }
}
