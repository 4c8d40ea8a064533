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
        #expect(set.hasPrefix("unknown command 'set'; ping-keyring stores a value read from stdin with 'save': "
                                  + "echo VALUE | ping-keyring save --text --service org.example.App --account alice"))
        #expect(!set.contains("did you mean 'get'"), "set is one letter from get, but means save")
        let store = try #require(usageMessage(["store", "--label=x", "service", "S", "account", "A"]))
        #expect(store.contains("echo VALUE | ping-keyring save --text --service S --account A"), "secret-tool's pairs")
        #expect(usageMessage(["clear", "service", "S", "username", "U"])?
            .contains("'delete' (never another app's): ping-keyring delete --service S --account U") == true)
        #expect(usageMessage(["del", "S", "A"])?.contains("ping-keyring delete --service S --account A") == true)
        #expect(usageMessage(["store"])?.contains("save --text --service SERVICE --account ACCOUNT") == true)
        #expect(usageMessage(["set", "my service", "it's"])?.contains("--service 'my service' --account 'it'\\''s'") == true,
                "quoted for a shell")
    }

    @Test func positionalServiceAndAccountGetTheFlags() {
        #expect(usageMessage(["get", "org.example.App", "alice"]) == "'get' takes the service and account as options, "
            + "not as words: ping-keyring get --service org.example.App --account alice (see 'ping-keyring get --help')")
        #expect(usageMessage(["delete", "S", "A"])?.contains("ping-keyring delete --service S --account A") == true)
        #expect(usageMessage(["save", "S", "A"])?.contains("echo VALUE | ping-keyring save --text --service S --account A")
                    == true)
        #expect(usageMessage(["get", "--acount", "A"])?.hasPrefix("unknown option '--acount' for 'get'") == true,
                "a word after an unknown option is its value, not a positional account")
    }

    @Test func lookupIsACommandNow() throws {
        #expect(try ArgumentParser.parse(["lookup", "service", "S", "username", "U"])
                    == .run(.lookup(attributes: ["service": "S", "username": "U"]), GlobalOptions()))
        #expect(usageMessage(["lookup", "service"])?.contains("attribute 'service' has no value") == true)
        #expect(usageMessage(["search", "a", "1", "a", "2"])?.contains("attribute 'a' is given more than once") == true)
    }
}
