import Foundation
import Testing

/// The harness reads other clients' view of the keyring from `secret-tool search --all`; a
/// secret printed raw must not hide the items after it.
@Suite("The harness's reading of secret-tool search")
struct SecretToolOutput {
    /// secret-tool's output for two items whose secrets end in "\r" (as a bound key's random bytes
    /// may, one time in 256): each "secret = …\r" line is followed by "\n".
    @Test func aSecretEndingInCarriageReturnHidesNoItem() {
        let output = Data("[/1]\nlabel = one\nsecret = abc\r\ncreated = 2026-12-03 00:56:43\nmodified = 2026-12-03 00:56:43\n".utf8)
            + Data("attribute.n = 1\r\nattribute.t = crlf\n".utf8)
            + Data("[/2]\nlabel = two\nsecret = \u{1}\n[\r\ncreated = 2026-12-03 00:56:43\nmodified = 2026-12-03 00:56:43\n".utf8)
            + Data("attribute.n = 2\nattribute.t = crlf\n".utf8)
        let items = SecretTool.items(searchOutput: output)
        #expect(items.map(\.path) == ["/1", "/2"])
        #expect(items.map(\.label) == ["one", "two"])
        #expect(items.map { $0.attributes["n"] } == ["1\r", "2"])
    }

    /// Items with different attributes: each item's attributes are its own, whatever names the
    /// item before it had (read apart from the items, they were assigned by guessing, and the first
    /// item got the second's first attributes when their names differed).
    @Test func eachItemHasItsOwnAttributes() {
        let output = Data("""
            [/2]
            label = stray
            secret = "stray"
            created = 2026-12-04 20:42:56
            modified = 2026-12-04 20:42:56
            attribute.application = Python keyring library
            attribute.service = s
            attribute.username = a
            [/1]
            label = a (s)
            secret = "ours"
            created = 2026-12-04 20:42:56
            modified = 2026-12-04 20:42:56
            schema = com.pingidentity.PingStorage
            attribute.pingstorage-app = com.example.A
            attribute.account = a
            attribute.service = s
            attribute.username = a

            """.utf8)
        let items = SecretTool.items(searchOutput: output)
        #expect(items.map(\.attributes) == [
            ["application": "Python keyring library", "service": "s", "username": "a"],
            ["xdg:schema": "com.pingidentity.PingStorage", "pingstorage-app": "com.example.A", "account": "a", "service": "s", "username": "a"],
        ])
    }
}

extension Integration {
    @Suite("secret-tool search as the harness reads it")
    struct SecretToolSearch {
        @Test func everyItemIsFoundWhateverItsSecretEndsWith() throws {
            let tag = uniqueAccount()
            defer { try? SecretTool.clear(["crlf-test": tag]) }
            for (number, secret) in ["abc\r", "def\r", "ghi"].enumerated() {
                try SecretTool.store(label: "item \(number)", attributes: ["crlf-test": tag, "n": "\(number)"], secret: Data(secret.utf8))
            }
            let items = try SecretTool.search(["crlf-test": tag])
            #expect(items.count == 3, "\(items.map(\.label))")
            #expect(Set(items.compactMap { $0.attributes["n"] }) == ["0", "1", "2"])
        }
    }
}
