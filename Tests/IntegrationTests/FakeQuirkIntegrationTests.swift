import Foundation
import PingStorage
import SecretService
import Testing

extension Integration {
    /// The provider quirks SecretService handles in one place (ProviderQuirks, the unlock policy),
    /// each played by the fake Secret Service (`kwallet-locked`, `refuses-provider-attributes`,
    /// `garbled-secret`), at the SecretServiceClient and at the KeychainStorage level, in this process.
    @Suite("Provider quirks through the fake Secret Service")
    struct FakeQuirks {
        let account = "acct"
        let service = KeychainConfiguration.defaultService

        func createItem(_ client: SecretServiceClient, _ value: String,
                        attributes: [String: String] = ["service": "S", "account": "A"]) async throws -> ItemPath {
            try await client.createItem(in: .default, label: "theirs", attributes: attributes,
                                        secret: SecretValue(bytes: Data(value.utf8))).path
        }

        // MARK: kwallet-locked: an empty secret instead of IsLocked; writes and deletes accepted

        @Test func kwalletLockedSecretIsLockedNeverEmpty() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client()
            let item = try await createItem(client, "kept")
            try fake.scenario("kwallet-locked", "prompt=never")
            #expect(try await client.itemInfo(item).isLocked)
            let found = try await client.searchItems(matching: ["account": "A"])
            #expect(found.locked == [item] && found.unlocked.isEmpty, "a search reports it locked: \(found)")
            let getSecretsBefore = try fake.calls("GetSecret")

            let noPrompts = client.with(options: .init(timeout: .seconds(30), allowsPrompts: false))
            let (error, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await noPrompts.secret(of: item)
            }
            #expect(error?.code == .locked, "\(String(describing: error))")
            #expect(elapsed < .seconds(10), "at once, not at the 30 s deadline: \(elapsed)")
            #expect(try fake.calls("GetSecret") > getSecretsBefore, "the fake's empty answer was what the client saw first")
            #expect(try fake.calls("Prompt") == 0, "no prompt shown")
            #expect(try fake.state().collection(fakeLogin)?.locked == true)
        }

