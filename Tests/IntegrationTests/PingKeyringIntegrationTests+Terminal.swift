import Foundation
import PingStorage
import Testing

// `save` at a terminal (issue 38): the value is typed without being shown, as secret-tool's and
// Python keyring's prompts take it, on a real pseudo-terminal; the terminal gets its echo back,
// also when the prompt is interrupted. The value is read back with secret-tool.
extension Integration.PingKeyring {
    /// What `save` shows before it waits for a typed value.
    static let valuePrompt = "ping-keyring: the value to save (typing is not shown; Enter ends it): "

    @Test func saveAtATerminalReadsTheValueWithoutShowingIt() async throws {
        let account = uniqueAccount(), service = "org.example.tty-\(UUID().uuidString.prefix(8))"
        defer { try? SecretTool.clear(["service": service]) }
        let program = Harness.binaryDirectory.appendingPathComponent("ping-keyring").path
        let (status, shown, echoedWhileWaiting, echoesAfter) = try await offThePool {
            let terminal = try PseudoTerminal()
            let pid = try terminal.spawn(program, ["save", "--text", "-s", service, "-a", account] + asTestApp)
            try terminal.waitUntilShown(Self.valuePrompt, timeout: 30)
            let echoedWhileWaiting = terminal.echoes
            terminal.type("typed-secret-\(account)\n")
            let status = try terminal.waitForExit(pid, timeout: 30)
            return (status, String(decoding: terminal.shown, as: UTF8.self), echoedWhileWaiting, terminal.echoes)
        }
        #expect(status == 0, "\(shown)")
        #expect(!echoedWhileWaiting, "echo is off while the value is typed")
        #expect(!shown.contains("typed-secret"), "the value never showed on the terminal: \(shown)")
        #expect(shown.contains("Saved \("typed-secret-\(account)".utf8.count) bytes"), "\(shown)")
        #expect(echoesAfter, "the terminal echoes again")
        #expect(try SecretTool.lookup(["service": service, "account": account]) == Data("typed-secret-\(account)".utf8))
    }

    @Test func aSaveInterruptedAtItsPromptGivesTheTerminalItsEchoBack() async throws {
        let account = uniqueAccount(), service = "org.example.tty-\(UUID().uuidString.prefix(8))"
        defer { try? SecretTool.clear(["service": service]) }
        let program = Harness.binaryDirectory.appendingPathComponent("ping-keyring").path
        for signal in [SIGINT, SIGTERM] {
            let (status, echoedWhileWaiting, echoesAfter) = try await offThePool {
                let terminal = try PseudoTerminal()
                let pid = try terminal.spawn(program, ["save", "--text", "-s", service, "-a", account] + asTestApp)
                try terminal.waitUntilShown(Self.valuePrompt, timeout: 30)
                let echoedWhileWaiting = terminal.echoes
                kill(pid, signal)
                let status = try terminal.waitForExit(pid, timeout: 30)
                return (status, echoedWhileWaiting, terminal.echoes)
            }
            #expect(status == 128 + signal, "ended by the signal, as without the prompt")
            #expect(!echoedWhileWaiting)
            #expect(echoesAfter, "signal \(signal): the terminal echoes again")
        }
        #expect(try SecretTool.lookup(["service": service, "account": account]) == nil, "nothing was saved")
    }
}
