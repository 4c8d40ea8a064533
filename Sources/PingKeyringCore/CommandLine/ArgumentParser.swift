import PingStorage

/// A parsed command, with defaults applied and values checked.
enum Command: Sendable, Equatable {
    /// `list [--service S]`; nil service: PingStorage's items of any service plus the default service's.
    case list(service: String?)
    /// `get`; `text`: print a plain text value as it is.
    case get(account: String, service: String, raw: Bool, text: Bool = false)
    /// `save`; `text`: store stdin as plain text, not JSON.
    case save(account: String, service: String, encrypt: Bool, text: Bool = false)
    case delete(account: String, service: String)
    /// `apps [--service S]`: the app identities with items of the service, or keys.
    case apps(service: String)
    /// `move --from ID [--service S]`: give ID's items of the service to the app (`--app`).
    case move(from: String, service: String)
    /// `search ATTRIBUTE VALUE…`: any tool's items with these attributes, never their secrets.
    case search(attributes: [String: String])
    /// `lookup ATTRIBUTE VALUE…`: the secret of the first item with these attributes.
    case lookup(attributes: [String: String])
    /// `lock`: lock the collection.
    case lock
    /// `unlock`: unlock the collection (a prompt when allowed).
    case unlock
    case doctor
    /// `completion bash|zsh`: print the completion script.
    case completion(shell: String)
    /// `man`: print the man page.
    case manual
}

/// What the command line asks for.
enum Invocation: Sendable, Equatable {
    /// Print help: the overview (nil) or a command's.
    case help(command: String?)
    /// Print the version (`--version`, `-V`).
    case version
    case run(Command, GlobalOptions)
}

/// The hand-written command-line parser, driven by ``CommandTable``.
///
/// Rules: the command name is the first word that is not an option or an option's value;
/// options (`--name VALUE`, `--name=VALUE`, flags `--name`, and one-letter forms `-a VALUE`, `-j`,
/// flags together `-jr` and `-ja VALUE`, but no `-aVALUE`) may come before or after it; global
/// options belong to every command; an option given twice, an unknown option or command, a value
/// missing or given to a flag, a stray word, an empty value, and a missing required option are
/// usage errors (exit 2). `-h`/`--help` anywhere (but as an option's value) asks for help and wins
/// over everything else; then `--version`.
enum ArgumentParser {
    /// Parses `arguments` (without the program name).
    /// - Throws: ``ToolError`` of kind `usage`.
    static func parse(_ arguments: [String]) throws(ToolError) -> Invocation {
        if arguments.isEmpty { throw .usage("no command given") }
        let scan = Scan(arguments)
        if scan.wantsHelp { return .help(command: scan.command?.name) }
        if scan.values["version"] != nil { return .version }
        if let hint = Habits.hint(unknownCommand: scan.unknownCommand, command: scan.command?.name,
                                  words: scan.unknownCommand != nil || scan.strayIsTheError ? scan.stray : [],
                                  options: scan.values) {
            throw hint
        }
        if let error = scan.error { throw error }
        let values = scan.values

        guard let commandSpec = scan.command else { throw .usage("no command given") }
        // Options of another command given before the command name.
        for name in values.keys where CommandTable.globalOption(named: name) == nil
            && commandSpec.option(named: name) == nil {
            throw .usage("unknown option '--\(name)' for '\(commandSpec.name)'", command: commandSpec.name)
        }
        for option in commandSpec.options where option.isRequired && values[option.name] == nil {
            throw .usage("'\(commandSpec.name)' needs \(option.synopsis)", command: commandSpec.name)
        }
        if let argument = commandSpec.argument, scan.arguments.isEmpty {
            let what = argument.isPairs ? argument.synopsis : "\(argument.name) (\(argument.choices.joined(separator: " or ")))"
            throw .usage("'\(commandSpec.name)' needs \(what)", command: commandSpec.name)
        }
        if values["raw"] != nil, values["text"] != nil {
            throw .usage("--raw prints the bytes as stored and --text prints them as text: give one", command: commandSpec.name)
        }
        let attributes = try pairs(scan.arguments, of: commandSpec)
        let globals = try globalOptions(values, command: commandSpec.name)
        return .run(command(commandSpec.name, values, argument: scan.arguments.first, attributes: attributes), globals)
    }

