import PingStorage

/// The values of a parsed command line: the global options, `search`'s and `lookup`'s attribute
/// pairs, and the ``Command`` built from them.
extension ArgumentParser {
    /// The global options from the values scanned, checked.
    /// - Throws: ``ToolError`` `usage` for a bad collection, timeout, prompt timeout, backend or app.
    static func globalOptions(_ values: [String: String], command: String) throws(ToolError) -> GlobalOptions {
        var options = GlobalOptions()
        options.json = values["json"] != nil
        options.noPrompt = values["no-prompt"] != nil
        options.verbose = values["verbose"] != nil
        if let collection = values["collection"] {
            do {
                options.collection = try KeychainConfiguration.Collection(parsing: collection)
            } catch {
                throw .usage("--collection: \(error.details?.message ?? error.errorMessage)", command: command)
            }
        }
        for name in ["timeout", "prompt-timeout"] {
            guard let text = values[name] else { continue }
            guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
                // 0 would be a deadline already passed: every call (every prompt) would time out.
                throw .usage("--\(name) needs a number of seconds greater than 0 and at most 86400 (fractions "
                                 + "allowed), not '\(text)'", command: command)
            }
            let duration = Duration.milliseconds(max(1, Int((seconds * 1000).rounded())))
            if name == "timeout" { options.timeout = duration } else { options.promptTimeout = duration }
        }
        if let name = values["backend"] {
            guard let backend = backendNamed[name] else {
                let hint = Suggestion.didYouMean(name, among: backendNames)
                throw .usage("--backend '\(name)' is not a backend" + (hint.isEmpty
                    ? "; it is one of \(backendNames.joined(separator: ", "))" : hint), command: command)
            }
            options.backend = backend
        }
        if let app = values["app"] {
            do {
                options.app = try AppIdentity(app).id
            } catch {
                throw .usage("--app needs an app id without NUL characters, such as com.example.App", command: command)
            }
        }
        return options
    }

    /// The values `--backend` takes, as `PINGSTORAGE_BACKEND` spells them.
    static let backendNames = ["automatic", "secret-service", "file-keyring"]

    /// The backend each of ``backendNames`` means.
    static let backendNamed: [String: KeychainConfiguration.Backend] = [
        "automatic": .automatic, "secret-service": .secretService, "file-keyring": .fileKeyring(path: nil),
    ]

    /// The attribute pairs of `search` and `lookup` (`service S account A`); empty for other commands.
    /// - Throws: ``ToolError`` `usage` for a name without its value, an empty name or a name given twice.
    static func pairs(_ words: [String], of command: CommandSpec) throws(ToolError) -> [String: String] {
        guard command.argument?.isPairs == true else { return [:] }
        guard words.count.isMultiple(of: 2) else {
            throw .usage("'\(command.name)' takes ATTRIBUTE VALUE pairs; attribute '\(words.last!)' has no value "
                             + "(e.g. \(CommandTable.program) \(command.name) service org.example.App account alice)",
                         command: command.name)
        }
        var attributes: [String: String] = [:]
        for index in stride(from: 0, to: words.count, by: 2) {
            let (name, value) = (words[index], words[index + 1])
            guard !name.isEmpty, !name.utf8.contains(0), !value.utf8.contains(0) else {
                throw .usage("an attribute name cannot be empty, and names and values cannot contain NUL characters",
                             command: command.name)
            }
            guard attributes.updateValue(value, forKey: name) == nil else {
                throw .usage("attribute '\(name)' is given more than once", command: command.name)
            }
        }
        return attributes
    }

    /// The command `name` with its options' values (defaults applied) and its words.
    static func command(_ name: String, _ values: [String: String], argument: String?,
                                attributes: [String: String]) -> Command {
        let service = values["service"] ?? KeychainConfiguration.defaultService
        switch name {
        case "list": return .list(service: values["service"])
        case "get": return .get(account: values["account"]!, service: service, raw: values["raw"] != nil,
                                text: values["text"] != nil)
        case "save": return .save(account: values["account"]!, service: service, encrypt: values["encrypt"] != nil,
                                  text: values["text"] != nil)
        case "delete": return .delete(account: values["account"]!, service: service)
        case "apps": return .apps(service: service)
        case "move": return .move(from: values["from"]!, service: service)
        case "search": return .search(attributes: attributes)
        case "lookup": return .lookup(attributes: attributes)
        case "lock": return .lock
        case "unlock": return .unlock
        case "doctor": return .doctor
        case "completion": return .completion(shell: argument!)
        case "man": return .manual
        default: preconditionFailure("command '\(name)' is in CommandTable but not built here")
        }
    }
}
