import PingStorage
import SecretService

/// The options every command shares.
struct GlobalOptions: Sendable, Equatable {
    /// `--collection`; nil: `$PINGSTORAGE_COLLECTION`, else the `default` alias (KeychainConfiguration's rule).
    var collection: CollectionReference?
    /// `--timeout`; nil: the library's default (25 s).
    var timeout: Duration?
    /// `--no-prompt`.
    var noPrompt = false
    /// `--json`.
    var json = false
}

/// A parsed command, with defaults applied and values checked.
enum Command: Sendable, Equatable {
    /// `list [--service S]`; nil service: PingStorage's items of any service plus the default service's.
    case list(service: String?)
    case get(account: String, service: String, raw: Bool)
    case save(account: String, service: String, encrypt: Bool)
    case delete(account: String, service: String)
    case doctor
}

/// What the command line asks for.
enum Invocation: Sendable, Equatable {
    /// Print help: the overview (nil) or a command's.
    case help(command: String?)
    case run(Command, GlobalOptions)
}

/// The hand-written command-line parser, driven by ``CommandTable``.
///
/// Rules: the command name is the first word that is not an option; options (`--name VALUE`,
/// `--name=VALUE`, flags `--name`) may come before or after it; global options belong to every
/// command; an option given twice, an unknown option or command, a value missing or given to a
/// flag, a stray word, an empty value, and a missing required option are usage errors (exit 2).
/// `-h`/`--help` anywhere asks for help and wins over everything else.
enum ArgumentParser {
    /// Parses `arguments` (without the program name).
    /// - Throws: ``ToolError`` of kind `usage`.
    static func parse(_ arguments: [String]) throws(ToolError) -> Invocation {
        if arguments.isEmpty { throw .usage("no command given") }
        if let help = helpRequest(arguments) { return help }

        var commandSpec: CommandSpec?
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            guard token.hasPrefix("-"), token != "-" else {
                guard commandSpec == nil else {
                    throw .usage("unexpected argument '\(token)'", command: commandSpec?.name)
                }
                guard let spec = CommandTable.command(named: token) else {
                    let known = CommandTable.commands.map(\.name).joined(separator: ", ")
                    throw .usage("unknown command '\(token)'; the commands are \(known)")
                }
                commandSpec = spec
                continue
            }
            guard token.hasPrefix("--") else {
                throw .usage("unknown option '\(token)'", command: commandSpec?.name)
            }
            let body = token.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            guard let option = lookUpOption(name, in: commandSpec) else {
                let suffix = commandSpec.map { " for '\($0.name)'" } ?? ""
                throw .usage("unknown option '--\(name)'\(suffix)", command: commandSpec?.name)
            }
            guard values[name] == nil else {
                throw .usage("--\(name) is given more than once", command: commandSpec?.name)
            }
            if option.takesValue {
                if let inline {
                    values[name] = inline
                } else if index < arguments.count {
                    values[name] = arguments[index]
                    index += 1
                } else {
                    throw .usage("--\(name) needs a value (\(option.synopsis))", command: commandSpec?.name)
                }
                if values[name]!.isEmpty {
                    throw .usage("--\(name) needs a non-empty value", command: commandSpec?.name)
                }
            } else {
                guard inline == nil else {
                    throw .usage("--\(name) takes no value", command: commandSpec?.name)
                }
                values[name] = ""
            }
        }

        guard let commandSpec else { throw .usage("no command given") }
        // Options of another command given before the command name.
        for name in values.keys where CommandTable.globalOption(named: name) == nil
            && commandSpec.option(named: name) == nil {
            throw .usage("unknown option '--\(name)' for '\(commandSpec.name)'", command: commandSpec.name)
        }
        for option in commandSpec.options where option.isRequired && values[option.name] == nil {
            throw .usage("'\(commandSpec.name)' needs \(option.synopsis)", command: commandSpec.name)
        }
        let globals = try globalOptions(values, command: commandSpec.name)
        return .run(command(commandSpec.name, values), globals)
    }

    /// A global option, or an option of the command; before the command name, an option of any
    /// command (checked against the command once it is known).
    private static func lookUpOption(_ name: String, in command: CommandSpec?) -> OptionSpec? {
        if let option = CommandTable.globalOption(named: name) { return option }
        if let command { return command.option(named: name) }
        return CommandTable.commands.lazy.compactMap { $0.option(named: name) }.first
    }

    /// `-h`/`--help` anywhere, or `help [COMMAND]` as the first word.
    private static func helpRequest(_ arguments: [String]) -> Invocation? {
        let command = arguments.first { CommandTable.command(named: $0) != nil }
        if arguments.contains("-h") || arguments.contains("--help") { return .help(command: command) }
        if arguments[0] == "help" {
            return .help(command: arguments.dropFirst().first { CommandTable.command(named: $0) != nil })
        }
        return nil
    }

    private static func globalOptions(_ values: [String: String], command: String) throws(ToolError) -> GlobalOptions {
        var options = GlobalOptions()
        options.json = values["json"] != nil
        options.noPrompt = values["no-prompt"] != nil
        if let collection = values["collection"] { options.collection = collectionReference(collection) }
        if let text = values["timeout"] {
            guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
                throw .usage("--timeout needs a number of seconds between 0 and 86400, not '\(text)'", command: command)
            }
            options.timeout = .milliseconds(max(1, Int((seconds * 1000).rounded())))
        }
        return options
    }

    /// `default`, `session`, another alias, or an object path (starting with `/`).
    static func collectionReference(_ text: String) -> CollectionReference {
        if text.hasPrefix("/") { return .path(text) }
        switch text {
        case "default": return .default
        case "session": return .session
        default: return .alias(text)
        }
    }

    private static func command(_ name: String, _ values: [String: String]) -> Command {
        let service = values["service"] ?? KeychainConfiguration.defaultService
        switch name {
        case "list": return .list(service: values["service"])
        case "get": return .get(account: values["account"]!, service: service, raw: values["raw"] != nil)
        case "save": return .save(account: values["account"]!, service: service, encrypt: values["encrypt"] != nil)
        case "delete": return .delete(account: values["account"]!, service: service)
        case "doctor": return .doctor
        default: preconditionFailure("command '\(name)' is in CommandTable but not built here")
        }
    }
}
