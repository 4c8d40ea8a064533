import DBusTransport
import Foundation
import PingStorage
import Testing
@testable import PingKeyringCore

private func parse(_ arguments: String) throws(ToolError) -> Invocation {
    try ArgumentParser.parse(arguments.split(separator: " ").map(String.init))
}

/// The usage error `arguments` produce (failing the test when they parse).
private func usageError(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) -> ToolError? {
    do {
        let invocation = try ArgumentParser.parse(arguments)
        Issue.record("expected a usage error, got \(invocation)", sourceLocation: sourceLocation)
        return nil
    } catch {
        #expect(error.kind == "usage", sourceLocation: sourceLocation)
        #expect(error.status == .usage, "usage errors exit 2", sourceLocation: sourceLocation)
        return error
    }
}

private func usageError(_ arguments: String, sourceLocation: SourceLocation = #_sourceLocation) -> ToolError? {
    usageError(arguments.split(separator: " ").map(String.init), sourceLocation: sourceLocation)
}

private let defaultService = KeychainConfiguration.defaultService

@Suite("Argument parser: every command and option")
struct ArgumentParserTests {
    // MARK: Commands

    @Test func list() throws {
        #expect(try parse("list") == .run(.list(service: nil), GlobalOptions()))
        #expect(try parse("list --service S") == .run(.list(service: "S"), GlobalOptions()))
    }

