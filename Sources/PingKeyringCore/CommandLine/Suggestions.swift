import PingStorage

/// "did you mean …?": the known word closest to a mistyped one.
enum Suggestion {
    /// The candidate closest to `word` by ``distance(_:_:)`` (case ignored), when it is close
    /// enough to be a typo: at most one edit per three characters of `word`, and at least one.
    /// Ties go to the earliest candidate.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = max(1, word.count / 3)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = distance(word.lowercased(), candidate.lowercased())
            if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// `; did you mean 'list'?`, or `""` when nothing is close.
    static func didYouMean(_ word: String, among candidates: [String], prefix: String = "") -> String {
        closest(to: word, among: candidates).map { "; did you mean '\(prefix)\($0)'?" } ?? ""
    }

    /// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
    /// two neighbouring characters (`lsit` → `list` is one edit) each count one.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        // rows[i][j]: the distance between a's first i and b's first j characters.
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }
}

/// What users of secret-tool and Python keyring type, answered with ping-keyring's words: their
/// verbs (`set`, `store`, `del`, `clear`, …) and their positional `SERVICE ACCOUNT`, which a "did
/// you mean" by spelling would get wrong (`set` is one letter from `get`). A suggestion never
/// echoes a word that may be a secret typed by mistake, and never puts a value on a command line:
/// `save` asks for it without showing it, or reads stdin.
enum Habits {
    /// The usage error for a command line with an unknown first word `unknownCommand` or a known
    /// `command`, the `words` after it that it does not take, and the ping-keyring `options` it was
    /// given (`-s S -a A`); nil when no habit explains it.
    static func hint(unknownCommand: String?, command: String?, words: [String],
                     options: [String: String] = [:]) -> ToolError? {
        if let verb = unknownCommand {
            guard let meant = verbs[verb.lowercased()] else { return nil }
            let (service, account) = serviceAndAccount(words, options: options, mayHoldAValue: meant.command == "save")
            return .usage("unknown command '\(verb)'; \(meant.text): "
                              + example(meant.command, service: service, account: account, given: !words.isEmpty))
        }
        guard let command, ["get", "save", "delete"].contains(command), !words.isEmpty else { return nil }
        let (service, account) = serviceAndAccount(words, options: options, mayHoldAValue: command == "save")
        if command == "save", options["service"] != nil || options["account"] != nil || words.count == 1 {
            // Words after a save that has its account are a value typed on the command line.
            return .usage("'save' takes no value on its command line, where the shell's history would keep it: "
                              + example("save", service: service, account: account, given: true), command: command)
        }
        return .usage("'\(command)' takes the service and account as options, not as words: "
                          + example(command, service: service, account: account, given: true), command: command)
    }

    /// Whether `--NAME` is another tool's option that takes a value (secret-tool's `--label`,
    /// Python keyring's `--keyring-backend`, `--keyring-path`): its value is not a word to read.
    static func takesValue(longOption name: String) -> Bool {
        ["label", "keyring-backend", "keyring-path"].contains(name)
    }

    /// The same for `-x` (secret-tool's `-l`, Python keyring's `-b` and `-p`).
    static func takesValue(shortOption token: String) -> Bool { ["-l", "-b", "-p"].contains(token) }

    /// The other tools' verbs: what ping-keyring does instead, and its command.
    private static let verbs: [String: (text: String, command: String)] = [
        "set": ("ping-keyring stores a value with 'save'", "save"),
        "store": ("ping-keyring stores a value with 'save'", "save"),
        "add": ("ping-keyring stores a value with 'save'", "save"),
        "put": ("ping-keyring stores a value with 'save'", "save"),
        "read": ("ping-keyring prints an account's value with 'get' (any item's with 'lookup ATTRIBUTE VALUE…')", "get"),
        "show": ("ping-keyring prints an account's value with 'get' (any item's with 'lookup ATTRIBUTE VALUE…')", "get"),
        "del": ("ping-keyring deletes an account's items with 'delete' (never another app's)", "delete"),
        "clear": ("ping-keyring deletes an account's items with 'delete' (never another app's)", "delete"),
        "remove": ("ping-keyring deletes an account's items with 'delete' (never another app's)", "delete"),
        "rm": ("ping-keyring deletes an account's items with 'delete' (never another app's)", "delete"),
        "erase": ("ping-keyring deletes an account's items with 'delete' (never another app's)", "delete"),
        "ls": ("ping-keyring lists items with 'list' (any tool's with 'search ATTRIBUTE VALUE…')", "list"),
    ]

    /// The service and account: ping-keyring's own options when given; else secret-tool's pairs
    /// (`service S account A`, `username`/`user` for the account); else Python keyring's
    /// `SERVICE USERNAME` (for a command that stores, `mayHoldAValue`, only when both are there).
    /// Other words (a value typed by mistake) are never used; placeholders for what is missing.
    private static func serviceAndAccount(_ words: [String], options: [String: String],
                                          mayHoldAValue: Bool) -> (service: String, account: String) {
        if options["service"] != nil || options["account"] != nil {
            return (options["service"] ?? KeychainConfiguration.defaultService, options["account"] ?? "ACCOUNT")
        }
        var pairs: [String: String] = [:]
        for index in stride(from: 0, to: words.count - 1, by: 2) where pairs[words[index]] == nil {
            pairs[words[index]] = words[index + 1]
        }
        let account = pairs["account"] ?? pairs["username"] ?? pairs["user"]
        if pairs["service"] != nil || account != nil {
            return (pairs["service"] ?? "SERVICE", account ?? "ACCOUNT")
        }
        if words.count < 2, mayHoldAValue { return ("SERVICE", "ACCOUNT") }
        return (words.first ?? "SERVICE", words.dropFirst().first ?? "ACCOUNT")
    }

    /// The command line to type, its values quoted for a shell when they need it.
    private static func example(_ command: String, service: String, account: String, given: Bool) -> String {
        let options = "--service \(quoted(service)) --account \(quoted(account))"
        switch command {
        case "save":
            // Outside a sandbox a new account's save needs --app (ping-keyring cannot tell whose it
            // is): the line works as typed once APP is filled in, where it would be refused without.
            return "ping-keyring save --text --app APP \(options) (it asks for the value without showing it, or reads it "
                + "from stdin; APP: the app the item is for, e.g. com.example.App, left out inside the app's sandbox; "
                + "--text: plain text, as secret-tool and Python keyring read it; without it, the value is the JSON text "
                + "an app reads)"
        case "list":
            return given ? "ping-keyring list --service \(quoted(service))" : "ping-keyring list"
        default:
            return "ping-keyring \(command) \(options)"
        }
    }

    private static func quoted(_ word: String) -> String {
        let plain = word.allSatisfy { $0.isLetter || $0.isNumber || "-_.@:/+=,".contains($0) }
        return plain && !word.isEmpty ? word : "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
