import Foundation
import Testing

/// The harness reads other clients' view of the keyring from `secret-tool search --all`; a
/// secret printed raw must not hide the items after it.
@Suite("The harness's reading of secret-tool search")
struct SecretToolOutput {
    /// secret-tool's output for two items whose secrets end in "\r" (as a bound key's random bytes
    /// may, one time in 256): each "secret = …\r" line is followed by "\n".
    @Test func aSecretEndingInCarriageReturnHidesNoItem() {
        let stdout = Data("[/1]\nlabel = one\nsecret = abc\r\ncreated = 2026-12-03 00:56:43\nmodified = 2026-12-03 00:56:43\n".utf8)
            + Data("[/2]\nlabel = two\nsecret = \u{1}\n[\r\ncreated = 2026-12-03 00:56:43\nmodified = 2026-12-03 00:56:43\n".utf8)
        let stderr = "attribute.n = 1\r\nattribute.t = crlf\nattribute.n = 2\nattribute.t = crlf\n"
        let items = SecretTool.items(searchOutput: stdout, stderr: stderr)
        #expect(items.map(\.path) == ["/1", "/2"])
        #expect(items.map(\.label) == ["one", "two"])
        #expect(items.map { $0.attributes["n"] } == ["1\r", "2"])
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
