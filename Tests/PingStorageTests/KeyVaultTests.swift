import Foundation
import PingStorageCrypto
import SecretService
import Testing
@testable import PingStorage

private struct Note: Codable, Sendable, Equatable { var text: String }

private func storage(_ fake: FakeSecretService, _ vault: KeyVault, account: String = "acct") -> KeychainStorage<Note> {
    KeychainStorage<Note>(account: account, encryptor: SecuredKeyEncryptor(vault: vault)!, cacheStrategy: .NO_CACHE,
                          configuration: KeychainConfiguration(), backend: fake)
}

private func keyItem(_ fake: FakeSecretService) throws -> (ItemPath, FakeSecretService.Item) {
    let keys = fake.items.filter { $0.value.attributes["xdg:schema"] == KeyVault.schema }
    try #require(keys.count == 1)
    return (keys.first!.key, keys.first!.value)
}

/// The key id an item's envelope names.
private func sealingKey(_ fake: FakeSecretService, account: String = "acct") throws -> KeyID {
    let item = try #require(fake.items.values.first { $0.attributes["account"] == account })
    return try Envelope.header(of: item.secret.bytes).keyID
}

@Suite("KeyVault: key check values, rewritten keys, one key for everyone")
struct KeyVaultTests {
    /// A save of a new account creates the app's own item and a save in place writes a secret:
    /// neither touches a key item, so neither costs a search of the keys (what was announced since
    /// the key was chosen names only items this connection created and items that are not keys),
    /// whether the provider announces secrets written in place (KWallet, KeePassXC) or not (GNOME
    /// Keyring). Another process's new item may be a key: after it, the keys are searched again.
    @Test(arguments: [true, false])
    func savesThatTouchNoKeyItemCostNoKeySearch(announcesSecretChanges: Bool) async throws {
        let fake = FakeSecretService()
        fake.state.withLock { $0.announcesSecretChanges = announcesSecretChanges }
        let vault = KeyVault.on(fake)
        try await storage(fake, vault, account: "first").save(item: Note(text: "1"))
        let keySearches = fake.keySearches
        try await storage(fake, vault, account: "second").save(item: Note(text: "2"))
        try await storage(fake, vault, account: "second").save(item: Note(text: "2 again"))
        try await storage(fake, vault, account: "first").save(item: Note(text: "1 again"))
        #expect(fake.keySearches == keySearches, "no key item changed")

        fake.seed(attributes: ["service": "another program", "account": "theirs"], secret: "theirs")
        try await storage(fake, vault, account: "first").save(item: Note(text: "1 after theirs"))
        #expect(fake.keySearches > keySearches, "an item another process created may be a key")
        #expect(try await storage(fake, KeyVault.on(fake), account: "second").get() == Note(text: "2 again"))
    }

    /// A restore or another tool rewrote the key item under the same id, with its key-check (no
    /// item created or deleted, so no change is announced): the next save must not be sealed with
    /// the old bytes, which no fresh process could open. Right after the account's creation, and
    /// once everything is remembered (the account's item and the key item): then the key-check
    /// known from before no longer matches the rewritten bytes, and the key item is read afresh.
    @Test(arguments: [false, true])
    func aKeyRewrittenUnderItsIdIsPickedUpBeforeASaveIsReportedDone(everythingRemembered: Bool) async throws {
        let fake = FakeSecretService()
        let running = KeyVault.on(fake)
        try await storage(fake, running).save(item: Note(text: "first"))
        if everythingRemembered { try await storage(fake, running).save(item: Note(text: "remembered")) }
        let (path, _) = try keyItem(fake)
        let replacement = try SymmetricKey.generate()
        fake.state.withLock { state in
            state.items[path]!.secret = SecretValue(bytes: replacement.exportData(), contentType: "application/octet-stream")
            state.items[path]!.attributes["key-check"] = replacement.checkValue
        }
        try await storage(fake, running).save(item: Note(text: "second"))

        let fresh = KeyVault.on(fake)
        #expect(try await storage(fake, fresh).get() == Note(text: "second"), "a fresh process reads what was saved")
    }

