/// The help `ping-keyring --help` and `ping-keyring COMMAND --help` print, from ``CommandTable``.
extension CommandTable {
    /// What the program is for, in one line (help, man page NAME).
    static let tagline = "inspect and manage what PingStorage keeps in the keyring (Secret Service or file keyring)"

    /// The exit statuses, for the top-level help and the man page (command help points there).
    static let exitStatuses: [(status: ExitCode, meaning: String)] = [
        (.ok, "success (doctor: no check failed)"),
        (.notFound, "not found (get of an account with no item, search or lookup matching none)"),
        (.usage, "usage: bad command line or input"),
        (.keyringUnavailable, "keyring unavailable: no session bus, no provider, no collection, locked, timed out, "
            + "no secret from the Secret portal"),
        (.corrupt, "the stored value is corrupt or cannot be decrypted (key missing, changed, unknown format)"),
        (.other, "anything else (provider error, encryption unavailable, failed probe)"),
    ]

    /// The `Exit status:` block of `ping-keyring --help`.
    static var exitStatusHelp: String {
        "Exit status:\n" + exitStatuses.map { "  \($0.status.rawValue)  \($0.meaning)" }.joined(separator: "\n")
    }

    /// The last line of a command's help, instead of repeating the exit statuses.
    static let exitStatusPointer = "See '\(program) --help' for exit statuses."

    /// `ping-keyring --help`.
    static var overview: String {
        let visible = visibleCommands
        let width = visible.map(\.name.count).max() ?? 0
        var text = """
            \(program): \(tagline)

            Usage: \(program) COMMAND [OPTIONS] [GLOBAL OPTIONS]

            Commands:

            """
        for command in visible {
            text += "  \(command.name.padded(to: width))  \(command.summary)\n"
        }
        text += "\n" + optionsHelp(title: "Global options (before or after the command)", globalOptions)
        text += "\n" + exitStatusHelp + "\n\nRun '\(program) COMMAND --help' for a command's options.\n"
        return text
    }

    /// `ping-keyring COMMAND --help`.
    static func help(for command: CommandSpec) -> String {
        let description = command.description.split(separator: "\n").map { wrap(String($0)) }.joined(separator: "\n")
        var text = "Usage: \(usageLine(for: command))\n\n\(command.summary.capitalizedFirst).\n\n\(description)\n"
        if !command.options.isEmpty { text += "\n" + optionsHelp(title: "Options", command.options) }
        text += "\n" + optionsHelp(title: "Global options", globalOptions)
        text += "\n" + exitStatusPointer + "\n"
        return text
    }

    /// `ping-keyring get --account ACCOUNT [--service SERVICE] [--raw] [GLOBAL OPTIONS]`.
    static func usageLine(for command: CommandSpec) -> String {
        let options = command.options.map { $0.isRequired ? $0.synopsis : "[\($0.synopsis)]" }
        let argument = command.argument.map { [$0.synopsis] } ?? []
        return ([program, command.name] + argument + options + ["[GLOBAL OPTIONS]"]).joined(separator: " ")
    }

    /// `-a, --account ACCOUNT`; an option without a letter is indented to line up: `    --no-prompt`.
    static func label(of option: OptionSpec) -> String {
        (option.short.map { "-\($0), " } ?? "    ") + option.synopsis
    }

    private static func optionsHelp(title: String, _ options: [OptionSpec]) -> String {
        let labels = options.map(label(of:))
        let width = labels.map(\.count).max() ?? 0
        return "\(title):\n" + zip(labels, options).map { label, option in
            "  \(label.padded(to: width))  \(wrap(option.help, indent: width + 4))\n"
        }.joined()
    }

    /// `text` broken at spaces into lines of at most `width` columns; lines after the first are
    /// indented by `indent` (which the first line's caller already printed).
    static func wrap(_ text: String, width: Int = 100, indent: Int = 0) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            let limit = width - indent
            if !line.isEmpty, line.count + 1 + word.count > limit {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        lines.append(line)
        return lines.joined(separator: "\n" + String(repeating: " ", count: indent))
    }
}

extension String {
    /// "list the items" → "List the items".
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }

    /// The string followed by spaces up to `width` characters (unchanged when longer).
    func padded(to width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
