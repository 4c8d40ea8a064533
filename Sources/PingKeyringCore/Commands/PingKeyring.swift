import PingStorage
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `ping-keyring` command-line tool, as a function from arguments to output: parsing,
/// running the command against the keyring, formatting (human or `--json`) and the exit status.
/// The executable only writes the result out, so everything here can be tested.
public enum PingKeyring {
    /// Standard input could not be read to its end (`reason` is the system's message).
    public struct InputFailure: Error, Sendable {
        /// Why, e.g. "Input/output error".
        public var reason: String
        /// - Parameter reason: why the input could not be read.
        public init(reason: String) { self.reason = reason }
    }

    /// What the process writes and how it exits.
    public struct Outcome: Sendable, Equatable {
        /// Bytes for stdout (bytes, because `get --raw` prints the value exactly as stored).
        public var standardOutput: Data
        /// Text for stderr: error messages, the `backend:` line (with `--verbose` or in a sandbox)
        /// and `get`'s `app:` line, keeping stdout the result alone; never secrets.
        public var standardError: String
        /// The exit status (0 ok, 1 not found, 2 usage, 3 keyring unavailable, 4 corrupt, 5 other).
        public var status: Int32
        /// Whether a newline follows ``standardOutput`` when stdout is a terminal, and only then:
        /// `lookup` prints the secret as `secret-tool lookup` does, exactly as stored into a pipe.
        public var newlineOnTerminal = false
    }

    /// Runs the command line `arguments` (without the program name).
    /// - Parameters:
    ///   - environment: the process environment (the doctor shows the bus address from it).
    ///   - readInput: reads stdin to its end, or throws when it cannot (then nothing is saved);
    ///     called only by `save`, after the command line checked out.
    /// - Returns: the output and exit status; never throws: every failure is an error message and
    ///   a non-zero status.
    public static func run(arguments: [String], environment: [String: String],
                           readInput: () async throws(InputFailure) -> Data) async -> Outcome {
        let invocation: Invocation
        do {
            invocation = try ArgumentParser.parse(arguments)
        } catch {
            return failure(error, json: ArgumentParser.requestsJSON(arguments))
        }
        switch invocation {
        case .help(let name): return help(name)
        case .version: return version()
        case .run(let command, let options): return await execute(command, options, environment: environment, readInput: readInput)
        }
    }

    /// The outcome of a command line that needs neither the keyring nor Swift concurrency: a usage
    /// error, `--help`, `--version`, `completion` and `manual`; nil for every other command.
    ///
    /// The executable answers these before it starts the async runtime, so `ping-keyring --help`
    /// costs what a synchronous program costs to start. ``run(arguments:environment:readInput:)``
    /// gives the same outcome for them.
    public static func outcomeWithoutTheKeyring(arguments: [String]) -> Outcome? {
        do {
            return immediateOutcome(of: try ArgumentParser.parse(arguments))
        } catch {
            return failure(error, json: ArgumentParser.requestsJSON(arguments))
        }
    }

    private static func immediateOutcome(of invocation: Invocation) -> Outcome? {
        switch invocation {
        case .help(let name): help(name)
        case .version: version()
        case .run(.completion(let shell), _): completion(shell)
        case .run(.manual, _): manual()
        case .run: nil
        }
    }

    private static func help(_ command: String?) -> Outcome {
        success(Data((command.flatMap(CommandTable.command(named:)).map(CommandTable.help(for:)) ?? CommandTable.overview).utf8))
    }

    private static func completion(_ shell: String) -> Outcome {
        success(Data((shell == "zsh" ? ZshCompletion.script : BashCompletion.script).utf8))
    }

    private static func manual() -> Outcome { success(Data(ManPage.page.utf8)) }

    private static func version() -> Outcome { success(Data(versionLine.utf8)) }

    /// What `--version` prints: `ping-keyring` and ``PingStorageVersion/current``, and a newline.
    static var versionLine: String { "\(CommandTable.program) \(PingStorageVersion.current)\n" }