    @Test func get() throws {
        #expect(try parse("get --account A") == .run(.get(account: "A", service: defaultService, raw: false), GlobalOptions()))
        #expect(try parse("get --account A --service S --raw")
                == .run(.get(account: "A", service: "S", raw: true), GlobalOptions()))
    }

    @Test func save() throws {
        #expect(try parse("save --account A") == .run(.save(account: "A", service: defaultService, encrypt: false), GlobalOptions()))
        #expect(try parse("save --service S --encrypt --account A")
                == .run(.save(account: "A", service: "S", encrypt: true), GlobalOptions()))
    }

    @Test func delete() throws {
        #expect(try parse("delete --account A") == .run(.delete(account: "A", service: defaultService), GlobalOptions()))
        #expect(try parse("delete --account A --service S") == .run(.delete(account: "A", service: "S"), GlobalOptions()))
    }

    @Test func doctor() throws {
        #expect(try parse("doctor") == .run(.doctor, GlobalOptions()))
    }

    @Test func hiddenCommands() throws {
        #expect(try parse("completion bash") == .run(.completion(shell: "bash"), GlobalOptions()))
        #expect(try parse("completion zsh") == .run(.completion(shell: "zsh"), GlobalOptions()))
        #expect(try parse("man") == .run(.manual, GlobalOptions()))
        #expect(try parse("completion --help") == .help(command: "completion"))
        #expect(usageError("completion")?.message.hasPrefix("'completion' needs SHELL (bash or zsh)") == true)
        #expect(usageError("completion fish")?.message.hasPrefix(
            "unknown shell 'fish' for 'completion'; it is one of bash, zsh") == true)
        #expect(usageError("completion bsh")?.message.hasPrefix(
            "unknown shell 'bsh' for 'completion'; did you mean 'bash'?") == true)
        #expect(usageError("completion bash zsh")?.message.hasPrefix("unexpected argument 'zsh'") == true)
        #expect(usageError("man page")?.message.hasPrefix("unexpected argument 'page'") == true)
        #expect(CommandTable.usageLine(for: CommandTable.command(named: "completion")!)
                == "ping-keyring completion SHELL [GLOBAL OPTIONS]")
    }

    @Test func everyCommandInTheTableParses() throws {
        for spec in CommandTable.commands {
            let required = spec.options.filter(\.isRequired).flatMap { ["--\($0.name)", "x"] }
            let argument = spec.argument.map { $0.isPairs ? ["service", "x"] : [$0.choices[0]] } ?? []
            guard case .run = try ArgumentParser.parse([spec.name] + argument + required) else {
                Issue.record("\(spec.name) did not parse to a command")
                continue
            }
        }
    }

    // MARK: Global options

    @Test func globalOptionsBeforeAndAfterTheCommand() throws {
        var expected = GlobalOptions()
        expected.json = true
        expected.noPrompt = true
        expected.collection = .session
        expected.timeout = .milliseconds(2500)
        #expect(try parse("--json --no-prompt --collection session --timeout 2.5 doctor") == .run(.doctor, expected))
        #expect(try parse("doctor --json --no-prompt --collection session --timeout 2.5") == .run(.doctor, expected))
        #expect(try parse("--json get --account A --timeout 2.5 --no-prompt --collection session")
                == .run(.get(account: "A", service: defaultService, raw: false), expected))
    }

    @Test func collectionValues() throws {
        func collection(_ value: String) throws -> KeychainConfiguration.Collection? {
            guard case .run(_, let options) = try ArgumentParser.parse(["list", "--collection", value]) else { return nil }
            return options.collection
        }
        #expect(try collection("default") == .default)
        #expect(try collection("session") == .session)
        #expect(try collection("work") == .alias("work"))
        #expect(try collection("/org/freedesktop/secrets/collection/login") == .path("/org/freedesktop/secrets/collection/login"))
        let parsed = try parse("list")
        guard case .run(_, let options) = parsed else {
            Issue.record("'list' did not parse as a command: \(parsed)")
            return
        }
        #expect(options.collection == nil, "no --collection: the library's default ($PINGSTORAGE_COLLECTION, else 'default')")
    }

    @Test func timeoutValues() throws {
        func timeout(_ value: String) throws -> Duration? {
            guard case .run(_, let options) = try ArgumentParser.parse(["doctor", "--timeout", value]) else { return nil }
            return options.timeout
        }
        #expect(try timeout("10") == .seconds(10))
        #expect(try timeout("0.25") == .milliseconds(250))
        #expect(try timeout("0.0001") == .milliseconds(1), "never a zero deadline")
        #expect(try timeout("86400") == .seconds(86400), "the largest accepted")
        for bad in ["0", "0.0", "-1", "abc", "nan", "inf", "1e9", "86400.1"] {
            let error = usageError(["doctor", "--timeout", bad])
            // The message states exactly the range that is accepted: 0 is not in it.
            #expect(error?.message.hasPrefix("--timeout needs a number of seconds greater than 0 and at most 86400 "
                                             + "(fractions allowed), not '\(bad)'") == true, "\(bad)")
        }
    }

    /// `--prompt-timeout`: the same range as --timeout, into the configuration's prompt timeout.
    @Test func promptTimeoutValues() throws {
        guard case .run(_, let options) = try ArgumentParser.parse(["unlock", "--prompt-timeout", "90.5"]) else {
            Issue.record("parsed as something else"); return
        }
        #expect(options.promptTimeout == .milliseconds(90_500) && options.timeout == nil)
        #expect(KeyringSettings(options).configuration().promptTimeout == .milliseconds(90_500))
        #expect(KeyringSettings(GlobalOptions()).configuration().promptTimeout == .seconds(300), "the library's default")
        for bad in ["0", "-3", "x", "86401"] {
            #expect(usageError(["unlock", "--prompt-timeout", bad])?.message.hasPrefix(
                "--prompt-timeout needs a number of seconds greater than 0 and at most 86400 (fractions allowed), not '\(bad)'") == true,
                "\(bad)")
        }
    }

    @Test func inlineValues() throws {
        #expect(try ArgumentParser.parse(["get", "--account=A=B", "--service=S", "--collection=/org/x"])
                == .run(.get(account: "A=B", service: "S", raw: false),
                        GlobalOptions(collection: .path("/org/x"))))
        #expect(try ArgumentParser.parse(["get", "--account", "--weird"])
                == .run(.get(account: "--weird", service: defaultService, raw: false), GlobalOptions()),
                "a value option takes the next word, whatever it looks like")
        #expect(try ArgumentParser.parse(["get", "--account", "two words"])
                == .run(.get(account: "two words", service: defaultService, raw: false), GlobalOptions()))
    }

    // MARK: Help

    @Test func helpForEveryCommand() throws {
        #expect(try parse("--help") == .help(command: nil))
        #expect(try parse("-h") == .help(command: nil))
        #expect(try parse("help") == .help(command: nil))
        for spec in CommandTable.commands {
            #expect(try parse("\(spec.name) --help") == .help(command: spec.name))
            #expect(try parse("--help \(spec.name)") == .help(command: spec.name))
            #expect(try parse("help \(spec.name)") == .help(command: spec.name))
            #expect(try parse("\(spec.name) -h --bogus") == .help(command: spec.name), "help wins over errors")
            #expect(try parse("--bogus \(spec.name) --help") == .help(command: spec.name), "before them too")
        }
        #expect(try parse("get --account -h") == .run(.get(account: "-h", service: defaultService, raw: false),
                                                      GlobalOptions()), "an option's value is not a help request")
    }

    @Test func helpTextListsEveryOptionOfTheTable() {
        for spec in CommandTable.commands {
            let help = CommandTable.help(for: spec)
            #expect(help.hasPrefix("Usage: ping-keyring \(spec.name)"))
            for option in spec.options + CommandTable.globalOptions {
                #expect(help.contains(option.synopsis), "\(spec.name) --help shows \(option.synopsis)")
            }
            #expect(!help.contains("Exit status:"), "\(spec.name) --help does not repeat the exit statuses")
            #expect(help.hasSuffix("\nSee 'ping-keyring --help' for exit statuses.\n"))
            #expect(CommandTable.overview.contains("  \(spec.name) ") == !spec.isHidden,
                    "the overview lists \(spec.name) unless it is hidden")
            for line in help.split(separator: "\n") {
                #expect(line.count <= 100, "help lines are wrapped: \(line)")
            }
        }
        #expect(CommandTable.overview.components(separatedBy: "Exit status:\n").count == 2,
                "the overview has the exit statuses, once")
        #expect(CommandTable.overview.contains(CommandTable.exitStatusHelp + "\n"))
        #expect(CommandTable.usageLine(for: CommandTable.command(named: "get")!)
                == "ping-keyring get --account ACCOUNT [--service SERVICE] [--text] [--raw] [GLOBAL OPTIONS]")
        #expect(CommandTable.usageLine(for: CommandTable.command(named: "search")!)
                == "ping-keyring search ATTRIBUTE VALUE [ATTRIBUTE VALUE...] [--all] [GLOBAL OPTIONS]")
    }

    // MARK: Usage errors (exit 2)

    @Test func noCommand() {
        #expect(usageError([])?.message.contains("no command") == true)
        #expect(usageError("--json")?.message.contains("no command") == true)
    }

    @Test func unknownCommand() {
        let error = usageError("frobnicate")
        #expect(error?.message.contains("unknown command 'frobnicate'") == true)
        #expect(error?.message.contains("list, get, save, delete, apps, move, search, lookup, lock, unlock, doctor") == true)
    }

    @Test func unknownOption() {
        #expect(usageError("get --acount A")?.message.contains("unknown option '--acount' for 'get'") == true)
        #expect(usageError("list -x")?.message.contains("unknown option '-x'") == true)
        #expect(usageError("--bogus list")?.message.contains("unknown option '--bogus'") == true)
    }

    @Test func optionOfAnotherCommand() {
        #expect(usageError("list --account A")?.message.contains("unknown option '--account' for 'list'") == true)
        #expect(usageError("doctor --service S")?.message.contains("unknown option '--service' for 'doctor'") == true)
        #expect(usageError("get --account A --encrypt")?.message.contains("'--encrypt' for 'get'") == true)
        #expect(usageError("save --account A --raw")?.message.contains("'--raw' for 'save'") == true)
        #expect(usageError("--raw list")?.message.contains("'--raw' for 'list'") == true, "before the command name too")
    }

    @Test func missingRequiredAccount() {
        for command in ["get", "save", "delete"] {
            let error = usageError("\(command) --service S")
            #expect(error?.message.contains("'\(command)' needs --account ACCOUNT") == true)
            #expect(error?.message.contains("ping-keyring \(command) --help") == true, "points at the command's help")
        }
    }

    @Test func missingValue() {
        #expect(usageError("get --account")?.message.contains("--account needs a value") == true)
        #expect(usageError("list --collection")?.message.contains("--collection needs a value") == true)
        #expect(usageError("doctor --timeout")?.message.contains("--timeout needs a value") == true)
    }

    @Test func emptyValue() {
        #expect(usageError(["get", "--account", ""])?.message.contains("non-empty") == true)
        #expect(usageError(["get", "--account=A", "--service="])?.message.contains("non-empty") == true)
    }

    @Test func flagWithAValue() {
        #expect(usageError("get --account A --raw=yes")?.message.contains("--raw takes no value") == true)
        #expect(usageError("doctor --json=1")?.message.contains("--json takes no value") == true)
    }

    @Test func optionGivenTwice() {
        #expect(usageError("get --account A --account B")?.message.contains("--account is given more than once") == true)
        #expect(usageError("--json doctor --json")?.message.contains("--json is given more than once") == true)
    }

    @Test func strayArgument() {
        #expect(usageError("list doctor")?.message.contains("unexpected argument 'doctor'") == true)
        #expect(usageError("completion bash zsh")?.message.contains("unexpected argument 'zsh'") == true)
        // get, save and delete: the words are taken for the service and account (HabitTests).
        #expect(usageError("get A")?.message.contains("not as words: ping-keyring get --service A --account ACCOUNT") == true)
    }
}
