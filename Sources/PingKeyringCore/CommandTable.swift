import PingStorage

/// One option of the command line: its name (without `--`), its one-letter form, whether it
/// takes a value, and help.
struct OptionSpec: Sendable, Equatable {
    /// The name after `--`, e.g. `account`.
    let name: String
    /// The letter after `-` (`a` for `-a`), if it has one.
    var short: Character? = nil
    /// The placeholder of its value in help (`ACCOUNT`); nil for a flag, which takes no value.
    let valueName: String?
    /// One line of help.
    let help: String
    /// Whether the command fails without it.
    var isRequired = false

    var takesValue: Bool { valueName != nil }

    /// `--account ACCOUNT` / `--raw`.
    var synopsis: String { valueName.map { "--\(name) \($0)" } ?? "--\(name)" }
}

/// One command: its name, a summary, a longer description, and the options it accepts besides
/// the global ones.
struct CommandSpec: Sendable, Equatable {
    let name: String
    /// One line, for the list of commands.
    let summary: String
    /// Paragraphs shown by `ping-keyring COMMAND --help`.
    let description: String
    let options: [OptionSpec]

    func option(named name: String) -> OptionSpec? { options.first { $0.name == name } }
}

/// The command line of `ping-keyring`: every command, every option, all help text. The parser and
/// the help output are driven by these tables; nothing else lists options.
enum CommandTable {
    static let program = "ping-keyring"
    /// The `service` attribute the doctor's write/read/delete probe uses, so it never touches an
    /// app's items.
    static let probeService = "com.pingidentity.ping-keyring.doctor"

    private static let account = OptionSpec(
        name: "account", short: "a", valueName: "ACCOUNT", help: "the account (KeychainStorage's `account`)", isRequired: true)
    private static let service = OptionSpec(
        name: "service", short: "s", valueName: "SERVICE",
        help: "the `service` attribute (default \(KeychainConfiguration.defaultService))")

    /// Options every command accepts, before or after the command name.
    static let globalOptions: [OptionSpec] = [
        OptionSpec(name: "collection", short: "c", valueName: "COLLECTION",
                   help: "an alias (default, session, …) or an object path /org/freedesktop/secrets/collection/…; "
                       + "default: $PINGSTORAGE_COLLECTION, else the 'default' alias"),
        OptionSpec(name: "timeout", short: "t", valueName: "SECONDS",
                   help: "deadline of each keyring call, prompts included (default 25)"),
        OptionSpec(name: "no-prompt", valueName: nil,
                   help: "never show an unlock prompt: fail with 'locked' instead"),
        OptionSpec(name: "json", short: "j", valueName: nil,
                   help: "print one JSON document on stdout (errors too, as {\"error\": …})"),
        OptionSpec(name: "help", short: "h", valueName: nil, help: "show help"),
        OptionSpec(name: "version", short: "V", valueName: nil, help: "print the version and exit"),
    ]

