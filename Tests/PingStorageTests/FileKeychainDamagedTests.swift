import Foundation
import Testing
@testable import FileKeyring
@testable import PingStorage

/// KeychainStorage on a file keyring with one damaged record (issue 25): the other accounts work,
/// the damaged account's calls fail with `corruptItem`, and nothing touches the record.
@Suite("KeychainStorage on a file keyring with a damaged record")
struct FileKeychainDamagedTests {
    /// Saves `good` and `bad` (in that order), flips a byte of `bad`'s MAC, and returns its record.
    static func fileWithDamagedAccount(_ file: TestFileKeyring) async throws -> EncryptedRecord {
        try await file.storage(String.self, account: "good").save(item: "g")
        try await file.storage(String.self, account: "bad").save(item: "b")
        var parsed = try KeyringFile(parsing: #require(try POSIX.readFile(file.path)), path: file.path)
        #expect(parsed.records.count == 2)
        parsed.records[1].blob[parsed.records[1].blob.count - 1] ^= 0x01
        try Data(parsed.serialized()).write(to: URL(fileURLWithPath: file.path))
        return parsed.records[1]
    }

    static func records(_ file: TestFileKeyring) throws -> [EncryptedRecord] {
        try KeyringFile(parsing: #require(try POSIX.readFile(file.path)), path: file.path).records
    }

    /// The reason of a KeychainError `body` throws, which must be `corruptItem` of `operation`.
    static func expectCorruptItem(_ operation: KeychainError.Operation, _ body: () async throws -> Void) async -> KeychainError.Details? {
        do {
            try await body()
            Issue.record("no error")
        } catch let error as KeychainError {
            #expect(error.operation == operation)
            if case .corruptItem(let details) = error.reason { return details }
            Issue.record("\(error.reason.kind) instead of corruptItem: \(error.errorMessage)")
        } catch {
            Issue.record("\(error)")
        }
        return nil
    }

    @Test func otherAccountsWorkAndTheDamagedAccountIsACorruptItemThatIsNeverOverwrittenOrDeleted() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let damaged = try await Self.fileWithDamagedAccount(file)

        let good = file.storage(String.self, account: "good")
        #expect(try await good.get() == "g")
        try await good.save(item: "g2")
        #expect(try await good.get() == "g2")
        let other = file.storage(String.self, account: "new")
        try await other.save(item: "n")
        #expect(try await other.get() == "n")
        try await other.delete()

        let bad = file.storage(String.self, account: "bad")
        let details = await Self.expectCorruptItem(.retrieve) { _ = try await bad.get() }
        #expect(details?.message.contains("account 'bad'") == true, "\(details?.message ?? "")")
        #expect(details?.message.contains("record 2") == true)
        #expect(details?.detail?.contains(file.path) == true)
        _ = await Self.expectCorruptItem(.save) { try await bad.save(item: "overwritten") }
        _ = await Self.expectCorruptItem(.delete) { try await bad.delete() }

        let written = try Self.records(file)
        #expect(written.count == 2)
        #expect(written[1] == damaged, "the damaged record is still there, byte for byte")
        #expect(try await good.get() == "g2")
    }

    @Test func theInventoryNamesTheDamagedRecordAndRefusesWhatItMayBe() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        _ = try await Self.fileWithDamagedAccount(file)
        let inventory = try await file.inventory()

        let state = try #require(try await inventory.fileState())
        #expect(state.exists && state.itemCount == 1)
        #expect(state.damaged == [KeyringInventory.DamagedRecord(
            number: 2, damage: "failedMAC", problem: "it fails its MAC check",
            hashedAttributeNames: ["account", AppIdentity.attribute, "service", "username", "xdg:schema"])])
        #expect(try await file.storage(String.self, account: "good").itemInfo()?.label == "good (\(KeychainConfiguration.defaultService))")
        await #expect(throws: KeychainError.self) { _ = try await file.storage(String.self, account: "bad").itemInfo() }
        await #expect(throws: KeychainError.self, "a list that would lack it") {
            _ = try await inventory.items(matchingAny: [["service": KeychainConfiguration.defaultService]], reading: .metadata)
        }
        #expect(try await inventory.items(matchingAny: [["service": "elsewhere"]], reading: .secrets).isEmpty)
    }

    @Test func aKeyThatMayBeInADamagedRecordIsACorruptItemNeverAMissingKeyNorReplaced() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let encryptor = try #require(file.encryptor())
        let storage = file.storage(String.self, account: "sealed", encryptor: encryptor)
        try await storage.save(item: "secret")
        var parsed = try KeyringFile(parsing: #require(try POSIX.readFile(file.path)), path: file.path)
        let keyIndex = try #require(parsed.records.firstIndex { $0.hashedAttributes.contains { $0.name == "key-id" } })
        parsed.records[keyIndex].blob[0] ^= 0x01
        try Data(parsed.serialized()).write(to: URL(fileURLWithPath: file.path))

        // A vault of its own (as in a fresh process): the key is read from the file, not from memory.
        let reader = file.storage(String.self, account: "sealed",
                                  encryptor: try #require(file.freshEncryptor()))
        let details = await Self.expectCorruptItem(.retrieve) { _ = try await reader.get() }
        #expect(details?.message.contains("damaged record") == true, "\(details?.message ?? "")")

        // Sealing new data needs a key: none is readable, and the damaged one is never replaced
        // by a new key behind the user's back.
        let writer = file.storage(String.self, account: "sealed-2",
                                  encryptor: try #require(file.freshEncryptor()))
        _ = await Self.expectCorruptItem(.save) { try await writer.save(item: "more") }
        #expect(try Self.records(file).count == 2, "no new key, no new item")
    }
}
