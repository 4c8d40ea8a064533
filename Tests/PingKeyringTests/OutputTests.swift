import Foundation
import PingStorage
import Testing
@testable import PingKeyringCore

/// Parses a `--json` document with JSONSerialization (a parser we did not write).
func parseJSON(_ document: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(document.utf8))
    return try #require(object as? [String: Any], sourceLocation: sourceLocation)
}

/// The keys of a JSON object, in document order (JSONSerialization forgets the order).
func keysInOrder(_ document: String) -> [String] {
    // Top-level members are the lines indented by exactly two spaces.
    document.split(separator: "\n").compactMap { line in
        guard line.hasPrefix("  \""), !line.hasPrefix("   ") else { return nil }
        return String(line.dropFirst(3).prefix { $0 != "\"" })
    }
}

private let created = Date(timeIntervalSince1970: 1_764_424_891)  // 2025-11-29T14:01:31Z
private let item = ListedItem(
    account: "ACCESS_TOKEN_STORAGE", service: "com.pingidentity.keychainService",
    label: "ACCESS_TOKEN_STORAGE (com.pingidentity.keychainService)",
    path: "/org/freedesktop/secrets/collection/login/2", collectionPath: "/org/freedesktop/secrets/collection/login",
    created: created, modified: created.addingTimeInterval(60), size: 38, contentType: "text/plain",
    encryption: .no, keyID: nil, schema: "com.pingidentity.PingStorage")

/// A version-1 envelope's framing around `payload` (what `Envelope.header(of:)` checks; nothing
/// is authenticated here): magic, version, the key id's 16 bytes, a 12-byte nonce, payload, tag.
func fakeEnvelope(keyID: String = "00112233445566778899aabbccddeeff", version: UInt8 = 1,
                  payload: Data = Data("ciphertext".utf8)) -> Data {
    var bytes = Data([0x89, 0x50, 0x53, 0x45, version])
    var hex = Substring(keyID)
    while hex.count >= 2 {
        bytes.append(UInt8(hex.prefix(2), radix: 16)!)
        hex = hex.dropFirst(2)
    }
    return bytes + Data(repeating: 0x5A, count: 12) + payload + Data(repeating: 0x7A, count: 16)
}

/// A ContextualEncryptor that "seals" into ``fakeEnvelope(keyID:version:payload:)`` with the
/// plaintext and the context in clear, so a test can see what it was given.
struct ContextEchoEncryptor: ContextualEncryptor {
    var keyID = "0123456789abcdef0123456789abcdef"
    func encrypt(data: Data, context: EncryptionContext) async throws -> Data {
        fakeEnvelope(keyID: keyID, payload: data + Data("|\(context.service)|\(context.account)".utf8))
    }
    func decrypt(data: Data, context: EncryptionContext) async throws -> Data { data }
    func encrypt(data: Data) async throws -> Data { fakeEnvelope(keyID: keyID, payload: data + Data("|unbound".utf8)) }
    func decrypt(data: Data) async throws -> Data { data }
}

