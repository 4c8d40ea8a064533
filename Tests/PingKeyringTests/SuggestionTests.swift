import Testing
@testable import PingKeyringCore

/// The message of the usage error `arguments` produce; nil when they parse.
private func usageMessage(_ arguments: [String]) -> String? {
    do {
        _ = try ArgumentParser.parse(arguments)
        return nil
    } catch {
        return error.message
    }
}

@Suite("did you mean: the closest command or option")
struct SuggestionTests {
    @Test func editDistance() {
        #expect(Suggestion.distance("list", "list") == 0)
        #expect(Suggestion.distance("lst", "list") == 1, "a deletion")
        #expect(Suggestion.distance("lisst", "list") == 1, "an insertion")
        #expect(Suggestion.distance("lost", "list") == 1, "a substitution")
        #expect(Suggestion.distance("lsit", "list") == 1, "a swap of neighbours is one edit")
        #expect(Suggestion.distance("", "get") == 3)
        #expect(Suggestion.distance("doctor", "delete") == 5)
    }

    @Test func closeEnoughToBeATypo() {
        let commands = CommandTable.commands.map(\.name)
        #expect(Suggestion.closest(to: "lst", among: commands) == "list")
        #expect(Suggestion.closest(to: "dcotor", among: commands) == "doctor")
        #expect(Suggestion.closest(to: "SAVE", among: commands) == "save", "case is ignored")
        #expect(Suggestion.closest(to: "deleet", among: commands) == "delete")
        #expect(Suggestion.closest(to: "frobnicate", among: commands) == nil)
        #expect(Suggestion.closest(to: "x", among: commands) == nil)
        #expect(Suggestion.closest(to: "gte", among: ["get", "set"]) == "get", "ties go to the first")
    }

    @Test func unknownCommand() {
        #expect(usageMessage(["lst"]) == "unknown command 'lst'; did you mean 'list'? (see 'ping-keyring --help')")
        #expect(usageMessage(["--json", "dcotor"])?.hasPrefix("unknown command 'dcotor'; did you mean 'doctor'?") == true)
        #expect(usageMessage(["hlep"])?.hasPrefix("unknown command 'hlep'; did you mean 'help'?") == true)
        #expect(usageMessage(["frobnicate"])?.hasPrefix(
            "unknown command 'frobnicate'; the commands are list, get, save, delete, apps, move, search, lookup, lock, unlock, doctor") == true,
            "nothing close: the list")
    }

    @Test func unknownOption() {
        #expect(usageMessage(["get", "--acount", "A"])?.hasPrefix(
            "unknown option '--acount' for 'get'; did you mean '--account'?") == true)
        #expect(usageMessage(["--jsno", "list"])?.hasPrefix("unknown option '--jsno'; did you mean '--json'?") == true)
        #expect(usageMessage(["list", "--servce", "S"])?.hasPrefix(
            "unknown option '--servce' for 'list'; did you mean '--service'?") == true)
        #expect(usageMessage(["save", "-a", "A", "--encrpyt"])?.contains("did you mean '--encrypt'?") == true)
        #expect(usageMessage(["doctor", "--colection", "x"])?.contains("did you mean '--collection'?") == true,
                "global options too")
        #expect(usageMessage(["list", "--raw"]) == "unknown option '--raw' for 'list' (see 'ping-keyring list --help')",
                "an option of another command: no guess")
        #expect(usageMessage(["get", "--bogus"])?.contains("did you mean") == false)
    }
}
