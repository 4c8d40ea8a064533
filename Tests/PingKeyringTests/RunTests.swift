import Foundation
import Testing
@testable import PingKeyringCore

/// Runs the tool in-process on paths that fail or finish before any D-Bus call.
private func run(_ arguments: [String], input: Data = Data()) async -> PingKeyring.Outcome {
    await PingKeyring.run(arguments: arguments, environment: [:]) { input }
}

@Suite("Runs without a keyring: help, usage errors, stdin checks")
struct RunTests {
    @Test func helpGoesToStdoutWithStatus0() async {
        let overview = await run(["--help"])
        #expect(overview.status == 0)
        #expect(String(decoding: overview.standardOutput, as: UTF8.self) == CommandTable.overview)
        #expect(overview.standardError.isEmpty)
        for command in CommandTable.commands {
            let help = await run([command.name, "--help"])
            #expect(help.status == 0)
            #expect(String(decoding: help.standardOutput, as: UTF8.self) == CommandTable.help(for: command))
        }
    }

    @Test func usageErrorsGoToStderrWithStatus2() async {
        let outcome = await run(["get"])
        #expect(outcome.status == 2)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError == "ping-keyring: error: usage: 'get' needs --account ACCOUNT (see 'ping-keyring get --help')\n")
    }

    @Test func withJSONAUsageErrorIsAlsoAJSONDocumentOnStdout() async throws {
        let outcome = await run(["--json", "list", "--bogus"])
        #expect(outcome.status == 2)
        let json = try parseJSON(String(decoding: outcome.standardOutput, as: UTF8.self))
        let error = try #require(json["error"] as? [String: Any])
        #expect(error["kind"] as? String == "usage")
        #expect(error["exitCode"] as? Int == 2)
        #expect((error["message"] as? String)?.contains("--bogus") == true)
        #expect(outcome.standardError.hasPrefix("ping-keyring: error: usage:"))
    }

    @Test func encryptChecksTheInputBeforeTouchingTheKeyring() async throws {
        // No D-Bus here: a refusal must come from the input check, before any key is looked up.
        var read = false
        let outcome = await PingKeyring.run(arguments: ["save", "--account", "A", "--encrypt", "--json"],
                                            environment: [:]) {
            read = true
            return Data("not json".utf8)
        }
        #expect(read, "--encrypt is available: stdin is read")
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("error: invalidInput: stdin is not JSON text"))
        #expect(!outcome.standardError.contains("not json"), "the input is never quoted")
        let json = try parseJSON(String(decoding: outcome.standardOutput, as: UTF8.self))
        #expect((json["error"] as? [String: Any])?["kind"] as? String == "invalidInput")
    }

    @Test func stdinThatCannotBeReadSavesNothingAndSaysWhy() async throws {
        // A value cut short by a read error must never be stored: save fails before the keyring.
        let outcome = await PingKeyring.run(arguments: ["save", "--account", "A", "--json"], environment: [:])
        { () async throws(PingKeyring.InputFailure) -> Data in throw PingKeyring.InputFailure(reason: "Input/output error") }
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains(
            "error: invalidInput: could not read the value from stdin (Input/output error). Nothing was saved."))
        let json = try parseJSON(String(decoding: outcome.standardOutput, as: UTF8.self))
        #expect((json["error"] as? [String: Any])?["kind"] as? String == "invalidInput")
    }

    @Test func helpNoLongerSaysEncryptionIsMissing() {
        for command in CommandTable.commands {
            #expect(!CommandTable.help(for: command).contains("not available in this build"), "\(command.name)")
        }
        #expect(CommandTable.help(for: CommandTable.command(named: "save")!).contains("--encrypt"))
        #expect(CommandTable.help(for: CommandTable.command(named: "get")!).contains("keyNotFound"))
    }

    @Test func saveRefusesInputThatIsNotJSON() async {
        for input in ["", "  \n", "not json", "{\"a\":", "\"unterminated"] {
            let outcome = await run(["save", "--account", "A"], input: Data(input.utf8))
            #expect(outcome.status == 2, "\(input)")
            #expect(outcome.standardError.contains("error: invalidInput:"), "\(input)")
            #expect(outcome.standardError.contains("Nothing was saved"), "\(input)")
        }
        let binary = await run(["save", "--account", "A"], input: Data([0x22, 0, 0x22]))
        #expect(binary.status == 2)
    }
}