    /// Whether the command line asks for `--json`, even when it does not parse: a usage error is
    /// then a JSON document on stdout too.
    static func requestsJSON(_ arguments: [String]) -> Bool { Scan(arguments).values["json"] != nil }

    /// One pass over the words: the command, the options' values, help and version requests, and
    /// the first error. It goes on after an error so that `--help` or `--version` further on still
    /// win; an unknown option is taken for a flag.
    private struct Scan {
        var command: CommandSpec?
        /// The words after the command name, for a command that takes them.
        var arguments: [String] = []
        /// Option values by long name; `""` for a flag.
        var values: [String: String] = [:]
        var wantsHelp = false
        var error: ToolError?
        /// Words after the command that it does not take (`get SERVICE ACCOUNT`).
        var stray: [String] = []
        /// Whether the first error is a stray word (not an unknown option whose value it may be).
        var strayIsTheError = false
        /// The first word, when it is no command (`set`, `store`).
        var unknownCommand: String?

        init(_ arguments: [String]) {
            if arguments.first == CommandTable.helpWord {
                wantsHelp = true
                command = arguments.dropFirst().lazy.compactMap(CommandTable.command(named:)).first
                return
            }
            var index = 0
            while index < arguments.count {
                let token = arguments[index]
                index += 1
                guard token.hasPrefix("-"), token != "-" else {
                    word(token)
                    continue
                }
                guard token.hasPrefix("--") else {
                    // `-x`, or flags together (`-jr`): one letter each, the last one's value (if it
                    // takes one) in the next word.
                    guard let options = ArgumentParser.shortOptions(token, in: command) else {
                        fail(.usage(ArgumentParser.unknownShortOption(token, in: command), command: command?.name))
                        if Habits.takesValue(shortOption: token) { index += 1 }
                        continue
                    }
                    for option in options {
                        take(option, spelling: options.count == 1 ? token : "-\(option.short!)", inline: nil, arguments, &index)
                    }
                    continue
                }
                let body = token.dropFirst(2)
                let name = String(body.prefix { $0 != "=" })
                let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
                guard let option = ArgumentParser.lookUpOption(name, in: command) else {
                    let suffix = command.map { " for '\($0.name)'" } ?? ""
                    let known = (command?.options ?? CommandTable.commands.flatMap(\.options)) + CommandTable.globalOptions
                    let hint = Suggestion.didYouMean(name, among: known.map(\.name), prefix: "--")
                    fail(.usage("unknown option '--\(name)'\(suffix)\(hint)", command: command?.name))
                    // Another tool's option and its value (`--label X`): the value is no word of ours.
                    if inline == nil, Habits.takesValue(longOption: name) { index += 1 }
                    continue
                }
                take(option, spelling: "--\(name)", inline: inline, arguments, &index)
            }
        }

        /// Records `option` (typed as `spelling`) and its value: `inline` (after `=`), else the
        /// next word, which `index` then moves past.
        private mutating func take(_ option: OptionSpec, spelling: String, inline: String?,
                                   _ arguments: [String], _ index: inout Int) {
            if option.name == "help" { wantsHelp = true }
            var value = ""
            if let valueName = option.valueName {
                if let inline {
                    value = inline
                } else if index < arguments.count {
                    value = arguments[index]
                    index += 1
                } else {
                    fail(.usage("\(spelling) needs a value (\(spelling) \(valueName))", command: command?.name))
                    return
                }
                if value.isEmpty {
                    fail(.usage("\(spelling) needs a non-empty value", command: command?.name))
                }
            } else if inline != nil {
                fail(.usage("\(spelling) takes no value", command: command?.name))
            }
            guard values[option.name] == nil else {
                fail(.usage("--\(option.name) is given more than once", command: command?.name))
                return
            }
            values[option.name] = value
        }

