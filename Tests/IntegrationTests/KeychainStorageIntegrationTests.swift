import Foundation
import PingStorage
import SecretService
import Testing

struct TestItem: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

/// XOR with a fixed pad: a custom Encryptor as an iOS app would write one (not secure; it only has
/// to change the bytes and produce binary output, NUL bytes included).
struct XorEncryptor: Encryptor {
    func encrypt(data: Data) async throws -> Data { Data(data.map { $0 ^ 0x5A }) + Data([0, 0xFF]) }
    func decrypt(data: Data) async throws -> Data {
        guard data.suffix(2) == Data([0, 0xFF]) else { throw EncryptorError.failedToDecrypt }
        return Data(data.dropLast(2).map { $0 ^ 0x5A })
    }
}

/// All integration tests share one keyring, and some of them stop, suspend, lock or restart it:
/// they run one at a time. Outside dbus-test/run (and in its sandbox, which has its own suite,
/// ``SandboxIntegration``) they are skipped, saying why; CI fails when any test was skipped.
@Suite("Integration (a real Secret Service provider through dbus-test)", .serialized,
       .enabled(if: Harness.isInside && !Harness.isSandboxed,
                "needs the throwaway keyring of dbus-test/run, outside its sandbox: run `dbus-test/run --isolated swift test`"))
struct Integration {

    @Suite("KeychainStorage basics (the iOS test cases)")
    struct Basics {
        @Test func saveGetDelete() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<TestItem>(account: account)
            let item = TestItem(id: 1, name: "Test")
            try await storage.save(item: item)
            #expect(try await storage.get() == item)
            // The keyring itself holds the JSON, as text, under the iOS attribute names.
            let stored = try #require(try SecretTool.lookup(lookup(account)))
            #expect(try JSONDecoder().decode(TestItem.self, from: stored) == item)
            try await storage.delete()
            #expect(try await storage.get() == nil)
            #expect(try SecretTool.lookup(lookup(account)) == nil)
        }

        @Test func getOfMissingAccountIsNilAndDeleteOfMissingSucceeds() async throws {
            let storage = KeychainStorage<TestItem>(account: uniqueAccount())
            #expect(try await storage.get() == nil)
            try await storage.delete()
        }

        @Test func itemHasTheDocumentedAttributesAndLabel() async throws {
            let account = uniqueAccount()
            try await KeychainStorage<TestItem>(account: account).save(item: TestItem(id: 2, name: "attrs"))
            let items = try SecretTool.search(lookup(account))
            try #require(items.count == 1)
            let ours = [
                "service": "com.pingidentity.keychainService", "account": account, "username": account,
                "xdg:schema": "com.pingidentity.PingStorage",
            ]
            // KeePassXC adds attributes of its own (Title, UserName, URL, Notes, Uuid, Path).
            #expect(items[0].attributes.filter { ours[$0.key] != nil } == ours)
            #expect(items[0].label == "\(account) (com.pingidentity.keychainService)")
            try await KeychainStorage<TestItem>(account: account).delete()
        }

