import Foundation
import Testing

@testable import FileKeyring

/// The public API on its own: round trips, the empty keyring, failures that must leave the file alone.
@Suite struct FileKeyringTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("keyrings/default.keyring")
    }

    func item(_ name: String, _ secret: String, _ attributes: [String: String]? = nil) -> FileKeyringItem {
        FileKeyringItem(label: name, attributes: attributes ?? ["service": name], secret: FileKeyringSecret(utf8: secret))
    }

    @Test("a missing file is an empty keyring, and reading creates nothing")
    func missingFile() throws {
        #expect(try makeKeyring(path).items().isEmpty)
        #expect(try directory.entries().isEmpty)
    }

    @Test("the first transaction creates an empty keyring with libsecret's defaults")
    func emptyKeyring() throws {
        try makeKeyring(path).modify { _ in }
        let bytes = try readBytes(path)
        #expect(bytes.count == 71)  // as libsecret's own empty keyring (FORMAT.md)
        let file = try KeyringFile(parsing: bytes, path: path)
        #expect(file.salt.count == 32 && file.iterations == 100_000 && file.records.isEmpty && file.usageCount == 1)
        #expect(try makeKeyring(path).items().isEmpty)
        #expect(try makeKeyring(path, password: "any other secret").items().isEmpty)  // nothing to check against
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try directory.entries() == ["keyrings"])
        let inside = try FileManager.default.contentsOfDirectory(atPath: directory.path("keyrings")).sorted()
        #expect(inside == ["default.keyring", "default.keyring.lock"])  // no temporary file left
    }

    @Test("items round-trip: labels, attributes, times, binary and empty secrets, non-ASCII text")
    func roundTrip() throws {
        let keyring = try makeKeyring(path)
        let binary = FileKeyringItem(
            label: "binary", attributes: ["kind": "bytes", "ключ": "значение ✓"],
            secret: FileKeyringSecret(copying: (0...255).map { UInt8($0) }), created: 1, modified: 2)
        let written = [item("a", "alpha"), binary, item("empty", ""), item("", "no label", [:])]
        try keyring.modify { items in items = written }
        let read = try makeKeyring(path).items()
        #expect(read == written)
        #expect(read.map(\.label) == ["a", "binary", "empty", ""])
        #expect(try keyring.items(matching: ["kind": "bytes"]).map(\.label) == ["binary"])
        #expect(try keyring.items(matching: [:]).count == 4)
        #expect(try keyring.lookup(["service": "a"]).map { secretText($0.secret) } == "alpha")
        #expect(try keyring.lookup(["service": "nope"]) == nil)
    }

    @Test("store replaces the item with the same attribute set and keeps its creation time")
    func storeReplaces() throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in
            items = [FileKeyringItem(label: "old", attributes: ["a": "1"], secret: FileKeyringSecret(utf8: "x"), created: 5)]
        }
        try keyring.store(label: "other", attributes: ["a": "1", "b": "2"], secret: FileKeyringSecret(utf8: "y"))
        try keyring.store(label: "new", attributes: ["a": "1"], secret: FileKeyringSecret(utf8: "z"))
        let items = try keyring.items()
        #expect(items.map(\.label) == ["new", "other"])
        #expect(items[0].created == 5 && items[0].modified > 5 && secretText(items[0].secret) == "z")
        #expect(try keyring.remove(matching: ["a": "1"]) == 2)
        #expect(try keyring.items().isEmpty)
    }

    @Test("remove writes nothing when nothing matched")
    func removeNothing() throws {
        let keyring = try makeKeyring(path)
        try keyring.store(label: "k", attributes: ["a": "1"], secret: FileKeyringSecret(utf8: "x"))
        let before = try readBytes(path)
        #expect(try keyring.remove(matching: ["a": "2"]) == 0)
        #expect(try readBytes(path) == before)
    }

    @Test("unchanged items are written back byte for byte; changed ones are re-encrypted")
    func unchangedRecordsKept() throws {
        let keyring = try makeKeyring(path)
        var old = item("b", "2")
        old.modified = 1
        try keyring.modify { items in items = [item("a", "1"), old] }
        let before = try KeyringFile(parsing: readBytes(path), path: path)
        try keyring.modify { items in items[1].label = "b2" }
        let after = try KeyringFile(parsing: readBytes(path), path: path)
        #expect(after.records[0] == before.records[0])
        #expect(after.records[1].blob != before.records[1].blob)
        #expect(after.salt == before.salt && after.usageCount == before.usageCount + 1)
        let changed = try keyring.items()[1]
        #expect(changed.label == "b2")
        #expect(changed.modified > 1)
        #expect(changed.created == old.created)
    }

    @Test("items read from one keyring and written to another are encrypted with the other's key")
    func copyBetweenKeyrings() throws {
        let source = try makeKeyring(path)
        // Old times: copies keep them, however long after they were read they are written.
        try source.modify { items in
            items = [item("a", "1"), item("b", "2")]
            for index in items.indices { (items[index].created, items[index].modified) = (1000, 2000) }
        }
        let copied = try source.items()
        let otherPath = directory.path("other.keyring")
        let otherPassword = try makeKeyring(otherPath, password: "another secret")
        try otherPassword.modify { items in items = copied }
        #expect(try otherPassword.items() == copied)
        // Same secret, different file (so a different salt): re-encrypted too.
        let samePassword = try makeKeyring(directory.path("third.keyring"))
        try samePassword.modify { items in items = copied }
        #expect(try samePassword.items() == copied)
    }

    @Test("a body that throws writes nothing")
    func abortedTransaction() throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in items = [item("a", "1")] }
        let before = try readBytes(path)
        let error = #expect(throws: FileKeyringError.self) {
            try keyring.modify { items throws(FileKeyringError) in
                items.removeAll()
                throw .aborted("changed my mind")
            }
        }
        #expect(error?.code == .aborted)
        #expect(try readBytes(path) == before)
    }

    @Test("a wrong master secret fails with decryptionFailed and the file is not rewritten")
    func wrongMasterSecret() throws {
        try makeKeyring(path).modify { items in items = [item("a", "top secret value")] }
        let before = try readBytes(path)
        let wrong = try makeKeyring(path, password: "not hunter22")
        let readError = #expect(throws: FileKeyringError.self) { try wrong.items() }
        #expect(readError?.code == .decryptionFailed)
        #expect(readError?.message.contains("master secret") == true)
        let writeError = #expect(throws: FileKeyringError.self) {
            try wrong.modify { items in items = [] }
        }
        #expect(writeError?.code == .decryptionFailed)
        #expect(try readBytes(path) == before)
        for error in [readError, writeError].compactMap({ $0 }) {
            #expect(!error.description.contains("top secret") && !error.description.contains("hunter22"))
        }
    }

    @Test("every flipped byte of an item's blob fails the MAC: that item is damaged, the other readable")
    func tampering() throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in items = [item("a", "1"), item("b", "2")] }
        let good = try readBytes(path)
        let file = try KeyringFile(parsing: good, path: path)
        let blob = file.records[1].blob
        // Where the second blob sits in the file.
        let start = try #require((0...(good.count - blob.count)).first { Array(good[$0..<($0 + blob.count)]) == blob })
        for offset in stride(from: 0, to: blob.count, by: 5) {
            var bad = good
            bad[start + offset] ^= 0x80
            try writeBytes(bad, to: path)
            let contents = try keyring.contents()
            #expect(contents.items.map(\.label) == ["a"])
            #expect(contents.damaged.map(\.index) == [1] && contents.damaged.first?.damage == .failedMAC)
            try keyring.modify { items in items.removeAll() }  // the readable item goes, the damaged one stays
            #expect(try KeyringFile(parsing: readBytes(path), path: path).records.map(\.blob) == [Array(bad[start..<(start + blob.count)])])
        }
    }

    @Test("hashed attributes that disagree with the item make it damaged")
    func hashedAttributeMismatch() throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in items = [item("a", "1", ["k": "v1"]), item("b", "2", ["k": "v2"])] }
        var file = try KeyringFile(parsing: readBytes(path), path: path)
        // Swap the searchable hashes: libsecret would now find item b for k=v1.
        let first = file.records[0].hashedAttributes
        file.records[0].hashedAttributes = file.records[1].hashedAttributes
        file.records[1].hashedAttributes = first
        try writeBytes(file.serialized(), to: path)
        let error = #expect(throws: FileKeyringError.self) { try keyring.items(matching: ["k": "v1"]) }
        #expect(error?.code == .damagedItem, "both records are damaged, and either may be k=v1")
        #expect(try keyring.contents().damaged.map(\.damage) == [.inconsistentAttributes, .inconsistentAttributes])
    }

    @Test("truncated files are corrupt and left alone", arguments: [0, 1, 15, 16, 17, 18, 40, 70, -1, -33, -100])
    func truncated(cut: Int) throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in items = [item("a", "1")] }
        let good = try readBytes(path)
        let bad = Array(good[0..<(cut >= 0 ? cut : good.count + cut)])
        try writeBytes(bad, to: path)
        let error = #expect(throws: FileKeyringError.self) { try keyring.modify { items in items = [] } }
        #expect(error?.code == .corruptFile)
        #expect(try readBytes(path) == bad)
    }

    @Test("other versions are unsupported and left alone", arguments: [[0, 0] as [UInt8], [1, 1], [2, 0]])
    func otherVersions(version: [UInt8]) throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in items = [item("a", "1")] }
        var bytes = try readBytes(path)
        bytes[16] = version[0]
        bytes[17] = version[1]
        try writeBytes(bytes, to: path)
        let error = #expect(throws: FileKeyringError.self) { try keyring.modify { items in items = [] } }
        #expect(error?.code == .unsupportedVersion)
        #expect(try readBytes(path) == bytes)
    }

    @Test("a file that is not a keyring is corrupt")
    func notAKeyring() throws {
        try FileManager.default.createDirectory(atPath: directory.path("keyrings"), withIntermediateDirectories: true)
        try writeBytes(Array("GnomeKeyrinG\n\r\0\n\u{1}\u{0}xxxxxxxx".utf8), to: path)
        let error = #expect(throws: FileKeyringError.self) { try makeKeyring(path).items() }
        #expect(error?.code == .corruptFile)
        #expect(error?.path == path)
    }

    @Test("strings with NUL cannot be stored")
    func nulInStrings() throws {
        let keyring = try makeKeyring(path)
        for bad in [item("a\0b", "x"), item("a", "x", ["k\0": "v"]), item("a", "x", ["k": "v\0"])] {
            let error = #expect(throws: FileKeyringError.self) { try keyring.modify { items in items = [bad] } }
            #expect(error?.code == .invalidItem)
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("I/O errors carry errno")
    func ioError() throws {
        try writeBytes([1], to: directory.path("file"))
        let keyring = try makeKeyring(directory.path("file/default.keyring"))
        let error = #expect(throws: FileKeyringError.self) { try keyring.modify { _ in } }
        #expect(error?.code == .io && error?.errno == ENOTDIR)
    }

    @Test("the default path follows XDG_DATA_HOME, then HOME")
    func defaultPath() {
        #expect(FileKeyring.defaultPath(xdgDataHome: "/d", home: "/h") == "/d/keyrings/default.keyring")
        #expect(FileKeyring.defaultPath(xdgDataHome: nil, home: "/h") == "/h/.local/share/keyrings/default.keyring")
        #expect(FileKeyring.defaultPath(xdgDataHome: nil, home: nil) == nil)
    }

    @Test("secrets never show their bytes in descriptions")
    func secretDescription() {
        let secret = FileKeyringSecret(utf8: "hunter22")
        #expect("\(secret)" == "FileKeyringSecret(8 bytes)")
        #expect(!String(reflecting: item("a", "hunter22")).contains("hunter22"))
        var bytes: [UInt8] = [1, 2, 3]
        let wiped = FileKeyringSecret(wiping: &bytes)
        #expect(bytes == [0, 0, 0] && wiped.count == 3)
    }

    /// Each test gets a suite instance of its own, whose directory goes when the instance does,
    /// whether or not the test removed it (two tests did not, and left a directory behind per run).
    @Test("a temporary directory is removed with its contents when released")
    func temporaryDirectoryGoesAway() throws {
        let path: String
        do {
            let released = try TemporaryDirectory()
            path = released.url.path
            try writeBytes([1], to: released.path("file"))
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
