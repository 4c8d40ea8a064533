import Foundation
import Testing
@testable import PingKeyringCore

private func usageMessage(_ arguments: [String]) -> String? {
    do {
        _ = try ArgumentParser.parse(arguments)
        return nil
    } catch {
        return error.status == .usage ? error.message : nil
    }
}

/// secret-tool's and Python keyring's habits: their verbs and positional SERVICE ACCOUNT get
/// ping-keyring's command line back, never a guess by spelling.
@Suite("Habits of secret-tool and Python keyring")
struct HabitTests {
    @Test func theirVerbsGetTheCommandToType() throws {
        let set = try #require(usageMessage(["set", "org.example.App", "alice"]))
        #expect(set.hasPrefix("unknown command 'set'; ping-keyring stores a value with 'save': "
                                  + "ping-keyring save --text --app APP --service org.example.App --account alice (it asks for "
                                  + "the value without showing it, or reads it from stdin;"), "\(set)")
        #expect(!set.contains("did you mean 'get'"), "set is one letter from get, but means save")
        let store = try #require(usageMessage(["store", "--label=x", "service", "S", "account", "A"]))
        #expect(store.contains("ping-keyring save --text --app APP --service S --account A"), "secret-tool's pairs")
        #expect(usageMessage(["clear", "service", "S", "username", "U"])?
            .contains("'delete' (never another app's): ping-keyring delete --service S --account U") == true)
        #expect(usageMessage(["del", "S", "A"])?.contains("ping-keyring delete --service S --account A") == true)
        #expect(usageMessage(["store"])?.contains("save --text --app APP --service SERVICE --account ACCOUNT") == true)
        #expect(usageMessage(["set", "my service", "it's"])?.contains("--service 'my service' --account 'it'\\''s'") == true,
                "quoted for a shell")
    }

    /// secret-tool's `store --label X service S account A` (its label's value apart, issue 38):
    /// the label is no service, and the pairs are read as pairs.
    @Test func secretToolsLabelIsNotTheService() throws {
        for label in [["--label", "My token"], ["-l", "My token"], ["--label=My token"]] {
            let store = try #require(usageMessage(["store"] + label + ["service", "S", "account", "A"]))
            #expect(store.contains("ping-keyring save --text --app APP --service S --account A"), "\(label): \(store)")
            #expect(!store.contains("My token"))
        }
        let python = try #require(usageMessage(["-b", "keyring.backends.SecretService.Keyring", "set", "S", "A"]))
        #expect(python.contains("--service S --account A"), "Python keyring's -b BACKEND: \(python)")
    }

    /// A value typed on the command line by mistake is never echoed, and no suggestion puts a value
    /// on a command line (`echo VALUE |` would leave it in the shell's history): save asks for it.
    @Test func suggestionsNeverEchoAValue() throws {
        let lines: [[String]] = [
            ["set", "S", "A", "hunter2"], ["store", "service", "S", "account", "A", "hunter2"],
            ["set", "-s", "S", "-a", "A", "hunter2"], ["save", "-s", "S", "-a", "A", "hunter2"], ["save", "-a", "A", "hunter2"],
            ["save", "hunter2"], ["set", "hunter2"], ["store", "--label", "L", "service", "S", "account", "A", "hunter2"],
        ]
        for line in lines {
            let message = try #require(usageMessage(line), "\(line)")
            #expect(!message.contains("hunter2"), "\(line): \(message)")
            #expect(!message.contains("echo") && !message.contains("|"), "\(line): \(message)")
            #expect(message.contains("ping-keyring save --text --app APP --service "), "\(line): \(message)")
        }
        #expect(usageMessage(["set", "-s", "S", "-a", "A", "hunter2"])?.contains("--service S --account A") == true)
        #expect(usageMessage(["save", "-s", "S", "-a", "A", "hunter2"])?
            .hasPrefix("'save' takes no value on its command line, where the shell's history would keep it: ") == true)
        #expect(usageMessage(["save", "-a", "A", "hunter2"])?.contains("--service com.pingidentity.keychainService --account A")
                    == true, "the default service")
    }

    @Test func positionalServiceAndAccountGetTheFlags() {
        #expect(usageMessage(["get", "org.example.App", "alice"]) == "'get' takes the service and account as options, "
            + "not as words: ping-keyring get --service org.example.App --account alice (see 'ping-keyring get --help')")
        #expect(usageMessage(["delete", "S", "A"])?.contains("ping-keyring delete --service S --account A") == true)
        #expect(usageMessage(["save", "S", "A"])?.contains("ping-keyring save --text --app APP --service S --account A")
                    == true)
        #expect(usageMessage(["get", "--acount", "A"])?.hasPrefix("unknown option '--acount' for 'get'") == true,
                "a word after an unknown option is its value, not a positional account")
    }

    /// secret-tool's `search --all` (it lists only the first item without it): accepted, and
    /// every match is listed anyway.
    @Test func searchTakesSecretToolsAll() throws {
        #expect(try ArgumentParser.parse(["search", "--all", "service", "S"])
                    == .run(.search(attributes: ["service": "S"]), GlobalOptions()))
        #expect(try ArgumentParser.parse(["search", "service", "S", "--all"])
                    == .run(.search(attributes: ["service": "S"]), GlobalOptions()))
        #expect(usageMessage(["lookup", "--all", "service", "S"])?.contains("unknown option '--all' for 'lookup'") == true)
    }

    /// `get` of plain text (secret-tool's, Python keyring's, `save --text`'s) prints its text
    /// without --text, and warns on stderr that an app's KeychainStorage fails on it; JSON stays
    /// JSON, without a warning.
    @Test func getPrintsPlainTextAndWarnsThatAnAppCannotReadIt() {
        var plain = GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
                              value: Data("hunter2".utf8), raw: false, encryption: .unknown, keyID: nil, appReadsIt: false)
        #expect(plain.human == Data("hunter2\n".utf8))
        #expect(plain.humanNotes == GetReport.plainTextWarning)
        #expect(GetReport.plainTextWarning.contains("KeychainStorage.get() fails on it with corruptItem"))
        plain.value = Data("two lines\n".utf8)
        #expect(plain.human == Data("two lines\n\n".utf8), "as --text prints it: one newline added")
        let json = GetReport(account: "A", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
                             value: Data(#""hunter2""#.utf8), raw: false, encryption: .no, keyID: nil, appReadsIt: true)
        #expect(json.human == Data("\"hunter2\"\n".utf8))
        #expect(json.humanNotes.isEmpty)
    }

    @Test func lookupIsACommandNow() throws {
        #expect(try ArgumentParser.parse(["lookup", "service", "S", "username", "U"])
                    == .run(.lookup(attributes: ["service": "S", "username": "U"]), GlobalOptions()))
        #expect(usageMessage(["lookup", "service"])?.contains("attribute 'service' has no value") == true)
        #expect(usageMessage(["search", "a", "1", "a", "2"])?.contains("attribute 'a' is given more than once") == true)
    }
}