    static let commands: [CommandSpec] = [
        CommandSpec(
            name: "list", summary: "list the items PingStorage keeps (never their secrets)",
            description: """
                Lists the items in the collection that carry PingStorage's schema \
                (xdg:schema = \(KeyringCommands.schemaName)) or the service attribute (default \
                \(KeychainConfiguration.defaultService)), including items other tools wrote, with their \
                account, service, label, item path, created and modified times, the secret's size in \
                bytes, and whether it is encrypted: yes (a SecuredKeyEncryptor envelope, with the id of \
                its key), no (JSON text) or binary/unknown (other bytes). The secret is read to measure \
                it, never printed.
                With --service, lists every item with that service attribute.
                """,
            options: [OptionSpec(name: "service", short: "s", valueName: "SERVICE",
                                 help: "only items with this `service` attribute")]),
        CommandSpec(
            name: "get", summary: "print the value stored for an account",
            description: """
                Prints the stored value: the JSON text KeychainStorage wrote, followed by a newline. \
                This is the only command that prints a secret. An item encrypted by SecuredKeyEncryptor \
                is decrypted with the key in the collection, bound to the item's service and account, \
                as an app reading it with SecuredKeyEncryptor() does. Exit status 4 when it cannot be: \
                its key is missing (keyNotFound), it was changed or copied from another item \
                (failedToDecrypt), or its format is unknown (unsupportedFormat); and for a value that is \
                neither JSON text nor an envelope (another Encryptor's output, or corrupt). The item is \
                left unchanged. --raw prints the bytes exactly as stored, not decrypted, with no newline \
                added. Exit status 1 when the account has no item.
                """,
            options: [account, service,
                      OptionSpec(name: "raw", short: "r", valueName: nil, help: "print the bytes as stored, unchecked")]),
        CommandSpec(
            name: "save", summary: "store the value read from stdin",
            description: """
                Reads the item's JSON text from stdin (what KeychainStorage would store: a String item \
                is "…" with the quotes) and stores it for the account exactly as an app would: one \
                item, replaced in place, with PingStorage's attributes and label. Leading and trailing \
                whitespace is dropped; anything that is not JSON is refused and nothing is written.
                With --encrypt the value is stored as SecuredKeyEncryptor's envelope (AES-256-GCM, bound \
                to the service and account), exactly as KeychainStorage with SecuredKeyEncryptor() \
                stores it, so apps read it back; the key is an item of its own in the collection, \
                created on the first encrypted save.
                """,
            options: [account, service,
                      OptionSpec(name: "encrypt", short: "e", valueName: nil,
                                 help: "encrypt with SecuredKeyEncryptor, as an app using SecuredKeyEncryptor() does")]),
        CommandSpec(
            name: "delete", summary: "delete the item of an account",
            description: """
                Deletes every item of the account (duplicates included). Deleting an account that has \
                no item succeeds, as KeychainStorage.delete() does; the output says whether there was one.
                """,
            options: [account, service]),
        CommandSpec(
            name: "doctor", summary: "check, step by step, that PingStorage can use the keyring",
            description: """
                Checks in order, one line each, with a fix for what fails: the session bus is reachable, \
                a Secret Service provider is present, the collection exists (the 'default' alias unless \
                --collection), it is unlocked, the transport is encrypted, an item can be written, read \
                back and deleted (service \(probeService), a random account; always cleaned up), and \
                SecuredKeyEncryptor's keys (xdg:schema = \(KeyringCommands.keySchemaName)) in the \
                collection: which are present, or none yet, each holding 32 bytes (read, never \
                printed; no key is created). Checks after a failure that need what failed are skipped. Exit status 0 only when no check failed; otherwise the status of the first \
                failure (3 for an unusable keyring).
                """,
            options: []),
    ]

    static func command(named name: String) -> CommandSpec? { commands.first { $0.name == name } }

    static func globalOption(named name: String) -> OptionSpec? { globalOptions.first { $0.name == name } }

    /// Every option of the table: the global ones, then each command's.
    static var allOptions: [OptionSpec] { globalOptions + commands.flatMap(\.options) }

    // MARK: Help

    static let exitStatusHelp = """
        Exit status:
          0  success (doctor: no check failed)
          1  not found (get of an account with no item)
          2  usage: bad command line or input
          3  keyring unavailable: no session bus, no provider, no collection, locked, timed out
          4  the stored value is corrupt or cannot be decrypted (key missing, changed, unknown format)
          5  anything else (provider error, encryption unavailable, failed probe)
        """

    /// `ping-keyring --help`.
    static var overview: String {
        let width = commands.map(\.name.count).max() ?? 0
        var text = """
            \(program): inspect and manage what PingStorage keeps in the Secret Service keyring

            Usage: \(program) COMMAND [OPTIONS] [GLOBAL OPTIONS]

            Commands:

            """
        for command in commands {
            text += "  \(command.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(command.summary)\n"
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
        text += "\n" + exitStatusHelp + "\n"
        return text
    }

    /// `ping-keyring get --account ACCOUNT [--service SERVICE] [--raw] [GLOBAL OPTIONS]`.
    static func usageLine(for command: CommandSpec) -> String {
        let options = command.options.map { $0.isRequired ? $0.synopsis : "[\($0.synopsis)]" }
        return ([program, command.name] + options + ["[GLOBAL OPTIONS]"]).joined(separator: " ")
    }

    private static func optionsHelp(title: String, _ options: [OptionSpec]) -> String {
        // `-a, --account ACCOUNT`; options without a letter line up: `    --no-prompt`.
        let labels = options.map { ($0.short.map { "-\($0), " } ?? "    ") + $0.synopsis }
        let width = labels.map(\.count).max() ?? 0
        return "\(title):\n" + zip(labels, options).map { label, option in
            let help = wrap(option.help, indent: width + 4)
            return "  \(label.padding(toLength: width, withPad: " ", startingAt: 0))  \(help)\n"
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
}