        @Test func saveReplacesTheValueInPlace() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<TestItem>(account: account)
            try await storage.save(item: TestItem(id: 1, name: "first"))
            let before = try SecretTool.search(lookup(account))
            try await storage.save(item: TestItem(id: 2, name: "second"))
            let after = try SecretTool.search(lookup(account))
            #expect(after.count == 1)
            #expect(after.map(\.path) == before.map(\.path), "one write to the same item, not delete-then-create")
            #expect(try await storage.get() == TestItem(id: 2, name: "second"))
            try await storage.delete()
        }

        @Test func customEncryptorStoresBinaryThatRoundTrips() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<TestItem>(account: account, encryptor: XorEncryptor())
            let item = TestItem(id: 7, name: "encrypted ünïcode")
            try await storage.save(item: item)
            #expect(try await storage.get() == item)
            let stored = try #require(try SecretTool.lookup(lookup(account)))
            #expect(stored.suffix(2) == Data([0, 0xFF]), "every byte, NUL included, is stored")
            #expect((try? JSONDecoder().decode(TestItem.self, from: stored)) == nil, "not stored in the clear")
            let decrypted = try await XorEncryptor().decrypt(data: stored)
            #expect(try JSONDecoder().decode(TestItem.self, from: decrypted) == item)
            // (gnome-keyring does not keep content types; the unit tests check the one we send.)
            // A storage without the encryptor sees bytes that are not JSON: a corrupt-item error, not nil.
            let plain = KeychainStorage<TestItem>(account: account)
            #expect(await keychainError { _ = try await plain.get() }?.kind == "corruptItem")
            try await storage.delete()
        }

        @Test func concurrentAccessFromATaskGroup() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<TestItem>(account: account)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        try await storage.save(item: TestItem(id: index, name: "concurrent \(index)"))
                        let read = try await storage.get()
                        #expect(read != nil && read!.name == "concurrent \(read!.id)", "never a torn value")
                    }
                }
                try await group.waitForAll()
            }
            #expect(try SecretTool.search(lookup(account)).count == 1)
            try await storage.delete()
        }

        @Test func unicodeAccountIsStoredUnderExactlyThatName() async throws {
            let account = "usér-名前-🔑-\(UUID().uuidString.prefix(6))"
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: "unicode")
            let items = try SecretTool.search(lookup(account))
            #expect(items.count == 1)
            #expect(items.first?.attributes["account"] == account)
            #expect(try await storage.get() == "unicode")
            try await storage.delete()
        }

        @Test func oneMebibyteItemRoundTrips() async throws {
            let account = uniqueAccount()
            let big = String((0..<(1 << 20)).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: big)
            #expect(try await storage.get() == big)
            #expect(try SecretTool.lookup(lookup(account))?.count == big.utf8.count + 2)
            try await Harness.waitUntilSavedBeforeDeletingABigItem()
            try await storage.delete()
        }

        @Test func emptyAccountIsAnInvalidArgument() async throws {
            let storage = KeychainStorage<String>(account: "")
            #expect(await keychainError { try await storage.save(item: "x") }?.kind == "invalidArgument")
            #expect(await keychainError { _ = try await storage.get() }?.kind == "invalidArgument")
        }

        @Test func configuredServiceAndSessionCollection() async throws {
            let account = uniqueAccount()
            guard Harness.hasSessionCollection else {
                // KeePassXC and KWallet have no `session` alias: a clear error, nothing created.
                let storage = KeychainStorage<String>(
                    account: account, configuration: KeychainConfiguration(service: "org.example.other", collection: .session))
                #expect(await keychainError { try await storage.save(item: "x") }?.kind == "collectionNotFound")
                #expect(try SecretTool.lookup(lookup(account, service: "org.example.other")) == nil)
                return
            }
            let configuration = KeychainConfiguration(service: "org.example.other", collection: .session)
            let storage = KeychainStorage<String>(account: account, configuration: configuration)
            try await storage.save(item: "in memory")
            let info = try #require(try await storage.itemInfo())
            #expect(info.collection == "/org/freedesktop/secrets/collection/session")
            #expect(try SecretTool.lookup(lookup(account, service: "org.example.other")) == Data("\"in memory\"".utf8))
            // The default collection's storage of the same account does not see it.
            #expect(try await KeychainStorage<String>(account: account).get() == nil)
            try await storage.delete()
        }
    }

    @Suite("Interoperability with other clients")
    struct Interop {
        @Test func readsWhatSecretToolWroteWithOnlyServiceAndAccount() async throws {
            let account = uniqueAccount()
            try SecretTool.store(label: "written by secret-tool", attributes: lookup(account),
                                 secret: Data(#"{"id":5,"name":"from secret-tool"}"#.utf8))
            let storage = KeychainStorage<TestItem>(account: account)
            #expect(try await storage.get() == TestItem(id: 5, name: "from secret-tool"))
            // A save creates the app's own item, with our attributes and label, and leaves
            // secret-tool's (no app owns it) as it was.
            try await storage.save(item: TestItem(id: 6, name: "ours now"))
            let items = try SecretTool.search(lookup(account))
            #expect(items.count == 2, "\(SecretTool.describeItems(matching: lookup(account)))")
            let ours = try #require(items.first { $0.storedAttributes[AppIdentity.attribute] == AppIdentity.current.id })
            #expect(ours.attributes["xdg:schema"] == "com.pingidentity.PingStorage")
            #expect(ours.attributes["username"] == account)
            #expect(ours.label == "\(account) (com.pingidentity.keychainService)")
            let theirs = try #require(items.first { $0.storedAttributes[AppIdentity.attribute] == nil })
            #expect(theirs.label == "written by secret-tool" && theirs.secret == #"{"id":5,"name":"from secret-tool"}"#)
            #expect(try await storage.get() == TestItem(id: 6, name: "ours now"))
            try await storage.delete()
            #expect(try SecretTool.search(lookup(account)).isEmpty)
        }

        @Test func secretToolReadsWhatWeWrote() async throws {
            let account = uniqueAccount()
            try await KeychainStorage<TestItem>(account: account).save(item: TestItem(id: 9, name: "for secret-tool"))
            // What Python keyring and go-keyring look up: service + username.
            let viaUsername = try #require(try SecretTool.lookup(["service": "com.pingidentity.keychainService", "username": account]))
            #expect(try JSONDecoder().decode(TestItem.self, from: viaUsername) == TestItem(id: 9, name: "for secret-tool"))
            try await KeychainStorage<TestItem>(account: account).delete()
        }

        @Test func anotherProcessReadsAndWritesTheSameItem() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: "from the test process")
            let read = try await run(Harness.probePath, ["get", account])
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.output == "from the test process\n")
            let write = try await run(Harness.probePath, ["save", account, "from the probe"])
            #expect(write.status == 0, "\(write.stderr)")
            #expect(try await storage.get() == "from the probe")
            #expect(try SecretTool.search(lookup(account)).count == 1)
            try await storage.delete()
        }

        @Test func twoProcessesWritingTheSameAccountLeaveOneItemFromTheLastWriter() async throws {
            try await Harness.withKnownKeePassXCCrashUnderConcurrentClients {
                let account = uniqueAccount()
                async let first = Task.detached { try run(Harness.probePath, ["hammer", account, "A", "15"]) }.value
                async let second = Task.detached { try run(Harness.probePath, ["hammer", account, "B", "15"]) }.value
                let results = try await [first, second]
                for result in results { #expect(result.status == 0, "\(result.stderr)") }
                let items = try SecretTool.search(lookup(account))
                #expect(items.count == 1)
                let value = try await KeychainStorage<String>(account: account).get()
                #expect(value == "A-14" || value == "B-14", "the final value is the last save of one of the writers")
                try await KeychainStorage<String>(account: account).delete()
            }
        }
    }

    @Suite("Duplicates and damaged items")
    struct Duplicates {
        @Test func getPicksTheNewestAndSaveCollapsesDuplicates() async throws {
            let account = uniqueAccount()
            // Items crashed processes of the app left: same service, account and app, told apart by
            // an extra attribute. The keyring keeps whole seconds, so they are written 1.1 s apart.
            for (index, name) in ["oldest", "middle", "newest"].enumerated() {
                if index > 0 { try await Task.sleep(for: .milliseconds(1100)) }
                try SecretTool.store(label: name, attributes: lookup(account).merging(["copy": "\(index)",
                                                                                       AppIdentity.attribute: AppIdentity.current.id]) { $1 },
                                     secret: Data("\"\(name)\"".utf8))
            }
            #expect(try SecretTool.search(lookup(account)).count == 3)
            let storage = KeychainStorage<String>(account: account)
            #expect(try await storage.get() == "newest")
            #expect(try SecretTool.search(lookup(account)).count == 3, "a read never deletes anything")
            try await storage.save(item: "collapsed")
            let items = try SecretTool.search(lookup(account))
            #expect(items.count == 1)
            #expect(try SecretTool.lookup(lookup(account)) == Data("\"collapsed\"".utf8))
            try await storage.delete()
        }

        /// Two items of one account with the same label, as two processes creating it at once leave
        /// them (KWallet files items by label): collapsing them keeps one item with all its attributes.
        @Test func duplicatesWithTheSameLabelCollapseToOneCompleteItem() async throws {
            let account = uniqueAccount()
            let label = "\(account) (com.pingidentity.keychainService)"
            let attributes = lookup(account).merging(["username": account, "xdg:schema": "com.pingidentity.PingStorage",
                                                      AppIdentity.attribute: AppIdentity.current.id]) { $1 }
            let client = SecretServiceClient()
            // Binary, as SecuredKeyEncryptor's envelopes are (KWallet keeps those apart from text).
            for value in ["first", "second"] {
                _ = try await client.createItem(in: .default, label: label, attributes: attributes,
                                                secret: SecretValue(bytes: Data("\"\(value)\"".utf8),
                                                                    contentType: "application/octet-stream"),
                                                replacing: false)
            }
            #expect(try SecretTool.search(lookup(account)).count == 2)
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: "collapsed")
            let items = try SecretTool.search(lookup(account))
            #expect(items.count == 1)
            #expect(items.first?.storedAttributes == attributes, "the app's duplicates collapsed onto one")
            #expect(items.first?.label == label)
            #expect(try await storage.get() == "collapsed")
            try await storage.delete()
        }

        @Test func corruptItemIsReportedAndLeftUntouched() async throws {
            let account = uniqueAccount()
            let garbage = Data("not json at all: {secret-token-123".utf8)
            try SecretTool.store(label: "corrupt", attributes: lookup(account), secret: garbage)
            let storage = KeychainStorage<TestItem>(account: account)
            let error = await keychainError { _ = try await storage.get() }
            #expect(error?.kind == "corruptItem")
            #expect(error.map { !$0.errorMessage.contains("secret-token") } == true, "the message never quotes the data")
            #expect(try SecretTool.lookup(lookup(account)) == garbage)
            #expect(try SecretTool.search(lookup(account)).count == 1)
            // The wrong JSON type is corrupt too. (Cleared first: KeePassXC 2.7.4 hangs on an access
            // dialog when secret-tool, a new D-Bus client each time, replaces an item.)
            try SecretTool.clear(lookup(account))
            try SecretTool.store(label: "corrupt", attributes: lookup(account), secret: Data(#"{"id":"one"}"#.utf8))
            #expect(await keychainError { _ = try await storage.get() }?.kind == "corruptItem")
            try await storage.delete()
        }
    }
}
