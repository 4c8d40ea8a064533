import Foundation
import Testing
@testable import PingKeyringCore

private func parsed(_ text: String) -> JSONValue? { JSONValue(parsing: Data(text.utf8)) }

private func report(_ value: String, raw: Bool = false) -> GetReport {
    GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
              value: Data(value.utf8), raw: raw, encryption: .no, keyID: nil)
}

@Suite("get --json embeds a stored JSON value as JSON")
struct JSONEmbeddingTests {
    @Test func anObjectIsEmbeddedNotQuoted() throws {
        let document = report(#"{"accessToken":"t","expiresIn":3600,"scopes":["a","b"],"refresh":null}"#).json.document
        let json = try parseJSON(document)
        #expect(json["encoding"] as? String == "json")
        let value = try #require(json["value"] as? [String: Any], "an object, not a string: \(document)")
        #expect(value["accessToken"] as? String == "t")
        #expect(value["expiresIn"] as? Int == 3600)
        #expect(value["scopes"] as? [String] == ["a", "b"])
        #expect(value["refresh"] is NSNull)
        #expect(document.contains("""
              "value": {
                "accessToken": "t",
                "expiresIn": 3600,
                "scopes": [
                  "a",
                  "b"
                ],
                "refresh": null
              }
            }
            """), "pretty-printed in place, members in stored order")
    }

    @Test func fragmentsAreEmbeddedToo() throws {
        // A String item is stored as "…" with the quotes: its value is that string.
        var json = try parseJSON(report(#""token""#).json.document)
        #expect(json["value"] as? String == "token")
        #expect(json["encoding"] as? String == "json")
        json = try parseJSON(report("42").json.document)
        #expect(json["value"] as? Int == 42)
        json = try parseJSON(report(" true\n").json.document)
        #expect(json["value"] as? Bool == true)
    }

    @Test func whatIsNotJSONSaysSo() throws {
        // Only with --raw: text that is not JSON, and bytes that are not text (an envelope).
        var json = try parseJSON(report("written by a script", raw: true).json.document)
        #expect(json["encoding"] as? String == "utf8")
        #expect(json["value"] as? String == "written by a script")
        var binary = report("", raw: true)
        binary.value = Data([0x89, 0x50, 0x53, 0x45, 0x01, 0xFF])
        json = try parseJSON(binary.json.document)
        #expect(json["encoding"] as? String == "base64")
        #expect(json["value"] as? String == "iVBTRQH/")
        binary.value = Data(#"{"a":"\#u{0}"}"#.utf8)
        #expect(try parseJSON(binary.json.document)["encoding"] as? String == "base64", "NUL is never text")
    }

    @Test func numbersAndStringsKeepTheirMeaning() throws {
        let text = #"[0, -1.5e-3, 12345678901234567890, 1E+2, "é \"q\" \\ \/ \b\f\n\r\t \u00e9 \ud83d\udd11", {}, []]"#
        let document = try #require(parsed(text)).document
        #expect(document.contains("\n  12345678901234567890,\n"), "numbers as written, not rounded")
        #expect(document.contains("\n  -1.5e-3,\n"))
        let ours = try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [Any]
        let theirs = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any]
        #expect((ours?[4] as? String) == (theirs?[4] as? String), "escapes decode to the same string")
        #expect(ours?[4] as? String == "é \"q\" \\ / \u{8}\u{c}\n\r\t é 🔑")
    }

    @Test func membersKeepTheirOrder() throws {
        let document = try #require(parsed(#"{"z":1,"a":2,"m":{"y":3,"b":4}}"#)).document
        #expect(keysInOrder(document) == ["z", "a", "m"])
    }

    @Test func invalidTextIsRefused() {
        for text in ["", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "NaN", "tru", "nul",
                     "\"unterminated", "\"tab\tinside\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
                     "\"\\ud800\\u0041\"", "{a:1}", "{'a':1}", "[1] [2]", "1 2", "// c\n1", "[1]x"] {
            #expect(parsed(text) == nil, "\(text)")
        }
        #expect(JSONValue(parsing: [0x22, 0xFF, 0x22]) == nil, "invalid UTF-8 in a string")
        #expect(parsed(String(repeating: "[", count: 600) + String(repeating: "]", count: 600)) == nil, "too deep")
        #expect(parsed(String(repeating: "[", count: 500) + String(repeating: "]", count: 500)) != nil)
    }
}
