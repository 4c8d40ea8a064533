import PingStorage
import Testing
@testable import PingKeyringCore

private func parse(_ arguments: String) throws(ToolError) -> Invocation {
    try ArgumentParser.parse(arguments.split(separator: " ").map(String.init))
}

/// The message of the usage error `arguments` produce; nil (and a recorded issue) when they parse.
private func usageMessage(_ arguments: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    do {
        let invocation = try parse(arguments)
        Issue.record("expected a usage error, got \(invocation)", sourceLocation: sourceLocation)
        return nil
    } catch {
        #expect(error.status == .usage, sourceLocation: sourceLocation)
        return error.message
    }
}

private let defaultService = KeychainConfiguration.defaultService

@Suite("Short options: -a VALUE, -j, …")
struct ShortOptionTests {
    @Test func everyCommonOptionHasItsLetter() {
        let letters = Dictionary(CommandTable.allOptions.compactMap { option in option.short.map { (option.name, $0) } },
                                 uniquingKeysWith: { first, _ in first })
        #expect(letters == ["account": "a", "service": "s", "raw": "r", "encrypt": "e", "collection": "c",
                            "timeout": "t", "json": "j", "verbose": "v", "help": "h", "version": "V"])
    }

    @Test func aLetterMeansOneOptionEverywhere() {
        // Before the command name, a letter is looked up in every command: it must not clash.
        var byLetter: [Character: Set<String>] = [:]
        var byName: [String: Set<Character?>] = [:]
        for option in CommandTable.allOptions {
            if let short = option.short { byLetter[short, default: []].insert(option.name) }
            byName[option.name, default: []].insert(option.short)
        }
        for (letter, names) in byLetter { #expect(names.count == 1, "-\(letter) is \(names.sorted())") }
        for (name, letters) in byName { #expect(letters.count == 1, "--\(name) has letters \(letters)") }
    }

    @Test func shortFormsParseLikeLongOnes() throws {
        var options = GlobalOptions()
        options.json = true
        options.collection = .session
        options.timeout = .seconds(3)
        #expect(try parse("get -a A -s S -r -j -c session -t 3")
                == .run(.get(account: "A", service: "S", raw: true), options))
        #expect(try parse("-j -c session -t 3 get -r -s S -a A")
                == .run(.get(account: "A", service: "S", raw: true), options), "before the command too")
        #expect(try parse("save -a A -e") == .run(.save(account: "A", service: defaultService, encrypt: true), GlobalOptions()))
        #expect(try parse("list -s S") == .run(.list(service: "S"), GlobalOptions()))
        #expect(try parse("delete -a A") == .run(.delete(account: "A", service: defaultService), GlobalOptions()))
        #expect(try ArgumentParser.parse(["get", "-a", "--service"])
                == .run(.get(account: "--service", service: defaultService, raw: false), GlobalOptions()),
                "the next word is the value, whatever it looks like")
    }

    /// Flags written together, as secret-tool, Python keyring and getopt take them (issue 38):
    /// every letter a flag, the last one may take the next word as its value.
    @Test func flagsTogetherParseLikeFlagsApart() throws {
        var json = GlobalOptions()
        json.json = true
        #expect(try parse("get -a A -jr") == .run(.get(account: "A", service: defaultService, raw: true), json))
        #expect(try parse("-rj get -a A") == .run(.get(account: "A", service: defaultService, raw: true), json), "before the command too")
        #expect(try parse("get -ja A") == .run(.get(account: "A", service: defaultService, raw: false), json), "the last letter's value")
        var verbose = GlobalOptions()
        verbose.verbose = true
        #expect(try parse("save -ve -a A") == .run(.save(account: "A", service: defaultService, encrypt: true), verbose))
    }

    @Test func shortFormErrors() {
        #expect(usageMessage("get -a")?.hasPrefix("-a needs a value (-a ACCOUNT)") == true)
        #expect(usageMessage("get -a A --account B")?.hasPrefix("--account is given more than once") == true)
        #expect(usageMessage("list -x")?.hasPrefix("unknown option '-x'") == true)
        #expect(usageMessage("get -a A -jx")?.hasPrefix("unknown option '-jx': '-x' is no option of 'get'") == true)
        #expect(usageMessage("get -aALICE")?.hasPrefix(
            "unknown option '-aALICE'; write the value apart: '-a ALICE' or '--account=ALICE'") == true)
        #expect(usageMessage("get -jaALICE")?.hasPrefix(
            "unknown option '-jaALICE'; write the value apart: '-j -a ALICE' or '--account=ALICE'") == true)
        #expect(usageMessage("get -ja")?.hasPrefix("-a needs a value (-a ACCOUNT)") == true)
        #expect(usageMessage("get -a A -jj")?.hasPrefix("--json is given more than once") == true)
        #expect(usageMessage("list -r")?.hasPrefix("unknown option '-r' for 'list'") == true,
                "an option of another command, by letter")
    }

    @Test func helpShowsTheLetters() {
        let get = CommandTable.help(for: CommandTable.command(named: "get")!)
        #expect(get.contains("  -a, --account ACCOUNT  "))
        #expect(get.contains("  -r, --raw  ") || get.contains("  -r, --raw      "))
        #expect(get.contains("      --no-prompt  "), "an option without a letter lines up")
        #expect(CommandTable.overview.contains("  -V, --version  "))
    }
}