    private static func execute(_ command: Command, _ options: GlobalOptions, environment: [String: String],
                                readInput: () async throws(InputFailure) -> Data) async -> Outcome {
        let settings = KeyringSettings(options)
        do {
            switch command {
            case .list(let service):
                let report = try await KeyringCommands.list(service: service, settings: settings)
                return success(options.json ? report.json.document : report.human, notes(report.backend, settings))
            case .get(let account, let service, let raw, let text):
                let report = try await KeyringCommands.get(account: account, service: service, raw: raw, text: text,
                                                           settings: settings)
                guard !options.json else { return success(Data(report.json.document.utf8)) }
                return Outcome(standardOutput: report.human,
                               standardError: notes(report.backend, settings) + report.humanNotes,
                               status: ExitCode.ok.rawValue)
            case .save(let account, let service, let encrypt, let text):
                let report = try await KeyringCommands.save(account: account, service: service, encrypt: encrypt,
                                                           text: text, settings: settings, input: readInput)
                return success(options.json ? report.json.document : report.human, notes(report.backend, settings))
            case .delete(let account, let service):
                let report = try await KeyringCommands.delete(account: account, service: service, settings: settings)
                return success(options.json ? report.json.document : report.human, notes(report.backend, settings))
            case .apps(let service):
                let report = try await KeyringCommands.apps(service: service, settings: settings)
                return success(options.json ? report.json.document : report.human, notes(report.backend, settings))
            case .move(let from, let service):
                let report = try await KeyringCommands.move(from: from, service: service, settings: settings)
                return success(options.json ? report.json.document : report.human, notes(report.backend, settings))
            case .search(let attributes):
                let report = try await KeyringCommands.search(attributes, settings: settings)
                return success(options.json ? report.json.document : report.human, notes(report.backend, settings))
            case .lookup(let attributes):
                let report = try await KeyringCommands.lookup(attributes, settings: settings)
                guard !options.json else { return success(Data(report.json.document.utf8)) }
                return Outcome(standardOutput: report.value, standardError: notes(report.backend, settings),
                               status: ExitCode.ok.rawValue, newlineOnTerminal: true)
            case .lock, .unlock:
                let report = try await KeyringCommands.setLocked(command == .lock, settings: settings)
                return success(options.json ? report.json.document : report.human, notes(report.backend, settings))
            case .completion(let shell):
                return completion(shell)
            case .manual:
                return manual()
            case .doctor:
                let report = await Doctor.run(LiveDoctorEnvironment(settings: settings, environment: environment))
                return Outcome(standardOutput: Data((options.json ? report.json.document : report.human).utf8),
                               standardError: "", status: report.exitStatus.rawValue)
            }
        } catch {
            return failure(error, json: options.json)
        }
    }

    private static func success(_ output: Data) -> Outcome {
        Outcome(standardOutput: output, standardError: "", status: ExitCode.ok.rawValue)
    }

    private static func success(_ text: String, _ notes: String) -> Outcome {
        Outcome(standardOutput: Data(text.utf8), standardError: notes, status: ExitCode.ok.rawValue)
    }

    /// The `backend: …` line for stderr when the settings show it (``KeyringSettings/showsBackend``).
    private static func notes(_ backend: KeychainBackendChoice?, _ settings: KeyringSettings) -> String {
        settings.showsBackend ? backend?.humanLine ?? "" : ""
    }

    /// stderr always gets `ping-keyring: error: KIND: message`, and the developer detail (object
    /// paths, D-Bus names) on a line of its own below it when there is one; with `--json`, stdout
    /// also gets `{"error": {…}}` so a script reading stdout always gets one JSON document.
    static func failure(_ error: ToolError, json: Bool) -> Outcome {
        Outcome(standardOutput: json ? Data(error.json.document.utf8) : Data(),
                standardError: "\(CommandTable.program): error: \(error.kind): \(error.message)\n"
                    + (error.detail.map { "  details: \($0)\n" } ?? ""),
                status: error.status.rawValue)
    }
}