    /// Bytes that do not match the key-check kept with them are never used: a wrong key would
    /// seal data no one can open, or open nothing.
    @Test func keyBytesThatDoNotMatchTheirCheckValueAreRefused() async throws {
        let fake = FakeSecretService()
        try await storage(fake, KeyVault.on(fake)).save(item: Note(text: "kept"))
        let (path, key) = try keyItem(fake)
        #expect(key.attributes["key-check"]?.count == 16, "a check value is stored with every new key")
        fake.state.withLock { $0.items[path]!.secret = SecretValue(bytes: Data(repeating: 7, count: 32)) }
        let fresh = KeyVault.on(fake)
        for attempt in ["get", "save"] {
            do {
                if attempt == "get" { _ = try await storage(fake, fresh).get() } else {
                    try await storage(fake, fresh).save(item: Note(text: "new"))
                }
                Issue.record("\(attempt) used key bytes that do not match their check value")
            } catch let error as EncryptorError {
                guard case .unsupportedFormat(let message) = error.reason else {
                    Issue.record("\(attempt): \(error)")
                    continue
                }
                #expect(message.contains("key-check"), "\(message)")
            }
        }
        #expect(fake.items[path]?.secret.bytes == Data(repeating: 7, count: 32), "the key item is left as it is")
    }

    /// A process that made its own key and then sees an older one (another process's, created in
    /// the same moment) moves to the older one at its next encryption.
    @Test func aProcessMovesToTheOldestKeyOnceItSeesIt() async throws {
        let fake = FakeSecretService()
        let vault = KeyVault.on(fake)
        try await storage(fake, vault).save(item: Note(text: "mine"))
        let own = try sealingKey(fake)

        let older = try SymmetricKey.generate(), olderID = try KeyID.generate()
        fake.state.withLock { state in
            let path = try! ItemPath("\(fake.collectionPath)/900")
            state.items[path] = .init(label: KeyVault.label,
                                      attributes: ["xdg:schema": KeyVault.schema, "key-id": olderID.hexString,
                                                   "key-check": older.checkValue, AppIdentity.attribute: AppIdentity.current.id],
                                      secret: SecretValue(bytes: older.exportData(), contentType: "application/octet-stream"),
                                      created: Date(timeIntervalSince1970: 1_000), modified: Date(timeIntervalSince1970: 1_000))
            state.announced.append(ItemAnnouncement(kind: .created, item: path))  // the ItemCreated the client would have heard
        }
        try await storage(fake, vault).save(item: Note(text: "again"))
        #expect(try sealingKey(fake) == olderID, "moved from \(own) to the oldest key")
        #expect(try await storage(fake, KeyVault.on(fake)).get() == Note(text: "again"))
    }

    /// One caller gives up while the encryption key is being created: it leaves at once, with
    /// nothing saved for it, and the caller that joined the creation gets the one key.
    @Test func aCallerCancelledWhileTheKeyIsCreatedLeavesAndTheOtherGetsTheKey() async throws {
        let fake = FakeSecretService()
        let vault = KeyVault.on(fake)
        let hold = Hold()
        fake.state.withLock { $0.holdNextCreate = hold }
        let cancelled = Task { try await storage(fake, vault, account: "leaves").save(item: Note(text: "never")) }
        try await hold.waitForArrival()
        let other = Task { try await storage(fake, vault, account: "stays").save(item: Note(text: "kept")) }
        try await waitUntil("the second caller joined the key's creation") { vault.callersWaitingForTheKey == 2 }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(!hold.isOpen, "the cancelled caller left while the key's creation was still in flight")
        hold.open()
        try await other.value

        let keys = fake.items.values.filter { $0.attributes["xdg:schema"] == KeyVault.schema }
        #expect(keys.count == 1, "one key, created once")
        #expect(!fake.items.values.contains { $0.attributes["account"] == "leaves" }, "nothing saved for the caller that left")
        #expect(try await storage(fake, KeyVault.on(fake), account: "stays").get() == Note(text: "kept"))
    }

    /// Returns once `condition` holds; throws, naming `what`, when it did not within 30 s.
    private func waitUntil(_ what: String, _ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw HoldError("not within 30 s: \(what)") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
