import Foundation
import Testing

@testable import FileKeyring
import Gcrypt

/// One damaged record among sound ones (issue 25): it is skipped, written back byte for byte,
/// reported, and a query it may answer fails rather than find nothing.
@Suite struct DamagedRecordTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("keyrings/default.keyring")
    }

    func item(_ account: String, _ secret: String) -> FileKeyringItem {
        FileKeyringItem(label: account, attributes: ["service": "s", "account": account], secret: FileKeyringSecret(utf8: secret))
    }

    /// Writes `good` then `bad`, and flips a byte of `bad`'s MAC in the file. Returns the damaged record.
    func fileWithADamagedRecord() throws -> EncryptedRecord {
        try makeKeyring(path).modify { items in items = [item("good", "g-secret"), item("bad", "b-secret")] }
        var file = try KeyringFile(parsing: readBytes(path), path: path)
        file.records[1].blob[file.records[1].blob.count - 1] ^= 0x01
        try writeBytes(file.serialized(), to: path)
        return file.records[1]
    }

    func records() throws -> [EncryptedRecord] {
        try KeyringFile(parsing: readBytes(path), path: path).records
    }

    @Test("one record fails its MAC: get and save succeed, it stays byte for byte, and it is named")
    func aDamagedRecordLeavesTheOthersUsable() throws {
        let damaged = try fileWithADamagedRecord()
        let keyring = try makeKeyring(path)

        let good = try #require(try keyring.lookup(["account": "good"]))
        #expect(secretText(good.secret) == "g-secret")
        try keyring.store(label: "new", attributes: ["service": "s", "account": "new"], secret: FileKeyringSecret(utf8: "n"))
        try keyring.store(label: "good", attributes: ["service": "s", "account": "good"], secret: FileKeyringSecret(utf8: "g2"))
        #expect(try keyring.remove(matching: ["account": "new"]) == 1)

        let written = try records()
        #expect(written.count == 2)
        #expect(written[1] == damaged, "the damaged record is written back byte for byte, in its place")
        #expect(secretText(try #require(try keyring.lookup(["account": "good"])).secret) == "g2")

        let contents = try keyring.contents()
        #expect(contents.items.map(\.label) == ["good"])
        let record = try #require(contents.damaged.first)
        #expect(contents.damaged.count == 1)
        #expect(record.index == 1 && record.damage == .failedMAC)
        #expect(record.hashedAttributeNames == ["account", "service"])
        #expect(record.description == "record 2 (it fails its MAC check; hashed attributes: account, service)")
    }

    @Test("a damaged record the query may match is a damagedItem error, never 'not found'; nothing is written")
    func aDamagedRecordMatchingTheQueryIsAnError() throws {
        _ = try fileWithADamagedRecord()
        let before = try readBytes(path)
        let keyring = try makeKeyring(path)
        for query in [["account": "bad"], ["service": "s", "account": "bad"], ["service": "s"], [:]] {
            let error = #expect(throws: FileKeyringError.self, "\(query)") { try keyring.lookup(query) }
            #expect(error?.code == .damagedItem)
            #expect(error?.message.contains("record 2") == true)
            #expect(error.map { !$0.description.contains("bad") && !$0.description.contains("b-secret") } == true, "no value, no secret")
        }
        #expect(try keyring.lookup(["account": "nobody"]) == nil, "a query it cannot match still finds nothing")
        #expect(throws: FileKeyringError.self) { try keyring.items() }
        let store = #expect(throws: FileKeyringError.self) {
            try keyring.store(label: "bad", attributes: ["service": "s", "account": "bad"], secret: FileKeyringSecret(utf8: "x"))
        }
        #expect(store?.code == .damagedItem)
        let remove = #expect(throws: FileKeyringError.self) { try keyring.remove(matching: ["account": "bad"]) }
        #expect(remove?.code == .damagedItem)
        #expect(try readBytes(path) == before, "neither overwritten nor removed")
    }

    @Test("when every record fails its MAC, it is the wrong master secret")
    func everyRecordFailingItsMACIsTheWrongSecret() throws {
        try makeKeyring(path).modify { items in items = [item("a", "1"), item("b", "2")] }
        var file = try KeyringFile(parsing: readBytes(path), path: path)
        for index in file.records.indices { file.records[index].blob[0] ^= 0x01 }
        try writeBytes(file.serialized(), to: path)
        let error = #expect(throws: FileKeyringError.self) { try makeKeyring(path).contents() }
        #expect(error?.code == .decryptionFailed)
        #expect(error?.message.contains("master secret") == true)
    }

    @Test("records that pass their MAC but decrypt to an invalid item, or disagree with their hashes, are damaged too")
    func recordsThatPassTheirMACButAreInvalidAreDamaged() throws {
        try makeKeyring(path).modify { items in items = [item("a", "1"), item("b", "2"), item("c", "3")] }
        var file = try KeyringFile(parsing: readBytes(path), path: path)
        let key = try KeyringKey(master: FileKeyringSecret(utf8: testPassword), salt: file.salt, iterations: file.iterations)
        // Record 0 claims b's hashed attributes; record 1 holds a sealed plaintext that is no item.
        file.records[0].hashedAttributes = file.records[1].hashedAttributes
        file.records[1].blob = try key.seal(SecretBytes(copying: [1, 2, 3]))
        try writeBytes(file.serialized(), to: path)
        let keyring = try makeKeyring(path)

        let contents = try keyring.contents()
        #expect(contents.items.map(\.label) == ["c"])
        #expect(contents.damaged.map(\.index) == [0, 1])
        #expect(contents.damaged.map(\.damage) == [.inconsistentAttributes, .invalidItem])
        // Record 0 holds a's attributes but claims b's: a query for either is refused.
        for account in ["a", "b"] {
            #expect(throws: FileKeyringError.self, "\(account)") { try keyring.lookup(["account": account]) }
        }
        try keyring.store(label: "d", attributes: ["service": "s", "account": "d"], secret: FileKeyringSecret(utf8: "4"))
        let written = try records()
        #expect(Array(written[0..<2]) == Array(file.records[0..<2]), "both written back byte for byte")
        #expect(try keyring.contents().items.map(\.label) == ["c", "d"])
    }
}

