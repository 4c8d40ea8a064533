import Foundation
import Testing

@testable import FileKeyring

/// Both directions against libsecret's own file backend (`SECRET_BACKEND=file` with its test hooks
/// `SECRET_FILE_TEST_PATH` and `SECRET_FILE_TEST_PASSWORD`), through `secret-tool` and the Python
/// binding. No daemon and no D-Bus session: the file backend needs neither.
@Suite(.serialized) struct LibsecretInteropTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("keyrings/default.keyring")
    }

    @Test("libsecret stores, we read")
    func libsecretWritesWeRead() async throws {
        let stored = try await secretTool(["store", "--label", "L", "service", "s", "account", "a"], keyring: path, input: "s3cret")
        #expect(stored.status == 0, "\(stored.stderr)")
        let binary = try await secretTool(["store", "--label", "bin", "kind", "binary"], keyring: path, input: "\u{0}\u{1}\u{7f}x")
        #expect(binary.status == 0, "\(binary.stderr)")
        let items = try makeKeyring(path).items()
        #expect(items.map(\.label) == ["L", "bin"])
        #expect(items[0].attributes == ["service": "s", "account": "a"])
        #expect(secretText(items[0].secret) == "s3cret")
        #expect(items[1].secret == FileKeyringSecret(copying: [0, 1, 0x7F, 0x78]))
        #expect(items[0].created > 1_600_000_000 && items[0].created == items[0].modified)
    }

    @Test("libsecret's Python binding stores non-ASCII labels and attributes, we read")
    func pythonWritesWeRead() async throws {
        let result = try await libsecretPython(
            """
            ok = Secret.password_store_sync(None, {'service': 'ÿ✓', 'user': 'ナ'}, None, 'Étiquette ü', 'pässwörd', None)
            print(ok)
            """, keyring: path)
        #expect(result.status == 0 && result.stdout == "True\n", "\(result.stderr)")
        let item = try #require(try makeKeyring(path).lookup(["user": "ナ"]))
        #expect(item.label == "Étiquette ü" && item.attributes == ["service": "ÿ✓", "user": "ナ"])
        #expect(secretText(item.secret) == "pässwörd")
    }

    /// A file whose key is cheap to guess (a 1-byte salt, one PBKDF2 iteration; any writer may
    /// have made it) is re-keyed by the next write: a 32-byte salt and 100,000 iterations, every
    /// item sealed again, and libsecret still reads both the old item and the new one. (An empty
    /// salt cannot be opened at all: libgcrypt's PBKDF2, which libsecret uses too, refuses it.)
    @Test("a weak file is re-keyed by the next write, and libsecret reads it")
    func aWeakFileIsReKeyedOnTheNextWrite() async throws {
        let weakKey = try KeyringKey(master: FileKeyringSecret(utf8: testPassword), salt: [7], iterations: 1)
        let old = FileKeyringItem(label: "old", attributes: ["service": "s", "account": "old"], secret: FileKeyringSecret(utf8: "before"))
        let weak = KeyringFile(salt: [7], iterations: 1, modified: 1_700_000_000, usageCount: 1,
                               records: [try FileKeyring.encrypt(old, key: weakKey)])
        try FileManager.default.createDirectory(atPath: directory.path("keyrings"), withIntermediateDirectories: true)
        try Data(weak.serialized()).write(to: URL(fileURLWithPath: path))
        #expect(try makeKeyring(path).items().map(\.label) == ["old"], "a weak file opens")

        try makeKeyring(path).store(label: "new", attributes: ["service": "s", "account": "new"], secret: FileKeyringSecret(utf8: "after"))
        let written = try KeyringFile(parsing: readBytes(path), path: path)
        #expect(written.salt.count == 32 && written.iterations == 100_000, "re-keyed: \(written.salt.count) bytes, \(written.iterations)")
        #expect(try makeKeyring(path).items().map(\.label) == ["old", "new"])
        for (account, value) in [("old", "before"), ("new", "after")] {
            let lookup = try await secretTool(["lookup", "service", "s", "account", account], keyring: path)
            #expect(lookup.status == 0 && lookup.stdout == value, "libsecret reads \(account): \(lookup.stderr)")
        }
    }

    /// A weak file with a record that fails its MAC is never re-keyed: the record would become
    /// unreadable for good. The write itself goes on, under the old key, with the record kept.
    @Test("a weak file with a damaged record is not re-keyed")
    func aWeakFileWithADamagedRecordIsNotReKeyed() throws {
        let weakKey = try KeyringKey(master: FileKeyringSecret(utf8: testPassword), salt: [7], iterations: 1)
        var damaged = try FileKeyring.encrypt(
            FileKeyringItem(label: "d", attributes: ["k": "d"], secret: FileKeyringSecret(utf8: "x")), key: weakKey)
        damaged.blob[damaged.blob.count - 1] ^= 1
        let good = try FileKeyring.encrypt(FileKeyringItem(label: "g", attributes: ["k": "g"], secret: FileKeyringSecret(utf8: "y")), key: weakKey)
        let weak = KeyringFile(salt: [7], iterations: 1, modified: 1_700_000_000, usageCount: 1, records: [good, damaged])
        try FileManager.default.createDirectory(atPath: directory.path("keyrings"), withIntermediateDirectories: true)
        try Data(weak.serialized()).write(to: URL(fileURLWithPath: path))
        try makeKeyring(path).store(label: "new", attributes: ["k": "n"], secret: FileKeyringSecret(utf8: "z"))
        let written = try KeyringFile(parsing: readBytes(path), path: path)
        #expect(written.salt == [7] && written.iterations == 1, "not re-keyed")
        #expect(written.records.count == 3 && written.records[1] == damaged, "the damaged record kept byte for byte")
        #expect(try makeKeyring(path).contents().items.map(\.label) == ["g", "new"])
    }

    /// What the damaged-item errors advise: libsecret's `secret-tool clear` with the item's
    /// attributes removes a damaged record (libsecret matches hashed attributes and decrypts
    /// nothing to clear), and leaves the others.
    @Test("secret-tool clear removes a damaged record, as the damaged-item errors advise")
    func secretToolClearRemovesADamagedRecord() async throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in
            items = [FileKeyringItem(label: "g", attributes: ["service": "s", "account": "good"], secret: FileKeyringSecret(utf8: "1")),
                     FileKeyringItem(label: "b", attributes: ["service": "s", "account": "bad"], secret: FileKeyringSecret(utf8: "2"))]
        }
        var file = try KeyringFile(parsing: readBytes(path), path: path)
        file.records[1].blob[0] ^= 0x01
        try writeBytes(file.serialized(), to: path)
        #expect(try keyring.contents().damaged.count == 1)
        let cleared = try await secretTool(["clear", "service", "s", "account", "bad"], keyring: path)
        #expect(cleared.status == 0, "\(cleared.stderr)")
        let contents = try keyring.contents()
        #expect(contents.damaged.isEmpty && contents.items.map(\.label) == ["g"])
    }

    @Test("we store, libsecret reads (secret-tool lookup and search, Python search)")
    func weWriteLibsecretReads() async throws {
        let keyring = try makeKeyring(path)
        try keyring.store(label: "L", attributes: ["service": "s", "account": "a"], secret: FileKeyringSecret(utf8: "s3cret"))
        try keyring.store(
            label: "Étiquette", attributes: ["service": "ÿ✓", "user": "ナ"], secret: FileKeyringSecret(utf8: "pässwörd"))
        let lookup = try await secretTool(["lookup", "service", "s", "account", "a"], keyring: path)
        #expect(lookup.status == 0 && lookup.stdout == "s3cret", "\(lookup.stderr)")
        let partial = try await secretTool(["lookup", "account", "a"], keyring: path)
        #expect(partial.stdout == "s3cret")
        let missing = try await secretTool(["lookup", "account", "b"], keyring: path)
        #expect(missing.status != 0 && missing.stdout.isEmpty)
        let search = try await secretTool(["search", "--all", "service", "s"], keyring: path)
        #expect(search.stdout.contains("label = L") && search.stdout.contains("secret = s3cret"))
        let python = try await libsecretPython(
            """
            items = Secret.password_search_sync(None, {'user': 'ナ'}, Secret.SearchFlags.ALL | Secret.SearchFlags.LOAD_SECRETS, None)
            for item in items:
                attributes = item.get_attributes()
                print(item.get_label(), attributes['service'], attributes['user'], item.retrieve_secret_sync(None).get_text())
            """, keyring: path)
        #expect(python.stdout == "Étiquette ÿ✓ ナ pässwörd\n", "\(python.stderr)")
    }

    @Test("libsecret replaces our item in place (our hashed attributes are in its order) and we see its change")
    func libsecretReplacesOurItem() async throws {
        let keyring = try makeKeyring(path)
        try keyring.modify { items in
            items = [FileKeyringItem(
                label: "ours", attributes: ["service": "s", "account": "a", "b": "1"],
                secret: FileKeyringSecret(utf8: "v1"), created: 1_000, modified: 1_000)]
        }
        let replaced = try await secretTool(["store", "--label", "theirs", "account", "a", "b", "1", "service", "s"], keyring: path, input: "v2")
        #expect(replaced.status == 0, "\(replaced.stderr)")
        let items = try keyring.items()
        #expect(items.count == 1)
        #expect(items.first?.label == "theirs" && items.first.map { secretText($0.secret) } == "v2")
        #expect(items.first?.created == 1_000)  // libsecret kept our creation time: it decrypted our item
        let cleared = try await secretTool(["clear", "service", "s"], keyring: path)
        #expect(cleared.status == 0)
        #expect(try keyring.items().isEmpty)
    }

    @Test("a keyring libsecret emptied reads as empty, and takes our items")
    func libsecretEmptyKeyring() async throws {
        _ = try await secretTool(["store", "--label", "L", "a", "b"], keyring: path, input: "x")
        _ = try await secretTool(["clear", "a", "b"], keyring: path)
        #expect(try readBytes(path).count == 71)
        let keyring = try makeKeyring(path)
        #expect(try keyring.items().isEmpty)
        try keyring.store(label: "after", attributes: ["a": "c"], secret: FileKeyringSecret(utf8: "y"))
        #expect(try await secretTool(["lookup", "a", "c"], keyring: path).stdout == "y")
    }

    @Test("a 64-byte master secret (the portal's size) works both ways")
    func portalSizedSecret() async throws {
        let secret = String(repeating: "0123456789abcdef", count: 4)
        #expect(secret.utf8.count == 64)
        try makeKeyring(path, password: secret).store(label: "L", attributes: ["x": "1"], secret: FileKeyringSecret(utf8: "ours"))
        _ = try await secretTool(["store", "--label", "M", "x", "2"], keyring: path, password: secret, input: "theirs")
        #expect(try await secretTool(["lookup", "x", "1"], keyring: path, password: secret).stdout == "ours")
        #expect(try makeKeyring(path, password: secret).lookup(["x": "2"]).map { secretText($0.secret) } == "theirs")
        // And libsecret fails, as we do, with the wrong secret.
        let wrong = try await secretTool(["lookup", "x", "1"], keyring: path, password: "wrong")
        #expect(wrong.status != 0 && wrong.stdout.isEmpty)
    }
}