/// Dates an app stores with JSONEncoder's default strategy are seconds since 2001: the reference's
/// note and `get --help` say so, with an example that is right.
@Suite("Dates in values")
struct DatesInValuesTests {
    @Test func theNoteAndItsExampleAreRight() throws {
        let reference = try String(contentsOf: packageRoot.appendingPathComponent("docs/ping-keyring.md"), encoding: .utf8)
        let section = try #require(reference.components(separatedBy: "## Dates in values\n").dropFirst().first?
            .components(separatedBy: "\n## ").first)
        // The example: 786240000 seconds after the reference date is 2025-12-01, and the offset to
        // 1970 it gives is Foundation's.
        #expect(section.contains("`{\"expiresAt\": 786240000}` is 2025-12-01, not a\ndate in 1994"))
        #expect(Timestamp.iso8601(Date(timeIntervalSinceReferenceDate: 786_240_000)) == "2025-12-01T00:00:00Z")
        #expect(Timestamp.iso8601(Date(timeIntervalSince1970: 786_240_000)).hasPrefix("1994-12-01"))
        #expect(section.contains("add 978307200"))
        #expect(Date.timeIntervalBetween1970AndReferenceDate == 978_307_200)
        let help = try #require(CommandTable.command(named: "get")).description
        #expect(help.contains("seconds since"), "get --help says it too")
        #expect(Timestamp.iso8601(Date(timeIntervalSinceReferenceDate: 700_000_000)).hasPrefix("2023-03-08"),
                "get --help's example")
        #expect(help.contains("700000000 is 2023-03-08"))
    }
}
