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
    encryption: .no, schema: "com.pingidentity.PingStorage")

@Suite("Output: JSON field names and human text")
struct OutputTests {
    @Test func listJSONFieldNames() throws {
        let report = ListReport(collectionPath: item.collectionPath, service: nil, items: [item])
        let document = report.json.document
        #expect(keysInOrder(document) == ["collection", "service", "items"])
        let json = try parseJSON(document)
        #expect(json["collection"] as? String == "/org/freedesktop/secrets/collection/login")
        #expect(json["service"] is NSNull, "null is written, not left out")
        let items = try #require(json["items"] as? [[String: Any]])
        #expect(Set(items[0].keys) == ["account", "service", "label", "item", "collection", "created", "modified",
                                       "size", "contentType", "encrypted", "schema"])
        #expect(items[0]["account"] as? String == "ACCESS_TOKEN_STORAGE")
        #expect(items[0]["item"] as? String == "/org/freedesktop/secrets/collection/login/2")
        #expect(items[0]["created"] as? String == "2025-11-29T14:01:31Z")
        #expect(items[0]["modified"] as? String == "2025-11-29T14:02:31Z")
        #expect(items[0]["size"] as? Int == 38)
        #expect(items[0]["encrypted"] as? String == "no")
        #expect(items[0]["schema"] as? String == "com.pingidentity.PingStorage")
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
                               value: Data(#"{"token":"t"}"#.utf8), raw: false)
        var document = report.json.document
        #expect(keysInOrder(document) == ["account", "service", "item", "collection", "contentType", "size",
                                          "encrypted", "encoding", "value"])
        var json = try parseJSON(document)
        #expect(json["value"] as? String == #"{"token":"t"}"#, "the JSON text as a string, unchanged")
        #expect(json["encoding"] as? String == "utf8")
        #expect(json["encrypted"] as? String == "no")
        #expect(json["size"] as? Int == 13)

        report.value = Data([0, 1, 0xFF])
        report.raw = true
        report.contentType = "application/octet-stream"
        document = report.json.document
        json = try parseJSON(document)
        #expect(json["encoding"] as? String == "base64")
        #expect(json["value"] as? String == "AAH/")
        #expect(json["encrypted"] as? String == "unknown")
    }

    @Test func getHumanOutputIsTheValueAndRawIsExact() {
        let value = Data(#""token""#.utf8)
        var report = GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
                               value: value, raw: false)
        #expect(report.human == value + Data("\n".utf8))
        report.raw = true
        #expect(report.human == value, "--raw adds nothing")
    }

    @Test func saveAndDeleteJSONFieldNames() throws {
        let save = SaveReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", size: 7)
        #expect(keysInOrder(save.json.document) == ["account", "service", "item", "collection", "size"])
        #expect(try parseJSON(save.json.document)["size"] as? Int == 7)
        #expect(save.human == "Saved 7 bytes for account 'A' (service S) in /c/1.\n")

        let delete = DeleteReport(account: "A", service: "S", deleted: false)
        #expect(keysInOrder(delete.json.document) == ["account", "service", "deleted"])
        #expect(try parseJSON(delete.json.document)["deleted"] as? Bool == false)
        #expect(delete.human.contains("nothing to delete"))
        #expect(DeleteReport(account: "A", service: "S", deleted: true).human.hasPrefix("Deleted"))
    }

    @Test func errorJSON() throws {
        let error = ToolError(kind: "locked", message: "the keyring is locked; unlock it.")
        let document = error.json.document
        let json = try parseJSON(document)
        let body = try #require(json["error"] as? [String: Any])
        #expect(Set(body.keys) == ["kind", "message", "exitCode"])
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

    @Test func encryptionHeuristic() {
        #expect(Encryption.classify(Data(#"{"a":1}"#.utf8)) == .no)
        #expect(Encryption.classify(Data(#""a string item""#.utf8)) == .no)
        #expect(Encryption.classify(Data("42".utf8)) == .no)
        #expect(Encryption.classify(Data("plain text".utf8)) == .unknown)
        #expect(Encryption.classify(Data([0x7B, 0x7D, 0])) == .unknown, "NUL is never text")
        #expect(Encryption.classify(Data([0xFF, 0xFE, 0x01])) == .unknown)
        #expect(Encryption.classify(Data()) == .unknown)
    }

    @Test func providerNames() {
        #expect(ProviderInfo.productName(executable: "gnome-keyring-d") == "GNOME Keyring")
        #expect(ProviderInfo.productName(executable: "keepassxc") == "KeePassXC")
        #expect(ProviderInfo.productName(executable: "kwalletd5") == "KWallet")
        #expect(ProviderInfo.productName(executable: "kwalletd6") == "KWallet")
        #expect(ProviderInfo.productName(executable: "something-else") == "something-else")
        #expect(ProviderInfo.productName(executable: nil).hasPrefix("unknown"))
        let provider = ProviderInfo(executable: "gnome-keyring-d", processID: 42, uniqueName: ":1.3",
                                    transport: "dh-ietf1024-sha256-aes128-cbc-pkcs7")
        #expect(provider.description == "GNOME Keyring (gnome-keyring-d, pid 42, :1.3)")
    }

    @Test func stdinWhitespaceIsTrimmed() {
        #expect(KeyringCommands.trimmingWhitespace(Data(" \t{\"a\": 1}\r\n\n".utf8)) == Data("{\"a\": 1}".utf8))
        #expect(KeyringCommands.trimmingWhitespace(Data(" \n ".utf8)).isEmpty)
        #expect(KeyringCommands.trimmingWhitespace(Data("\"x\"".utf8)) == Data("\"x\"".utf8))
    }

    @Test func verbatimValueStoresTheGivenBytes() async throws {
        let value = VerbatimValue(bytes: Data("stdin".utf8))
        #expect(try await value.encrypt(data: Data("ignored".utf8)) == Data("stdin".utf8))
        #expect(try await value.decrypt(data: Data("read".utf8)) == Data("read".utf8))
    }
}