/// The caps on what a file may hold, checked from its framing before anything is allocated.
@Suite struct KeyringCapTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("default.keyring")
    }

    func expectTooLarge(_ file: KeyringFile, mentioning what: String) throws {
        try writeBytes(file.serialized(), to: path)
        let before = try readBytes(path)
        let error = #expect(throws: FileKeyringError.self) { try makeKeyring(path).modify { items in items = [] } }
        #expect(error?.code == .tooLarge)
        #expect(error?.message.contains(what) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("move it aside") == true, "it says what to do")
        #expect(try readBytes(path) == before, "left as it is")
    }

    func file(_ records: [EncryptedRecord]) -> KeyringFile {
        KeyringFile(salt: [UInt8](repeating: 1, count: 32), iterations: 1, modified: 0, usageCount: 0, records: records)
    }

    @Test("more records than the cap fail as tooLarge, before they are decoded")
    func tooManyRecords() throws {
        let record = EncryptedRecord(hashedAttributes: [], blob: [UInt8](repeating: 0, count: 64))
        try expectTooLarge(file(Array(repeating: record, count: KeyringFile.maximumRecords + 1)),
                           mentioning: "more than \(KeyringFile.maximumRecords) records")
    }

    @Test("a record with more hashed attributes than the cap, or too long a name, fails as tooLarge")
    func tooManyAttributesOrTooLongANameInARecord() throws {
        let attributes = (0...KeyringFile.maximumAttributes).map { EncryptedRecord.HashedAttribute(name: "a\($0)", mac: []) }
        try expectTooLarge(file([EncryptedRecord(hashedAttributes: attributes, blob: [])]),
                           mentioning: "more than \(KeyringFile.maximumAttributes) hashed attributes")
        let long = EncryptedRecord.HashedAttribute(name: String(repeating: "n", count: KeyringFile.maximumStringLength + 1), mac: [])
        try expectTooLarge(file([EncryptedRecord(hashedAttributes: [long], blob: [])]),
                           mentioning: "more than \(KeyringFile.maximumStringLength) bytes")
    }

    /// The fuzzer's finding (fuzz/crashes): one record with 8,000 distinct hashed-attribute names,
    /// which the duplicate check took 12 s to parse (N²/2 comparisons; a 256 MiB file, days).
    @Test("the fuzzer's reproducer, 8,000 hashed attributes in one record, fails as tooLarge")
    func theFuzzersQuadraticReproducer() throws {
        let reproducer = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../fuzz/crashes/keyring-file-8000-hashed-attributes.keyring").standardized
        let bytes = try readBytes(reproducer.path)
        #expect(bytes.count > 80_000, "the file the fuzz README describes")
        let error = #expect(throws: FileKeyringError.self) { _ = try KeyringFile(parsing: bytes, path: reproducer.path) }
        #expect(error?.code == .tooLarge)
        #expect(error?.message.contains("more than \(KeyringFile.maximumAttributes) hashed attributes") == true,
                "\(error?.message ?? "")")
    }

    @Test("a file over the size cap fails as tooLarge from its size alone, without being read")
    func aFileOverTheSizeCap() throws {
        // Sparse: a terabyte the disk does not hold. Reading it would take minutes; the size says it all.
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 1 << 40)
        try handle.close()
        let started = ContinuousClock.now
        let error = #expect(throws: FileKeyringError.self) { try makeKeyring(path).items() }
        #expect(error?.code == .tooLarge)
        // The whole size: told by fstat before reading, not by a read that stopped at the cap.
        #expect(error?.message.contains("\(1 << 40) bytes, over the cap of \(POSIX.maximumFileSize >> 20) MiB") == true,
                "\(error?.message ?? "")")
        #expect(ContinuousClock.now - started < .seconds(5), "not read")
    }

    @Test("an item over a cap inside its encryption is a damaged record, not a damaged file; none is written")
    func anItemOverACapIsADamagedRecord() throws {
        let keyring = try makeKeyring(path)
        let long = String(repeating: "l", count: KeyringFile.maximumStringLength + 1)
        let tooLong = FileKeyringItem(label: long, attributes: ["k": "long"], secret: FileKeyringSecret(utf8: "2"))
        let refused = #expect(throws: FileKeyringError.self) { try keyring.modify { items in items = [tooLong] } }
        #expect(refused?.code == .invalidItem, "the writer does not write what no reader would read")
        try keyring.modify { items in items = [FileKeyringItem(label: "ok", attributes: ["k": "v"], secret: FileKeyringSecret(utf8: "1"))] }
        var file = try KeyringFile(parsing: readBytes(path), path: path)
        let key = try KeyringKey(master: FileKeyringSecret(utf8: testPassword), salt: file.salt, iterations: file.iterations)
        file.records.append(try FileKeyring.encrypt(tooLong, key: key))
        try writeBytes(file.serialized(), to: path)
        let contents = try keyring.contents()
        #expect(contents.items.map(\.label) == ["ok"])
        #expect(contents.damaged.map(\.damage) == [.invalidItem])
    }
}