@Suite("Output: JSON field names and human text")
struct OutputTests {
    @Test func listJSONFieldNames() throws {
        let report = ListReport(collectionPath: item.collectionPath, service: nil, items: [item])
        let document = report.json.document
        #expect(keysInOrder(document) == ["collection", "service", "app", "backend", "items"])
        let json = try parseJSON(document)
        #expect(json["collection"] as? String == "/org/freedesktop/secrets/collection/login")
        #expect(json["service"] is NSNull, "null is written, not left out")
        let items = try #require(json["items"] as? [[String: Any]])
        #expect(Set(items[0].keys) == ["account", "service", "app", "label", "item", "collection", "created", "modified",
                                       "size", "contentType", "encrypted", "keyID", "schema", "accountAttribute",
                                       "writtenBy"])
        #expect(items[0]["accountAttribute"] as? String == "account")
        #expect(items[0]["account"] as? String == "ACCESS_TOKEN_STORAGE")
        #expect(items[0]["app"] is NSNull, "an item of no app: null")
        #expect(items[0]["item"] as? String == "/org/freedesktop/secrets/collection/login/2")
        #expect(items[0]["created"] as? String == "2025-11-29T14:01:31Z")
        #expect(items[0]["modified"] as? String == "2025-11-29T14:02:31Z")
        #expect(items[0]["size"] as? Int == 38)
        #expect(items[0]["encrypted"] as? String == "no")
        #expect(items[0]["keyID"] is NSNull, "null unless the item is an envelope")
        #expect(items[0]["schema"] as? String == "com.pingidentity.PingStorage")
        #expect(document.contains(#""encrypted": "no",\#n      "keyID": null,\#n      "schema""#), "documented order")
    }

    @Test func listShowsAnEncryptedItemWithItsKeyID() throws {
        var encrypted = item
        encrypted.encryption = .yes
        encrypted.keyID = "0123456789abcdef0123456789abcdef"
        let report = ListReport(collectionPath: item.collectionPath, service: nil, items: [encrypted])
        let items = try #require(try parseJSON(report.json.document)["items"] as? [[String: Any]])
        #expect(items[0]["encrypted"] as? String == "yes")
        #expect(items[0]["keyID"] as? String == "0123456789abcdef0123456789abcdef")
        #expect(report.human.contains("  encrypted:  yes (SecuredKeyEncryptor, key 0123456789abcdef0123456789abcdef)\n"))
        encrypted.keyID = nil
        #expect(encrypted.human.contains("  encrypted:  yes (SecuredKeyEncryptor envelope with an unreadable header)\n"))
    }

    @Test func listHumanOutputNeverHasASecretAndSaysWhoWroteIt() {
        var foreign = item
        foreign.account = "other"
        foreign.schema = nil
        foreign.encryption = .unknown
        let text = ListReport(collectionPath: item.collectionPath, service: nil, items: [item, foreign]).human
        #expect(text.hasPrefix("2 items of PingStorage (any service) or with service com.pingidentity.keychainService in /org/freedesktop/secrets/collection/login:\n\n"))
        #expect(text.contains("  size:       38 bytes (text/plain)\n"))
        #expect(text.contains("  encrypted:  no (JSON text)\n"))
        #expect(text.contains("  encrypted:  binary/unknown\n"))
        #expect(text.contains("  written by: PingStorage\n"))
        #expect(text.contains("  written by: another tool (xdg:schema not set)\n"))
        #expect(text.contains("  created:    2025-11-29T14:01:31Z\n"))
        #expect(text.contains("written by: PingStorage\n\nother\n"), "items are separated by a blank line")
        #expect(!text.hasSuffix("\n\n"))
        #expect(ListReport(collectionPath: "/c", service: "S", items: []).human == "No items with service S in /c.\n")
    }

    @Test func getJSONFieldNamesAndEncodings() throws {
        var report = GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
                               value: Data(#"{"token":"t"}"#.utf8), raw: false, encryption: .no, keyID: nil)
        var document = report.json.document
        #expect(keysInOrder(document) == ["account", "service", "app", "item", "collection", "contentType", "size",
                                          "encrypted", "keyID", "backend", "appReadsIt", "encoding", "value"])
        var json = try parseJSON(document)
        #expect((json["value"] as? [String: Any])?["token"] as? String == "t", "the JSON value itself")
        #expect(json["encoding"] as? String == "json")
        #expect(json["encrypted"] as? String == "no")
        #expect(json["keyID"] is NSNull)
        #expect(json["size"] as? Int == 13)

        report.value = Data([0, 1, 0xFF])
        report.raw = true
        report.contentType = "application/octet-stream"
        report.encryption = .unknown
        document = report.json.document
        json = try parseJSON(document)
        #expect(json["encoding"] as? String == "base64")
        #expect(json["value"] as? String == "AAH/")
        #expect(json["encrypted"] as? String == "unknown")
    }

    @Test func getOfADecryptedItemDescribesItAsStored() throws {
        // `value` is the decrypted JSON; `encrypted` and `keyID` say what the keyring holds.
        let report = GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c",
                               contentType: "application/octet-stream", value: Data(#""token""#.utf8), raw: false,
                               encryption: .yes, keyID: "0123456789abcdef0123456789abcdef")
        let json = try parseJSON(report.json.document)
        #expect(json["encrypted"] as? String == "yes")
        #expect(json["keyID"] as? String == "0123456789abcdef0123456789abcdef")
        #expect(json["value"] as? String == "token", "a String item's JSON is a JSON string")
        #expect(json["encoding"] as? String == "json")
        #expect(json["size"] as? Int == 7, "the size of the value printed")
        #expect(report.human == Data("\"token\"\n".utf8))
    }

    @Test func getHumanOutputIsTheValueAndRawIsExact() {
        let value = Data(#""token""#.utf8)
        var report = GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
                               value: value, raw: false, encryption: .no, keyID: nil)
        #expect(report.human == value + Data("\n".utf8))
        report.raw = true
        #expect(report.human == value, "--raw adds nothing")
    }

    @Test func getPrintsExactlyOneTrailingNewline() {
        // A value written by another tool may end with a newline already: no second one.
        var report = GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
                               value: Data("{\"a\": 1}\n".utf8), raw: false, encryption: .no, keyID: nil)
        #expect(report.human == Data("{\"a\": 1}\n".utf8))
        report.value = Data("\"x\"\n\n".utf8)
        #expect(report.human == report.value, "its own newlines are the value's: kept, none added")
        report.value = Data("\"x\"\r\n".utf8)
        #expect(report.human == report.value, "CRLF ends with a newline too")
        report.value = Data("\"x\" ".utf8)
        #expect(report.human == Data("\"x\" \n".utf8))
    }

    @Test func saveAndDeleteJSONFieldNames() throws {
        var save = SaveReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", size: 7,
                              encryption: .no, keyID: nil)
        #expect(keysInOrder(save.json.document) == ["account", "service", "app", "item", "collection", "size", "encrypted",
                                                    "keyID", "backend"])
        #expect(try parseJSON(save.json.document)["size"] as? Int == 7)
        #expect(try parseJSON(save.json.document)["encrypted"] as? String == "no")
        #expect(try parseJSON(save.json.document)["keyID"] is NSNull)
        #expect(save.human == "Saved 7 bytes for account 'A' (service S) in /c/1.\n")
        save.encryption = .yes
        save.keyID = "0123456789abcdef0123456789abcdef"
        #expect(try parseJSON(save.json.document)["encrypted"] as? String == "yes")
        #expect(try parseJSON(save.json.document)["keyID"] as? String == "0123456789abcdef0123456789abcdef")
        #expect(save.human == "Saved 7 bytes for account 'A' (service S) in /c/1, encrypted with SecuredKeyEncryptor "
                + "(key 0123456789abcdef0123456789abcdef).\n")

        let delete = DeleteReport(account: "A", service: "S", deleted: false)
        #expect(keysInOrder(delete.json.document) == ["account", "service", "app", "deleted", "backend"])
        #expect(try parseJSON(delete.json.document)["deleted"] as? Bool == false)
        #expect(delete.human.contains("nothing to delete"))
        #expect(DeleteReport(account: "A", service: "S", deleted: true).human.hasPrefix("Deleted"))
    }

    @Test func errorJSON() throws {
        let error = ToolError(kind: "locked", message: "the keyring is locked; unlock it.")
        let document = error.json.document
        let json = try parseJSON(document)
        let body = try #require(json["error"] as? [String: Any])
        #expect(Set(body.keys) == ["kind", "message", "detail", "exitCode"])
        #expect(body["kind"] as? String == "locked")
        #expect(body["message"] as? String == "the keyring is locked; unlock it.")
        #expect(body["exitCode"] as? Int == 3)
    }

    @Test func jsonStringsAreEscaped() throws {
        let nasty = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} unicode é 🔑 \u{2028}"
        let document = JSONValue.object([("s", .string(nasty)), ("n", .null), ("b", .bool(true)),
                                         ("a", .array([])), ("o", .object([]))]).document
        let json = try parseJSON(document)
        #expect(json["s"] as? String == nasty)
        #expect(json["n"] is NSNull)
        #expect(json["b"] as? Bool == true)
        #expect((json["a"] as? [Any])?.isEmpty == true)
        #expect(document.hasSuffix("}\n"), "one document, newline-terminated")
        #expect(JSONValue.quoted("\u{1f}") == #""\u001f""#)
    }

    @Test func encryptionClassification() {
        #expect(Encryption.classify(fakeEnvelope()) == .yes)
        #expect(Encryption.classify(fakeEnvelope(version: 2)) == .yes, "our magic: an envelope, even of a newer version")
        #expect(Encryption.classify(Data([0x89, 0x50, 0x53, 0x45])) == .yes, "the magic alone claims an envelope")
        #expect(Encryption.classify(Data([0x89, 0x50, 0x53])) == .unknown)
        #expect(Encryption.classify(Data(#"{"a":1}"#.utf8)) == .no)
        #expect(Encryption.classify(Data(#""a string item""#.utf8)) == .no)
        #expect(Encryption.classify(Data("42".utf8)) == .no)
        #expect(Encryption.classify(Data("plain text".utf8)) == .unknown)
        #expect(Encryption.classify(Data([0x7B, 0x7D, 0])) == .unknown, "NUL is never text")
        #expect(Encryption.classify(Data([0xFF, 0xFE, 0x01])) == .unknown)
        #expect(Encryption.classify(Data()) == .unknown)
        #expect(Encryption.classify(Data("1e400".utf8)) == .no, "JSON text, though no Double holds it")
        #expect(Encryption.classify(Data(#""a\u0000b""#.utf8)) == .no, "an escaped NUL is text")
        #expect(Encryption.classify(Data([0x22, 0x01, 0x22])) == .unknown, "a raw control character is not")
        #expect(Encryption.classify(Data("[1] [2]".utf8)) == .unknown, "one value only")
    }

    @Test func keyIDIsReadFromTheEnvelopeHeader() {
        #expect(Encryption.keyID(of: fakeEnvelope(keyID: "00112233445566778899aabbccddeeff"))
                == "00112233445566778899aabbccddeeff")
        #expect(Encryption.keyID(of: fakeEnvelope(keyID: "ffeeddccbbaa99887766554433221100", payload: Data()))
                == "ffeeddccbbaa99887766554433221100", "the shortest envelope: 49 bytes")
        #expect(Encryption.keyID(of: fakeEnvelope(version: 2)) == nil, "a version this build cannot read")
        #expect(Encryption.keyID(of: fakeEnvelope().prefix(48)) == nil, "truncated")
        #expect(Encryption.keyID(of: Data(#""text""#.utf8)) == nil)
        #expect(Encryption.no.humanText(keyID: nil) == "no (JSON text)")
        #expect(Encryption.unknown.humanText(keyID: nil) == "binary/unknown")
    }

    @Test func providerDescriptions() {
        let provider = ProviderInfo(name: "GNOME Keyring", executable: "/usr/bin/gnome-keyring-daemon", processID: 42,
                                    uniqueName: ":1.3", transport: "dh-ietf1024-sha256-aes128-cbc-pkcs7")
        #expect(provider.description == "GNOME Keyring (/usr/bin/gnome-keyring-daemon, pid 42, :1.3)")
        let hidden = ProviderInfo(name: "unknown", executable: nil, processID: nil, uniqueName: nil, transport: "plain")
        #expect(hidden.description == "unknown (executable not visible, pid unknown)")
    }

    @Test func stdinWhitespaceIsTrimmed() {
        #expect(KeyringCommands.trimmingWhitespace(Data(" \t{\"a\": 1}\r\n\n".utf8)) == Data("{\"a\": 1}".utf8))
        #expect(KeyringCommands.trimmingWhitespace(Data(" \n ".utf8)).isEmpty)
        #expect(KeyringCommands.trimmingWhitespace(Data("\"x\"".utf8)) == Data("\"x\"".utf8))
    }

    @Test func verbatimValueStoresTheGivenBytes() async throws {
        let value = VerbatimValue(bytes: Data("stdin".utf8))
        #expect(try await value.encrypt(data: Data("ignored".utf8)) == Data("stdin".utf8))
        let context = EncryptionContext(service: "S", account: "A")
        #expect(try await value.encrypt(data: Data("ignored".utf8), context: context) == Data("stdin".utf8))
        #expect(try await value.decrypt(data: Data("read".utf8)) == Data("read".utf8))
        #expect(value.sealedKeyID == nil)
    }

    @Test func verbatimValueEncryptsTheGivenBytesWithKeychainStoragesContext() async throws {
        let value = VerbatimValue(bytes: Data("stdin".utf8), encryptor: ContextEchoEncryptor())
        #expect(value.sealedKeyID == nil, "nothing sealed yet")
        // KeychainStorage passes the encoded placeholder and the item's service and account.
        let sealed = try await value.encrypt(data: Data("\"\"".utf8),
                                             context: EncryptionContext(service: "S", account: "A"))
        #expect(sealed.dropFirst(33).dropLast(16) == Data("stdin|S|A".utf8),
                "the stdin bytes, not the placeholder, sealed with the context given")
        #expect(value.sealedKeyID == "0123456789abcdef0123456789abcdef", "the key id, for the report")
        let unbound = try await value.encrypt(data: Data("ignored".utf8))
        #expect(unbound.dropFirst(33).dropLast(16) == Data("stdin|unbound".utf8))
        #expect(try await value.decrypt(data: sealed, context: EncryptionContext(service: "S", account: "A")) == sealed,
                "decrypt is never used by save and changes nothing")
    }
}
