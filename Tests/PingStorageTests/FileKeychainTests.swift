import FileKeyring
import Foundation
import SecretService
import Testing
@testable import PingStorage

/// A file keyring in a fresh directory, opened with a known secret (no portal), and a
/// configuration that keeps items in it.
struct TestFileKeyring {
    let directory: String
    let path: String
    let configuration: KeychainConfiguration
    static let masterSecret: [UInt8] = Array(0..<64)

    /// `timeout`: long by default, because the whole test process starts hundreds of tests at once
    /// on two cores, and a test may wait seconds for a thread before its first call.
    init(timeout: Duration = .seconds(120)) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("filekeychain-\(UUID().uuidString)").path
        path = directory + "/keyrings/default.keyring"
        configuration = KeychainConfiguration(timeout: timeout, backend: .fileKeyring(path: path))
        runtime = Self.runtime()
        keyring = try FileKeyring(path: path, masterSecret: FileKeyringSecret(copying: Self.masterSecret))
    }

    /// The same file, opened independently (as another process or libsecret would).
    let keyring: FileKeyring
    /// The runtime of this test's storages: its Secret portal gives ``masterSecret``.
    let runtime: KeychainRuntime

    /// A runtime as a process of the app has: no Secret Service, and a Secret portal that gives
    /// ``masterSecret``.
    static func runtime() -> KeychainRuntime {
        KeychainRuntime(FakeSecretService()) { _ throws(PingStorage.StorageFailure) in masterSecret }
    }

    func storage<T>(_ type: T.Type = T.self, account: String = "acct", encryptor: Encryptor = NoEncryptor(),
                    configuration: KeychainConfiguration? = nil) -> KeychainStorage<T> {
        KeychainStorage<T>(account: account, encryptor: encryptor, cacheStrategy: .NO_CACHE,
                           configuration: configuration ?? self.configuration, runtime: runtime)
    }

    /// SecuredKeyEncryptor on the file, in this test's runtime (its key binding `binding`, else the configuration's).
    func encryptor(binding: KeychainConfiguration.KeyBinding? = nil) -> SecuredKeyEncryptor? {
        var configuration = configuration
        if let binding { configuration.keyBinding = binding }
        return SecuredKeyEncryptor(configuration: configuration, runtime: runtime)
    }

    /// SecuredKeyEncryptor on the file as a fresh process has it (a runtime of its own: nothing in
    /// memory), with unbound keys.
    func freshEncryptor() -> SecuredKeyEncryptor? {
        var configuration = configuration
        configuration.keyBinding = .none
        return SecuredKeyEncryptor(configuration: configuration, runtime: Self.runtime())
    }

    /// What ping-keyring sees of the file, in this test's runtime.
    func inventory() async throws -> KeyringInventory {
        try await KeyringInventory.open(for: configuration, in: runtime)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

private let ours = ["service": "com.pingidentity.keychainService", "account": "acct", "username": "acct",
                    "xdg:schema": "com.pingidentity.PingStorage", AppIdentity.attribute: AppIdentity.current.id]

@Suite("KeychainStorage on a file keyring (as in a Flatpak sandbox)")
struct FileKeychainTests {
    @Test func saveGetDeleteKeepOneItemWithTheHostsAttributesAndLabel() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let storage = file.storage(Dog.self)
        try await storage.save(item: lucky)
        try await storage.save(item: Dog(name: "Rex", breed: "Boxer"))
        #expect(try await storage.get() == Dog(name: "Rex", breed: "Boxer"))
        let items = try file.keyring.items()
        #expect(items.count == 1)
        #expect(items.first?.attributes == ours)
        #expect(items.first?.label == "acct (com.pingidentity.keychainService)")
        try await storage.delete()
        try await storage.delete()
        #expect(try await storage.get() == nil)
        #expect(try file.keyring.items().isEmpty)
        #expect(try await file.configuration.backendInUse(in: file.runtime) == KeychainBackendChoice(
            kind: .fileKeyring(path: file.path), reason: "set in KeychainConfiguration"))
    }

    @Test func theStoredItemIsItsMetadataAndItsBytesAsSaved() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let storage = file.storage(Dog.self)
        #expect(try await storage.storedItem() == nil)
        try await storage.save(item: lucky)
        let (info, secret, contentType) = try #require(try await storage.storedItem())
        #expect(info == (try await storage.itemInfo()))
        #expect(info.attributes == ours)
        #expect(info.location == "/file/default/1")
        #expect(info.collection == file.path)
        #expect(contentType == "text/plain")
        #expect(try JSONDecoder().decode(Dog.self, from: secret) == lucky)
    }

    /// Python keyring's item (service + username, no account) is read while the app has no item
    /// of its own; once it has, the app's own is read, the newer item no app owns is never written
    /// into, the app's duplicates are collapsed, and another account's item is not touched.
    @Test func itemsOtherToolsWroteAreReadUntilTheAppHasItsOwnAndNeverWrittenInto() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let keyring = file.keyring
        let json = try JSONEncoder().encode(lucky)
        let python = FileKeyringItem(label: "py", attributes: ["service": ours["service"]!, "username": "acct"],
                                     secret: FileKeyringSecret(copying: Array(json)), created: 100, modified: 200)
        let other = FileKeyringItem(label: "other", attributes: ["service": ours["service"]!, "username": "acct", "account": "bob"],
                                    secret: FileKeyringSecret(utf8: "{}"), created: 300, modified: 300)
        try keyring.modify { items throws(FileKeyringError) in items += [python, other] }
        let storage = file.storage(Dog.self)
        #expect(try await storage.get() == lucky, "no item of the app's own: the one no app owns")
        let rex = Dog(name: "Rex", breed: "Boxer")
        try await storage.save(item: rex)
        // Two of the app's own now: a duplicate a crashed process left, older.
        try keyring.modify { items throws(FileKeyringError) in
            items.append(FileKeyringItem(label: "old", attributes: ours, secret: FileKeyringSecret(utf8: "\"stale\""), created: 50, modified: 60))
        }
        #expect(try await storage.get() == rex, "the app's own, although the item no app owns is newer")
        try await storage.save(item: lucky)
        let items = try keyring.items()
        #expect(items.count == 3, "\(items.map(\.label))")
        #expect(items.contains(python), "the item no app owns, exactly as it was")
        #expect(items.contains(other))
        let kept = try #require(items.first { $0.attributes == ours })
        #expect(kept.label == "acct (com.pingidentity.keychainService)")
        #expect(try JSONDecoder().decode(Dog.self, from: kept.secret.copiedData()) == lucky)
        try await storage.delete()
        #expect(try keyring.items() == [other], "a delete removes the app's own and the item no app owns")
    }

    @Test func anUnchangedSaveDoesNotRewriteTheFile() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let storage = file.storage(Dog.self)
        try await storage.save(item: lucky)
        let before = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        try await storage.save(item: lucky)
        let after = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        #expect(before == after, "the file was not replaced")
    }

    /// libsecret's file backend reads the portal's first 64 bytes: a longer secret used whole would
    /// give another key, and libsecret in the same app would fail every item's MAC.
    @Test func aPortalSecretLongerThan64BytesIsUsedAsLibsecretUsesIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("filekeychain-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/keyrings/default.keyring"
        let configuration = KeychainConfiguration(timeout: .seconds(120), backend: .fileKeyring(path: path))
        let long = TestFileKeyring.masterSecret + Array(repeating: 0xAB, count: 36)
        var given = long
        let keychain = FileKeychain(path: path) { _ throws(PingStorage.StorageFailure) in long }
        try keychain.install(wiping: &given)
        #expect(given.allSatisfy { $0 == 0 }, "the portal's bytes are wiped")
        // The secret as the portal gives it, the keyring opened at the first call.
        let runtime = KeychainRuntime(FakeSecretService()) { _ throws(PingStorage.StorageFailure) in long }
        try await KeychainStorage<String>(account: "acct", encryptor: NoEncryptor(), cacheStrategy: .NO_CACHE,
                                          configuration: configuration, runtime: runtime).save(item: "token")
        let libsecretView = try FileKeyring(path: path, masterSecret: FileKeyringSecret(copying: TestFileKeyring.masterSecret))
        #expect(try libsecretView.lookup(["account": "acct"])?.secret == FileKeyringSecret(utf8: "\"token\""))
    }

    @Test func aFileTheSecretDoesNotOpenIsAnErrorAndIsNeverOverwritten() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        try FileKeyring(path: file.path, masterSecret: FileKeyringSecret(utf8: "another secret"))
            .store(label: "x", attributes: ours, secret: FileKeyringSecret(utf8: "\"kept\""))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file.path))
        let storage = file.storage(String.self)
        for operation in [{ _ = try await storage.get() }, { try await storage.save(item: "new") }, { try await storage.delete() }] {
            do {
                try await operation()
                Issue.record("expected corruptItem")
            } catch let error as KeychainError {
                guard case .corruptItem(let details) = error.reason else { Issue.record("got \(error)"); continue }
                #expect(details.message.contains("decryption failed"))
                #expect(details.detail?.contains(file.path) == true)
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file.path)) == bytes, "the file is untouched")
    }

    @Test func aWriterHoldingTheFileEndsInTimedOutWithinTheDeadline() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        try await file.storage(String.self).save(item: "first")
        let hurried = KeychainConfiguration(timeout: .milliseconds(300), backend: file.configuration.backend)
        let lock = open(file.path + ".lock", O_RDWR)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX) == 0)
        let started = ContinuousClock.now
        do {
            try await file.storage(String.self, configuration: hurried).save(item: "second")
            Issue.record("expected timedOut")
        } catch let error as KeychainError {
            #expect(error.kind == "timedOut")
        }
        // Ended by its 300 ms deadline (the lock is held until the test ends): a bound far from
        // both, as a full parallel run on two cores can delay the resumption for seconds.
        #expect(ContinuousClock.now - started < .seconds(25))
        #expect(try await file.storage(String.self).get() == "first", "reads do not wait for writers")
    }

    @Test func concurrentSavesOfManyAccountsLoseNothing() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask { try await file.storage(Int.self, account: "account-\(index)").save(item: index) }
            }
            try await group.waitForAll()
        }
        let items = try file.keyring.items()
        #expect(items.count == 40)
        for index in 0..<40 { #expect(try await file.storage(Int.self, account: "account-\(index)").get() == index) }
    }

    @Test func securedKeyEncryptorKeepsOneKeyInTheFileAndAFreshProcessDecrypts() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        // A plain key, whether a TPM answers or not (`dbus-test/run --tpm`): its 32 bytes are in the file.
        let encryptor = try #require(file.encryptor(binding: KeychainConfiguration.KeyBinding.none))
        try await file.storage(Dog.self, encryptor: encryptor).save(item: lucky)
        try await file.storage(Dog.self, account: "b", encryptor: encryptor).save(item: lucky)
        let keys = try file.keyring.items().filter { $0.attributes["xdg:schema"] == KeyVault.schema }
        #expect(keys.count == 1)
        #expect(keys.first?.secret.count == 32)
        let stored = try #require(file.keyring.items().first { $0.attributes["account"] == "acct" })
        #expect(stored.secret.withBytes { span in (0..<span.count).map { span[$0] } } != Array(try JSONEncoder().encode(lucky)))
        // A fresh vault (another process) reads the key from the file.
        let fresh = try #require(file.freshEncryptor())
        #expect(try await file.storage(Dog.self, encryptor: fresh).get() == lucky)
    }

    @Test func backendSelectionFollowsTheSettingTheVariableAndTheSandbox() throws {
        let home = ["HOME": "/home/u"]
        let file = BackendRule.decided(.init(kind: .fileKeyring(path: "/home/u/.local/share/keyrings/default.keyring"),
                                             reason: "PINGSTORAGE_BACKEND=file-keyring"))
        #expect(try BackendRule.resolve(.automatic, environment: home, isSandboxed: false)
            == .decided(.init(kind: .secretService, reason: "not in a Flatpak sandbox (/.flatpak-info does not exist)")))
        #expect(try BackendRule.resolve(.automatic, environment: home, isSandboxed: true)
            == .sandboxed(path: "/home/u/.local/share/keyrings/default.keyring"))
        #expect(try BackendRule.resolve(.automatic, environment: ["XDG_DATA_HOME": "/d", "HOME": "/h"], isSandboxed: true)
            == .sandboxed(path: "/d/keyrings/default.keyring"))
        #expect(try BackendRule.resolve(.automatic, environment: home.merging(["PINGSTORAGE_BACKEND": "file-keyring"]) { $1 },
                                        isSandboxed: false) == file)
        #expect(try BackendRule.resolve(.automatic, environment: home.merging(["PINGSTORAGE_BACKEND": "secret-service"]) { $1 },
                                        isSandboxed: true)
            == .decided(.init(kind: .secretService, reason: "PINGSTORAGE_BACKEND=secret-service")))
        #expect(try BackendRule.resolve(.secretService, environment: home.merging(["PINGSTORAGE_BACKEND": "file-keyring"]) { $1 },
                                        isSandboxed: true)
            == .decided(.init(kind: .secretService, reason: "set in KeychainConfiguration")), "the configuration wins")
        #expect(try BackendRule.resolve(.automatic, environment: home.merging(["GTK_USE_PORTAL": "1"]) { $1 }, isSandboxed: false)
            == .decided(.init(kind: .secretService, reason: "not in a Flatpak sandbox (/.flatpak-info does not exist)")),
                "GTK_USE_PORTAL does not mean a sandbox")
        #expect(throws: KeychainError.self) {
            try BackendRule.resolve(.automatic, environment: ["PINGSTORAGE_BACKEND": "files"], isSandboxed: false)
        }
        #expect(throws: KeychainError.self) { try BackendRule.resolve(.fileKeyring(), environment: [:], isSandboxed: false) }
    }
}
