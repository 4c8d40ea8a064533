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
    /// Values shell completion offers (others are accepted too).
    var suggestedValues: [String] = []

    var takesValue: Bool { valueName != nil }

    /// `--account ACCOUNT` / `--raw`.
    var synopsis: String { valueName.map { "--\(name) \($0)" } ?? "--\(name)" }
}

/// The words a command takes after its name: one of a few (`bash` in `completion bash`), or
/// attribute and value pairs (`search service S account A`, as secret-tool takes them).
struct ArgumentSpec: Sendable, Equatable {
    /// The placeholder in help, e.g. `SHELL` or `ATTRIBUTE VALUE`.
    let name: String
    /// The words accepted; empty for pairs, which take any word.
    var choices: [String] = []
    /// One or more pairs of words: an attribute's name, then its value.
    var isPairs = false

    /// How help and the man page show it: `SHELL`, or `ATTRIBUTE VALUE [ATTRIBUTE VALUE...]`.
    var synopsis: String { isPairs ? "\(name) [\(name)...]" : name }
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
    /// The word it needs after its name, if any.
    var argument: ArgumentSpec? = nil
    /// Left out of the overview, the man page's list of commands and completion (`--help` works).
    var isHidden = false

    func option(named name: String) -> OptionSpec? { options.first { $0.name == name } }
}

/// The command line of `ping-keyring`: every command, every option, all help text. The parser,
/// the help output, the shell completions and the man page are generated from these tables;
/// nothing else lists options.
enum CommandTable {
    static let program = "ping-keyring"
    /// `ping-keyring help [COMMAND]`, the one command word outside the table.
    static let helpWord = "help"
    /// The `service` attribute the doctor's write/read/delete probe uses, so it never touches an
    /// app's items.
    static let probeService = "com.pingidentity.ping-keyring.doctor"

    static let account = OptionSpec(
        name: "account", short: "a", valueName: "ACCOUNT", help: "the account (KeychainStorage's `account`)", isRequired: true)
    static let service = OptionSpec(
        name: "service", short: "s", valueName: "SERVICE",
        help: "the `service` attribute (default \(KeychainConfiguration.defaultService))")

    /// Options every command accepts, before or after the command name.
    static let globalOptions: [OptionSpec] = [
        OptionSpec(name: "collection", short: "c", valueName: "COLLECTION",
                   help: "an alias (default, session, …) or an object path /org/freedesktop/secrets/collection/…; "
                       + "default: $PINGSTORAGE_COLLECTION, else the 'default' alias",
                   suggestedValues: ["default", "session"]),
        OptionSpec(name: "backend", valueName: "BACKEND",
                   help: "where the items are, as for an app with KeychainConfiguration's backend: automatic "
                       + "($PINGSTORAGE_BACKEND, else inside a Flatpak sandbox the app's file keyring, unlocked by the "
                       + "Secret portal; outside, the Secret Service), secret-service, or file-keyring "
                       + "($XDG_DATA_HOME/keyrings/default.keyring); default automatic",
                   suggestedValues: ArgumentParser.backendNames),
        OptionSpec(name: "app", valueName: "ID",
                   help: "the app whose items these are (their \(AppIdentity.attribute) attribute, what AppIdentity.set "
                       + "gives, e.g. com.example.App): get, save and delete act as that app's KeychainStorage, list "
                       + "shows exactly its items. Default: in a Flatpak or snap, the sandbox's id; outside one, list "
                       + "and get see every app's items, and get, save and delete act as the one app that has items "
                       + "of the account (several: --app is needed; none: save needs --app)"),
        OptionSpec(name: "timeout", short: "t", valueName: "SECONDS",
                   help: "deadline of each keyring call, not counting the time a prompt is on screen: more than 0, "
                       + "at most 86400 (default 25)"),
        OptionSpec(name: "prompt-timeout", valueName: "SECONDS",
                   help: "how long a prompt (the keyring's unlock, or the first keyring's password) may stay on screen "
                       + "unanswered; then the command fails with timedOut, saying so (GNOME Keyring's unlock prompt "
                       + "stays open, as GNOME Keyring does not let a program close it): more than 0, at most 86400 "
                       + "(default 300)"),
        OptionSpec(name: "no-prompt", valueName: nil,
                   help: "never show an unlock prompt: fail with 'locked' instead"),
        OptionSpec(name: "json", short: "j", valueName: nil,
                   help: "print one JSON document on stdout (errors too, as {\"error\": …})"),
        OptionSpec(name: "verbose", short: "v", valueName: nil,
                   help: "say on stderr which backend the items are in and why ('backend: …'; said without it "
                       + "inside a Flatpak or snap, where it is not the Secret Service)"),
        OptionSpec(name: "help", short: "h", valueName: nil, help: "show help"),
        OptionSpec(name: "version", short: "V", valueName: nil, help: "print the version and exit"),
    ]

    /// What the man page's DESCRIPTION says.
    static let about = """
        \(program) shows what apps using PingStorage keep in the Secret Service keyring (GNOME Keyring, \
        KeePassXC, KWallet), or inside a Flatpak sandbox in the app's file keyring, reads and writes it \
        exactly as an app does (through KeychainStorage and SecuredKeyEncryptor, on the backend they use \
        with the same settings), and finds out, step by step, why the keyring refuses.
        Options go before or after the command name, as --name VALUE, --name=VALUE or, for those with \
        a letter, -n VALUE; letters of flags may be written together (-jr), the last one's value in the \
        next word (-ja ACCOUNT). It never prints a secret, except the value 'get' or 'lookup' is asked \
        for, and never takes one as an argument.
        """

    /// The environment variables the tool reads, for the man page.
    static let environment: [(name: String, meaning: String)] = [
        ("PINGSTORAGE_COLLECTION", "the collection to use when --collection is not given: an alias or an object path"),
        ("PINGSTORAGE_BACKEND", "where the items are when --backend is not given (or is automatic): secret-service, "
            + "file-keyring or automatic, as for apps using PingStorage"),
        ("XDG_DATA_HOME", "the file keyring is $XDG_DATA_HOME/keyrings/default.keyring (else under "
            + "$HOME/.local/share); in a Flatpak sandbox, the app's own data directory"),
        ("DBUS_SESSION_BUS_ADDRESS", "the session bus on which the Secret Service provider and the Secret portal "
            + "are reached; without it, $XDG_RUNTIME_DIR/bus"),
    ]

    static func command(named name: String) -> CommandSpec? { commands.first { $0.name == name } }

    /// The commands the overview, the man page and completion show.
    static var visibleCommands: [CommandSpec] { commands.filter { !$0.isHidden } }

    static func globalOption(named name: String) -> OptionSpec? { globalOptions.first { $0.name == name } }

    /// Every option of the table: the global ones, then each command's.
    static var allOptions: [OptionSpec] { globalOptions + commands.flatMap(\.options) }
}
