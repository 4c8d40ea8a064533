import Testing
@testable import PingKeyringCore

/// What the bash completion offers for a command line whose last word is being completed:
/// sources the script, sets COMP_WORDS and COMP_CWORD as bash does (`--opt=value` is three
/// words) and prints COMPREPLY.
private func completions(_ words: String...) async throws -> [String] {
    func quoted(_ word: String) -> String { "'" + word + "'" }
    let script = BashCompletion.script + """
        COMP_WORDS=(\(words.map(quoted).joined(separator: " ")))
        COMP_CWORD=\(words.count - 1)
        COMPREPLY=()
        _ping_keyring
        printf '%s\\n' "${COMPREPLY[@]}"
        """
    let run = try await runTool("bash", ["--norc", "--noprofile", "-s"], stdin: script)
    #expect(run.status == 0 && run.stderr.isEmpty, "bash: \(run.stderr)")
    return run.stdout.split(separator: "\n").map(String.init)
}

@Suite("bash completion", .enabled(if: which("bash") != nil, "bash is not installed"))
struct BashCompletionTests {
    @Test func registersForTheProgram() async throws {
        let run = try await runTool("bash", ["--norc", "--noprofile", "-s"],
                              stdin: BashCompletion.script + "complete -p ping-keyring\n")
        #expect(run.stdout == "complete -F _ping_keyring ping-keyring\n", "\(run.stderr)")
    }

    @Test func commands() async throws {
        #expect(try await completions("ping-keyring", "") == ["list", "get", "save", "delete", "apps", "move", "search", "lookup", "lock", "unlock",
                                                                "doctor", "help"])
        #expect(try await completions("ping-keyring", "d") == ["delete", "doctor"])
        #expect(try await completions("ping-keyring", "-c", "session", "--json", "g") == ["get"],
                "after global options and their values")
        #expect(try await completions("ping-keyring", "--collection", "=", "session", "li") == ["list"])
        #expect(try await completions("ping-keyring", "help", "s") == ["save", "search"])
        #expect(try await completions("ping-keyring", "search", "service", "S", "").isEmpty, "attribute pairs: any words")
        #expect(try await completions("ping-keyring", "c").isEmpty, "hidden commands are not offered")
    }

    @Test func optionsOfTheCommandAndGlobalOnes() async throws {
        #expect(try await completions("ping-keyring", "get", "--") == [
            "--collection", "--backend", "--app", "--timeout", "--prompt-timeout", "--no-prompt", "--json", "--verbose", "--help",
            "--version", "--account",
            "--service", "--text", "--raw",
        ])
        #expect(try await completions("ping-keyring", "save", "-a", "A", "--e") == ["--encrypt"])
        #expect(try await completions("ping-keyring", "list", "--r").isEmpty, "--raw is get's")
        #expect(try await completions("ping-keyring", "-").contains("-V"))
    }

    @Test func values() async throws {
        #expect(try await completions("ping-keyring", "--collection", "") == ["default", "session"])
        #expect(try await completions("ping-keyring", "list", "-c", "s") == ["session"])
        #expect(try await completions("ping-keyring", "--collection", "=") == ["default", "session"], "--collection=")
        #expect(try await completions("ping-keyring", "--collection", "=", "d") == ["default"], "--collection=d")
        #expect(try await completions("ping-keyring", "get", "--account", "").isEmpty, "accounts are not guessed")
        #expect(try await completions("ping-keyring", "--backend", "") == ["automatic", "secret-service", "file-keyring"])
        #expect(try await completions("ping-keyring", "list", "--backend", "f") == ["file-keyring"])
        #expect(try await completions("ping-keyring", "completion", "") == ["bash", "zsh"])
        #expect(try await completions("ping-keyring", "completion", "zsh", "").isEmpty)
    }
}
