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

    private static let account = OptionSpec(
        name: "account", short: "a", valueName: "ACCOUNT", help: "the account (KeychainStorage's `account`)", isRequired: true)
    private static let service = OptionSpec(
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
                   help: "deadline of each keyring call, prompts included: more than 0, at most 86400 (default 25)"),
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
                With --service, lists every item with that service attribute that 'get' can read: the items \
                with an account attribute, and those Python keyring and go-keyring write (service and \
                username, no account), which get reads as the username's account; 'written by' (JSON: \
                writtenBy and accountAttribute) says which. Items with neither are left out ('search \
                service S' shows every item).
                Each item shows its app (the \(AppIdentity.attribute) attribute; 'none' for items of other tools \
                and of PingStorage 1.x, which every app reads). With --app (or in a Flatpak or snap, where the \
                sandbox's id is the default), only that app's items are listed, not the items with no app; \
                outside a sandbox without --app, every app's.
                Like every command that touches items, it works on the backend KeychainStorage uses with the \
                same settings (see --backend). With --verbose, or inside a Flatpak or snap, it says on stderr \
                which and why: 'backend: Secret Service (…)', or in a Flatpak sandbox 'backend: file keyring \
                PATH (…)', where the collection is the file and item paths are /file/NAME/N (the item's \
                position in it). With --json, a 'backend' object: kind (secretService or fileKeyring), path \
                and reason.
                """,
            options: [OptionSpec(name: "service", short: "s", valueName: "SERVICE",
                                 help: "only items with this `service` attribute")]),
        CommandSpec(
            name: "get", summary: "print the value stored for an account",
            description: """
                Prints the stored value: the JSON text KeychainStorage wrote, followed by a newline \
                (none is added when the text already ends with one). \
                This is the only command that prints a secret, with 'lookup'. An item encrypted by SecuredKeyEncryptor \
                is decrypted with the key in the collection, bound to the item's service and account, \
                as an app reading it with SecuredKeyEncryptor() does. Exit status 4 when it cannot be: \
                its key is missing (keyNotFound), it was changed or copied from another item \
                (failedToDecrypt), or its format is unknown (unsupportedFormat); and for a value that is \
                neither JSON text nor an envelope (another Encryptor's output, or corrupt). The item is \
                left unchanged. --text prints a value that is plain text (what 'save --text', secret-tool and \
                Python keyring store) as it is, decrypted if need be, with a newline added. --raw prints the \
                bytes exactly as stored, not decrypted, with no newline added. Exit status 1 when the account \
                has no item.
                Dates an app stores through JSONEncoder's default strategy are numbers of seconds since \
                2001-01-01 (Foundation's reference date), not since 1970: 700000000 is 2023-03-08, not 1992.
                stdout is the value alone: 'app: …', naming the item's app when ping-keyring chose which app to \
                read as (see --app), goes to stderr, and so does the 'backend: …' line with --verbose.
                It reads what the app's KeychainStorage reads (its own item, else one with no app, such as \
                Python keyring's and go-keyring's items: service and username). Without --app \
                outside a sandbox, the app is the one whose items the account has; when several apps have one, \
                --app must choose (exit status 2).
                """,
            options: [account, service,
                      OptionSpec(name: "text", valueName: nil,
                                 help: "print a plain text value (not JSON) as it is, with a newline"),
                      OptionSpec(name: "raw", short: "r", valueName: nil, help: "print the bytes as stored, unchecked")]),
        CommandSpec(
            name: "save", summary: "store the value read from stdin",
            description: """
                Reads the item's JSON text from stdin (what KeychainStorage would store: a String item \
                is "…" with the quotes) and stores it for the account exactly as an app would: one \
                item, replaced in place, with PingStorage's attributes and label. Leading and trailing \
                whitespace is dropped; anything that is not JSON is refused and nothing is written.
                With --text, stdin is stored as plain text, byte for byte but for one final newline \
                (echo hunter2 | ping-keyring save --text … stores hunter2): what secret-tool lookup and \
                Python keyring's get_password then read (an app reads it with KeychainStorage only if it \
                is JSON text). It must be UTF-8 text without NUL.
                With --encrypt the value is stored as SecuredKeyEncryptor's envelope (AES-256-GCM, bound \
                to the service and account), exactly as KeychainStorage with SecuredKeyEncryptor() \
                stores it, so apps read it back; the key is an item of its own in the collection (or the \
                file keyring), created on the first encrypted save.
                The item (and the key) is the app's: --app, or in a Flatpak or snap the sandbox's id. Without \
                --app outside a sandbox, it replaces the item of the one app that has one for the account; when \
                no app or several have one, --app is needed (exit status 2): nothing is saved under another \
                app's name by surprise.
                """,
            options: [account, service,
                      OptionSpec(name: "text", valueName: nil,
                                 help: "store stdin as plain text (one final newline dropped), not JSON"),
                      OptionSpec(name: "encrypt", short: "e", valueName: nil,
                                 help: "encrypt with SecuredKeyEncryptor, as an app using SecuredKeyEncryptor() does")]),
        CommandSpec(
            name: "delete", summary: "delete the item of an account",
            description: """
                Deletes every item of the account (duplicates included). Deleting an account that has \
                no item succeeds, as KeychainStorage.delete() does; the output says whether there was one.
                It deletes what the app's KeychainStorage.delete() deletes: the app's items and those with no \
                app, never another app's. Without --app outside a sandbox, the app is the one whose items the \
                account has; when several apps have one, --app must choose (exit status 2).
                """,
            options: [account, service]),
        CommandSpec(
            name: "search", summary: "list the items of any tool that have the given attributes (never their secrets)",
            description: """
                Lists every item of the collection whose attributes include all the pairs given, whoever \
                wrote it, as 'secret-tool search' does but without the secret: its path, label, created and \
                modified times, whether it is locked, and its attributes. Nothing is unlocked, changed or \
                read beyond that. Exit status 1 when no item matches.
                """,
            options: [], argument: ArgumentSpec(name: "ATTRIBUTE VALUE", isPairs: true)),
        CommandSpec(
            name: "lookup", summary: "print the secret of the first item with the given attributes",
            description: """
                Prints the secret of the first item whose attributes include all the pairs given, as \
                'secret-tool lookup' does: the bytes as stored, followed by a newline only when stdout is a \
                terminal (with --json, the value as 'get --json' shows it). The collection is unlocked if \
                need be, through a prompt unless --no-prompt. Nothing is changed. Exit status 1, with \
                nothing printed, when no item matches.
                """,
            options: [], argument: ArgumentSpec(name: "ATTRIBUTE VALUE", isPairs: true)),
        CommandSpec(
            name: "lock", summary: "lock the collection",
            description: """
                Locks the collection (the 'default' alias unless --collection), as 'secret-tool lock \
                --collection' does: reading its items then needs it unlocked again. Locking a locked \
                collection succeeds. A sandbox's file keyring has no lock of its own.
                """,
            options: []),
        CommandSpec(
            name: "unlock", summary: "unlock the collection (the provider may prompt for its password)",
            description: """
                Unlocks the collection (the 'default' alias unless --collection). The provider may ask for \
                its password in a prompt, which ping-keyring waits for until --timeout; with --no-prompt \
                it fails with 'locked' instead (exit status 3). Unlocking an unlocked collection succeeds. \
                A sandbox's file keyring has no lock of its own.
                """,
            options: []),
        CommandSpec(
            name: "doctor", summary: "check, step by step, that PingStorage can use the keyring",
            description: """
                Checks in order, one line each, with a fix for what fails: the session bus is reachable, \
                which backend is used and why, a Secret Service provider is present, the collection exists \
                (the 'default' alias unless --collection), it is unlocked, the transport is encrypted, an item can be written, read \
                back and deleted (service \(probeService), a random account; always cleaned up), and \
                SecuredKeyEncryptor's keys (xdg:schema = \(KeyringCommands.keySchemaName)) in the \
                collection: which are present, or none yet, each holding 32 bytes or a key bound to the TPM \
                (read, never printed; no key is created), and whether they are bound to this machine's TPM \
                (a TPM answers and opens them; a key the TPM no longer opens, after it was cleared, fails \
                with tpmCleared, exit status 4). Checks after a failure that need what failed are skipped. \
                Exit status 0 only when no check failed; otherwise the status of the first failure (3 for an \
                unusable keyring).
                When the backend is a Flatpak sandbox's file keyring, the checks are instead: the session bus \
                (the Secret portal is on it), the backend, the Secret portal gives the app's secret (its size), \
                the file keyring (its path; it exists with N items, or is created on the first save; a file \
                that cannot be read or decrypted fails), copying the host's items in (when it ran), the same \
                write/read/delete probe, and the encryption keys in the file and their binding; the Secret \
                Service's checks are skipped. Without the portal's secret the status is 3.
                It also says which app identity a program run here gets when it does not call AppIdentity.set: \
                the sandbox's id, or outside a sandbox its executable's path, with a warning: its items then follow \
                the program's path, so moving or renaming it loses them; call AppIdentity.set("com.example.App") at \
                start-up.
                """,
            options: []),
        CommandSpec(
            name: "completion", summary: "print the bash or zsh completion script",
            description: """
                Prints the completion script for SHELL (bash or zsh) on stdout, generated from the table \
                that drives the parser and this help.
                bash: install it as /usr/share/bash-completion/completions/\(program) (or \
                ~/.local/share/bash-completion/completions/\(program)), or add \
                'source <(\(program) completion bash)' to ~/.bashrc.
                zsh: install it as _\(program) in a directory of $fpath (e.g. \
                /usr/local/share/zsh/site-functions) before compinit runs, or add \
                'source <(\(program) completion zsh)' to ~/.zshrc after compinit.
                """,
            options: [], argument: ArgumentSpec(name: "SHELL", choices: ["bash", "zsh"]), isHidden: true),
        CommandSpec(
            name: "man", summary: "print the manual page (roff, section 1)",
            description: """
                Prints the manual page in roff on stdout, generated from the table that drives the parser \
                and this help: read it with '\(program) man | man -l -', or install it as \
                /usr/local/share/man/man1/\(program).1.
                """,
            options: [], isHidden: true),
    ]

    /// What the man page's DESCRIPTION says.
    static let about = """
        \(program) shows what apps using PingStorage keep in the Secret Service keyring (GNOME Keyring, \
        KeePassXC, KWallet), or inside a Flatpak sandbox in the app's file keyring, reads and writes it \
        exactly as an app does (through KeychainStorage and SecuredKeyEncryptor, on the backend they use \
        with the same settings), and finds out, step by step, why the keyring refuses.
        Options go before or after the command name, as --name VALUE, --name=VALUE or, for those with \
        a letter, -n VALUE (one letter per word). It never prints a secret, except the value 'get' or \
        'lookup' is asked for.
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