        /// The command name, its argument, or a stray word.
        private mutating func word(_ token: String) {
            if let command, let spec = command.argument, spec.isPairs {
                arguments.append(token)
                return
            }
            if let command, let spec = command.argument, arguments.isEmpty {
                arguments.append(token)
                if !spec.choices.contains(token) {
                    let what = "unknown \(spec.name.lowercased()) '\(token)' for '\(command.name)'"
                    let hint = Suggestion.didYouMean(token, among: spec.choices)
                    fail(.usage(what + (hint.isEmpty ? "; it is one of \(spec.choices.joined(separator: ", "))" : hint),
                                command: command.name))
                }
                return
            }
            guard command == nil else {
                stray.append(token)
                if stray.count == 1, error == nil {
                    strayIsTheError = true
                    fail(.usage("unexpected argument '\(token)'", command: command?.name))
                }
                return
            }
            guard let spec = CommandTable.command(named: token) else {
                // Words after an unknown command are kept for Habits (`set SERVICE ACCOUNT`).
                guard unknownCommand == nil else {
                    stray.append(token)
                    return
                }
                unknownCommand = token
                guard error == nil else { return }
                let known = CommandTable.visibleCommands.map(\.name)
                if let guess = Suggestion.closest(to: token, among: known + [CommandTable.helpWord]) {
                    fail(.usage("unknown command '\(token)'; did you mean '\(guess)'?"))
                } else {
                    fail(.usage("unknown command '\(token)'; the commands are \(known.joined(separator: ", "))"))
                }
                return
            }
            command = spec
        }

        /// Records the first error only.
        private mutating func fail(_ failure: ToolError) {
            if error == nil { error = failure }
        }
    }

    /// A global option, or an option of the command; before the command name, an option of any
    /// command (checked against the command once it is known).
    private static func lookUpOption(_ name: String, in command: CommandSpec?) -> OptionSpec? {
        if let option = CommandTable.globalOption(named: name) { return option }
        if let command { return command.option(named: name) }
        return CommandTable.commands.lazy.compactMap { $0.option(named: name) }.first
    }

    /// The options of `-x` or of flags written together (`-jr`, `-ja ACCOUNT`): each letter an
    /// option, all but the last one flags; nil when a letter is unknown or a value is attached.
    private static func shortOptions(_ token: String, in command: CommandSpec?) -> [OptionSpec]? {
        let letters = Array(token.dropFirst())
        guard !letters.isEmpty else { return nil }
        var options: [OptionSpec] = []
        for (position, letter) in letters.enumerated() {
            guard let option = lookUpOption(short: letter, in: command),
                  !option.takesValue || position == letters.count - 1 else { return nil }
            options.append(option)
        }
        return options
    }

    /// `unknown option '-x'`, with the letter that is unknown in `-jx`, or how to write a value
    /// attached to its letter (`-aVALUE`).
    private static func unknownShortOption(_ token: String, in command: CommandSpec?) -> String {
        let message = "unknown option '\(token)'"
        let letters = token.dropFirst()
        if letters.count == 1, let command, lookUpOption(short: letters.first!, in: nil) != nil {
            return message + " for '\(command.name)'"  // another command's option
        }
        guard letters.count > 1 else { return message }
        // In order: an unknown letter, or one that takes a value with the rest of the word after it.
        for index in letters.indices {
            guard let option = lookUpOption(short: letters[index], in: command) else {
                return message + ": '-\(letters[index])' is no option" + (command.map { " of '\($0.name)'" } ?? "")
            }
            guard option.takesValue else { continue }
            let flags = letters[..<index].map { "-\($0)" }
            let value = letters[letters.index(after: index)...]
            return message + "; write the value apart: '" + (flags + ["-\(letters[index]) \(value)"]).joined(separator: " ")
                + "' or '--\(option.name)=\(value)'"
        }
        return message
    }

    /// The same by short name (`a` for `-a`); a letter means one option in every command.
    private static func lookUpOption(short: Character, in command: CommandSpec?) -> OptionSpec? {
        let matches: (OptionSpec) -> Bool = { $0.short == short }
        if let option = CommandTable.globalOptions.first(where: matches) { return option }
        if let command { return command.options.first(where: matches) }
        return CommandTable.commands.lazy.compactMap { $0.options.first(where: matches) }.first
    }
}
