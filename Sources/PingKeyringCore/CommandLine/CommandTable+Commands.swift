import PingStorage

/// Every command of `ping-keyring`, with its help: the table the parser, the help output, the
/// shell completions and the man page are generated from.
extension CommandTable {
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
                neither text nor an envelope (another Encryptor's output, or corrupt). The item is \
                left unchanged. A value that is plain text, not JSON (what 'save --text', secret-tool and \
                Python keyring store), is printed as it is, decrypted if need be, with a newline added, and a \
                warning on stderr: an app's KeychainStorage.get() fails on it with corruptItem. --text prints \
                any text that way, JSON too. --raw prints the bytes exactly as stored, not decrypted, with no \
                newline added. Exit status 1 when the account has no item.
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
                                 help: "print the value as text, as it is, with a newline (JSON too)"),
                      OptionSpec(name: "raw", short: "r", valueName: nil, help: "print the bytes as stored, unchecked")]),
        CommandSpec(
            name: "save", summary: "store a value typed at a prompt that does not show it, or read from stdin",
            description: """
                Reads the item's JSON text (what KeychainStorage would store: a String item is "…" with the \
                quotes) and stores it for the account exactly as an app would: one item, replaced in place, \
                with PingStorage's attributes and label. At a terminal, it asks for the value and reads one \
                line with the terminal's echo off, as secret-tool and Python keyring do (at most 4095 bytes; \
                Ctrl-C leaves the terminal as it was); otherwise it reads all of stdin (a pipe, or a file: \
                ping-keyring save … < FILE). A value is never an argument, where the shell's history would \
                keep it. Leading and trailing whitespace is dropped; anything that is not JSON is refused and \
                nothing is written.
                With --text, the value is stored as plain text, byte for byte but for one final newline (a \
                line typed or piped as hunter2 is stored as hunter2): what secret-tool lookup and Python \
                keyring's get_password then read (an app reads it with KeychainStorage only if it is JSON \
                text). It must be UTF-8 text without NUL.
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
            name: "apps", summary: "list the app identities that have items, and their accounts (never secrets)",
            description: """
                Lists every app identity (the \(AppIdentity.attribute) attribute) that has items of the service \
                (default \(KeychainConfiguration.defaultService); --service) or SecuredKeyEncryptor keys, with its \
                accounts and keys, and 'none' for the items no app owns (other tools', PingStorage 1.x's: read by an \
                app only while it has no item of its own for the account). Nothing is unlocked or read beyond that.
                A program that does not call AppIdentity.set is known by its executable's path: moved, renamed, or \
                once it calls AppIdentity.set, it no longer sees the items of its old identity. They are listed \
                here, and 'move' gives them to it. With --app (in a Flatpak or snap, the sandbox's id by default), \
                the identities that have items of the same accounts as that app say which.
                An identity is a convention among cooperating apps, not an access boundary: any program of the \
                user can read and change every item of a shared keyring.
                """,
            options: [service]),
        CommandSpec(
            name: "move", summary: "give the items of an old app identity to an app",
            description: """
                Gives the items of the service that identity --from has to the app (--app; in a Flatpak or \
                snap, the sandbox's id by default): each keeps its label, secret and other attributes and gets \
                the app's \(AppIdentity.attribute). An account the app already has an item of is left with the \
                old identity: the app's item is never overwritten. The old identity's SecuredKeyEncryptor keys \
                that the app lacks are copied to it, so the moved encrypted items open; the old identity keeps \
                them. Items of other identities and items no app owns are not touched. 'apps' lists the \
                identities and their accounts first. Outside a sandbox, --app is required (exit status 2).
                """,
            options: [OptionSpec(name: "from", valueName: "ID", help: "the old identity (as 'apps' lists it)", isRequired: true),
                      service]),
        CommandSpec(
            name: "search", summary: "list the items of any tool that have the given attributes (never their secrets)",
            description: """
                Lists every item of the collection whose attributes include all the pairs given, whoever \
                wrote it, as 'secret-tool search' does but without the secret: its path, label, created and \
                modified times, whether it is locked, and its attributes. Nothing is unlocked, changed or \
                read beyond that. Exit status 1 when no item matches. Every matching item is listed: --all, \
                which secret-tool needs for that, is accepted and changes nothing.
                """,
            options: [OptionSpec(name: "all", valueName: nil,
                                 help: "accepted as secret-tool takes it: every matching item is listed anyway")],
            argument: ArgumentSpec(name: "ATTRIBUTE VALUE", isPairs: true)),
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
                its password in a prompt, shown on the desktop session's display (the session bus's, not \
                this terminal's: run from SSH, it waits on the desktop's screen), which ping-keyring waits \
                for until --prompt-timeout; a prompt that cannot be shown (no display for the session) \
                fails at once saying so; with --no-prompt it fails with 'locked' instead (exit status 3). \
                Unlocking an unlocked collection succeeds. A sandbox's file keyring has no lock of its own.
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
                start-up. With --app (or in a sandbox), it speaks of that app, and when it has no item of the \
                default service but other identities have, it names them and the 'move' that gives them to it.
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
}