        /// A provider that accepts writes and deletes on a locked item (KWallet): the client reads
        /// the lock state first, so with prompts off the keyring the user locked stays as it is.
        @Test func kwalletLockedItemIsNeitherWrittenNorDeletedByTheClient() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client()
            let item = try await createItem(client, "kept")
            try fake.scenario("kwallet-locked", "prompt=never")
            let noPrompts = client.with(options: .init(timeout: .seconds(30), allowsPrompts: false))
            let write = await secretServiceError { () async throws(SecretServiceError) in
                try await noPrompts.setSecret(SecretValue(bytes: Data("overwritten".utf8)), of: item)
            }
            #expect(write?.code == .locked, "\(String(describing: write))")
            let update = await secretServiceError { () async throws(SecretServiceError) in
                try await noPrompts.updateItem(item, label: "renamed")
            }
            #expect(update?.code == .locked, "\(String(describing: update))")
            let delete = await secretServiceError { () async throws(SecretServiceError) in
                try await noPrompts.deleteItem(item)
            }
            #expect(delete?.code == .locked, "\(String(describing: delete))")
            #expect(try fake.calls("SetSecret") == 0 && fake.calls("Delete") == 0, "nothing reached the provider")
            let stored = try fake.items().first { $0.path == item.rawValue }
            #expect(stored?.secret == Data("kept".utf8))
        }

        /// With prompts allowed, the empty answer leads to an unlock (at once, or through the
        /// prompt) and a second GetSecret that reads the value.
        @Test(arguments: ["none", "complete"])
        func kwalletLockedSecretIsReadAfterAnUnlock(prompt: String) async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client()
            let item = try await createItem(client, "kept")
            let before = try fake.calls("GetSecret")  // the fake is read back after a write (ProviderQuirks.verifiesWrites)
            try fake.scenario("kwallet-locked", "prompt=\(prompt)")
            #expect(try await client.secret(of: item).value.bytes == Data("kept".utf8))
            #expect(try fake.calls("GetSecret") == before + 2, "the empty answer, then the value")
            #expect(try fake.calls("Unlock") == 1 && fake.calls("Prompt") == (prompt == "none" ? 0 : 1))
            #expect(try fake.state().collection(fakeLogin)?.locked == false)
        }

        /// Nothing remembered: every operation searches, finds the item locked, and needs the
        /// prompt it may not show.
        @Test func kwalletLockedKeychainStorageIsLockedAndTouchesNothing() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.seed(account: account, value: "kept", modified: 1_700_000_000)
            let before = try fake.items()
            try fake.scenario("kwallet-locked", "prompt=never")
            let storage = fake.storage(account, allowsPrompts: false)
            for (name, operation) in [("get", { _ = try await storage.get() }),
                                      ("save", { try await storage.save(item: "new") }),
                                      ("delete", { try await storage.delete() })] as [(String, () async throws -> Void)] {
                let (error, elapsed) = await timedKeychainError(operation)
                #expect(error?.kind == "locked", "\(name): \(String(describing: error))")
                #expect(elapsed < .seconds(10), "\(name) at once, not at the deadline: \(elapsed)")
                let after = try fake.items()
                #expect(after.map(\.path) == before.map(\.path) && after.map(\.secret) == before.map(\.secret),
                        "\(name) wrote or deleted nothing")
            }
            #expect(try fake.calls("Prompt") == 0, "no prompt shown")
        }

        /// The item is remembered from a read; then the wallet locks (the fake announces it with
        /// CollectionChanged, as KWallet does). KWallet would accept the Delete and SetSecret of a
        /// remembered path: the client must notice the lock first.
        @Test func kwalletLockAfterARememberedReadIsLockedAndTouchesNothing() async throws {
            let fake = try await FakeSecretServiceInstance()
            try await fake.storage(account).save(item: "kept")
            let before = try fake.items()
            let storage = fake.storage(account, allowsPrompts: false)
            for (name, operation) in [("delete", { try await storage.delete() }),
                                      ("save", { try await storage.save(item: "new") }),
                                      ("get", { _ = try await storage.get() })] as [(String, () async throws -> Void)] {
                try fake.scenario("normal")
                #expect(try await storage.get() == "kept", "remembered again before the \(name)")
                try fake.scenario("kwallet-locked", "prompt=never")
                let (error, elapsed) = await timedKeychainError(operation)
                #expect(error?.kind == "locked", "\(name): \(String(describing: error))")
                #expect(elapsed < .seconds(10), "\(name) at once, not at the deadline: \(elapsed)")
                let after = try fake.items()
                #expect(after.map(\.path) == before.map(\.path) && after.map(\.secret) == before.map(\.secret),
                        "\(name) wrote or deleted nothing")
            }
            #expect(try fake.calls("Prompt") == 0, "no prompt shown")
        }

        /// With prompts allowed the client unlocks: at once (`prompt=none`) or through a prompt.
        @Test(arguments: ["none", "complete"])
        func kwalletLockedWithPromptsAllowedUnlocksAndReads(prompt: String) async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.seed(account: account, value: "kept", modified: 1_700_000_000)
            try fake.scenario("kwallet-locked", "prompt=\(prompt)")
            #expect(try await fake.storage(account).get() == "kept")
            #expect(try fake.state().collection(fakeLogin)?.locked == false)
            #expect(try fake.calls("Prompt") == (prompt == "none" ? 0 : 1))
            try await fake.storage(account).save(item: "new")
            #expect(try fake.items().map(\.secret) == [storedJSON("new")])
        }

        // MARK: refuses-provider-attributes: KeePassXC's computed attributes cannot be written

        @Test func updateItemLeavesOutTheProviderOwnAttributesAndRetries() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client()
            let item = try await createItem(client, "kept")
            try fake.scenario("refuses-provider-attributes")
            let info = try await client.itemInfo(item)
            let uuid = try #require(info.attributes["Uuid"], "the fake shows KeePassXC's attributes: \(info.attributes)")
            #expect(info.attributes["Path"] == "/theirs")

            // What a read-modify-write sends: everything read, plus ours (and a TOTP, also refused).
            var wanted = info.attributes
            wanted["username"] = "A"
            wanted["extra"] = "1"
            wanted["TOTP"] = "otpauth://totp/x"
            try await client.updateItem(item, attributes: wanted)

            let after = try await client.itemInfo(item)
            #expect(after.attributes["username"] == "A" && after.attributes["extra"] == "1", "\(after.attributes)")
            #expect(after.attributes["service"] == "S" && after.attributes["account"] == "A")
            #expect(after.attributes["Uuid"] == uuid && after.attributes["Path"] == "/theirs", "the provider's kept")
            let stored = try #require(try fake.state().items.first).attributes
            #expect(stored["username"] == "A" && stored["extra"] == "1")
            #expect(stored["Uuid"] == nil && stored["Path"] == nil && stored["TOTP"] == nil, "left out: \(stored)")
            #expect(try fake.calls("Set") == 2, "refused once, accepted without the provider's own attributes")
        }

        /// An item of the app's own that lacks our label and attributes (another program of the app
        /// wrote it, with its own label and an attribute of its own) is completed by a save: still
        /// one item, our attributes and label added, the provider's and the program's kept.
        @Test func saveCompletesTheAppsItemDespiteTheRefusal() async throws {
            let fake = try await FakeSecretServiceInstance()
            let seeded = try fake.control([
                "add-item", "--collection", "login", "--label", "written elsewhere",
                "--attr", "service=\(service)", "--attr", "account=\(account)", "--attr", "application=other-tool",
                "--attr", "\(AppIdentity.attribute)=\(AppIdentity.current.id)",
                "--secret-base64", storedJSON("theirs").base64EncodedString(), "--modified", "1700000000",
            ]).trimmingCharacters(in: .whitespacesAndNewlines)
            try fake.scenario("refuses-provider-attributes")
            let storage = fake.storage(account)
            #expect(try await storage.get() == "theirs")
            try await storage.save(item: "ours")

            let items = try fake.state().items
            #expect(items.count == 1, "\(items.map(\.path))")
            let item = try #require(items.first)
            #expect(item.path == seeded, "completed in place")
            #expect(item.secretBytes == storedJSON("ours"))
            #expect(item.label == "\(account) (\(service))")
            #expect(item.attributes["username"] == account, "\(item.attributes)")
            #expect(item.attributes["xdg:schema"] == "com.pingidentity.PingStorage")
            #expect(item.attributes["application"] == "other-tool" && item.attributes["service"] == service
                    && item.attributes["account"] == account, "the other tool's attributes kept")
            #expect(item.attributes["Uuid"] == nil && item.attributes["Path"] == nil, "never written")
            let info = try #require(try await storage.itemInfo())
            #expect(info.attributes["Uuid"] != nil && info.attributes["Path"] == "/\(account) (\(service))",
                    "the provider's computed attributes are still there: \(info.attributes)")
            #expect(try await storage.get() == "ours")
        }

        // MARK: stripped-shared-secret: a session whose two sides hold different keys

        /// One DH exchange in 256 gives a shared secret that starts with a zero byte; KWallet
        /// derives its key with that byte dropped, libsecret (and the others) with it kept, and
        /// neither side notices. The client refuses such a session and opens another, so what it
        /// saves is what the provider stores, and it reads it back.
        @Test func aSessionWhoseKeyProvidersDisagreeOnIsNeverUsed() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("stripped-shared-secret", "times=1")
            let client = fake.client()
            let value = "saved through the second session"
            let item = try await createItem(client, value)
            let state = try fake.state()
            #expect(state.strippedLeft == 0, "the first session was the disagreeing one")
            #expect(state.sessionsOpened >= 2 && state.sessionsKept == 1, "it was refused, closed, and another opened")
            #expect(state.sessions.count == 1, "the refused one was closed: \(state.sessions.map(\.path))")
            #expect(try fake.items().first { $0.path == item.rawValue }?.secret == Data(value.utf8))
            #expect(try await client.secret(of: item).value.bytes == Data(value.utf8))
        }

        // MARK: an empty secret (KWallet creates an item before it sets its secret)

        /// A provider that is neither GNOME Keyring nor KeePassXC (KWallet, the fake) may show an
        /// item another client is still creating with an empty secret: the client reads an
        /// unlocked item's empty secret once more, after a pause, before it returns it; the
        /// second answer stands. (ProviderQuirks.pauseBeforeRereadingEmptySecret; the rule used
        /// to live in PingStorage.)
        @Test func anEmptySecretIsReadAgainAfterAPauseBeforeItIsBelieved() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client()
            let path = try fake.control([
                "add-item", "--collection", "login", "--label", "being created", "--attr", "service=S",
                "--attr", "account=empty", "--secret-base64", "", "--modified", "1700000000",
            ]).trimmingCharacters(in: .whitespacesAndNewlines)
            let item = try ItemPath(path)
            let filled = try await createItem(client, "filled")
            _ = try await client.secret(of: filled)
            let before = try fake.calls("GetSecret")
            let started = ContinuousClock.now
            let read = try await client.secret(of: item)
            #expect(read.value.bytes.isEmpty, "the second answer stands: still empty")
            #expect(try fake.calls("GetSecret") == before + 2, "read twice")
            #expect(ContinuousClock.now - started >= .milliseconds(100), "after the pause")
            let beforeFilled = try fake.calls("GetSecret")
            #expect(try await client.secret(of: filled).value.bytes == Data("filled".utf8))
            #expect(try fake.calls("GetSecret") == beforeFilled + 1, "a secret with bytes is read once")
        }

        // MARK: garbled-secret: an unlocked item's secret the session key cannot decrypt

        @Test func garbledSecretOpensANewSessionAndReadsTheValue() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client()
            let item = try await createItem(client, "kept")
            let opened = try fake.state().sessionsKept
            let before = try fake.calls("GetSecret")  // the fake is read back after a write (ProviderQuirks.verifiesWrites)
            try fake.scenario("garbled-secret", "times=1")
            #expect(try await client.secret(of: item).value.bytes == Data("kept".utf8))
            let state = try fake.state()
            #expect(state.garbledLeft == 0, "the garbled answer was sent")
            #expect(state.sessionsKept == opened + 1, "one new session: \(opened) → \(state.sessionsKept)")
            #expect(try fake.calls("GetSecret") == before + 2)
            // The new session stays in use.
            #expect(try await client.secret(of: item).value.bytes == Data("kept".utf8))
            #expect(try fake.state().sessionsKept == opened + 1)
        }

        /// A secret that stays undecodable (three answers in a row) is a typed error after the two
        /// retries on new sessions, never an empty or corrupt value.
        @Test func secretThatStaysUndecodableIsATypedError() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client()
            let item = try await createItem(client, "kept")
            let opened = try fake.state().sessionsKept
            try fake.scenario("garbled-secret", "times=3")
            let error = await secretServiceError { () async throws(SecretServiceError) in
                try await client.secret(of: item)
            }
            #expect(error?.code == .disconnected, "\(String(describing: error))")
            #expect(try fake.state().sessionsKept == opened + 2)
            #expect(try await client.secret(of: item).value.bytes == Data("kept".utf8), "the next call reads it")
        }

        @Test func keychainStorageReadsThroughAGarbledAnswer() async throws {
            let fake = try await FakeSecretServiceInstance()
            let storage = fake.storage(account)
            try await storage.save(item: "kept")
            let opened = try fake.state().sessionsKept
            try fake.scenario("garbled-secret", "times=1")
            #expect(try await storage.get() == "kept")
            let state = try fake.state()
            #expect(state.garbledLeft == 0 && state.sessionsKept == opened + 1)
            #expect(state.items.map(\.secretBytes) == [storedJSON("kept")], "nothing rewritten")
        }
    }
}
