import PingStorage
import Foundation
import Testing
@testable import PingKeyringCore

/// What a tool printed and how it exited.
struct ToolRun: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `executable` (a path, or a name looked up in /usr/bin and /bin) with `stdin`, waiting for
/// it on a thread of its own: a test waiting on one of Swift's cooperative threads (as many as
/// cores) stalls every other test of the process.
func runTool(_ executable: String, _ arguments: [String], stdin: String = "") async throws -> ToolRun {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try runToolBlocking(executable, arguments, stdin: stdin) })
        }
    }
}

private func runToolBlocking(_ executable: String, _ arguments: [String], stdin: String) throws -> ToolRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : which(executable)!)
    process.arguments = arguments
    let input = Pipe(), output = Pipe(), error = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = error
    try process.run()
    input.fileHandleForWriting.write(Data(stdin.utf8))
    try input.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolRun(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
                   stderr: String(decoding: err, as: UTF8.self))
}

/// The path of a tool in /usr/bin or /bin; nil when it is not installed.
func which(_ name: String) -> String? {
    ["/usr/bin/", "/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// The committed copies under docs/, each with what generates it.
private let committed: [(path: String, command: String, generated: String)] = [
    ("docs/completions/ping-keyring.bash", "completion bash", BashCompletion.script),
    ("docs/completions/_ping-keyring", "completion zsh", ZshCompletion.script),
    ("docs/ping-keyring.1", "man", ManPage.page),
]

@Suite("Completions and the man page: generated from the table, committed up to date")
struct GeneratedFilesTests {
    @Test(arguments: committed.map(\.path))
    func theCommittedCopyIsWhatTheTableGenerates(path: String) throws {
        let entry = try #require(committed.first { $0.path == path })
        let file = try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
        #expect(file == entry.generated, """
            \(path) differs from what the command table generates; regenerate it with
            swift run ping-keyring \(entry.command) > \(path)
            """)
    }

    @Test func theHiddenCommandsPrintThem() async {
        for entry in committed {
            let outcome = await PingKeyring.run(arguments: entry.command.split(separator: " ").map(String.init),
                                                environment: [:]) { Data() }
            #expect(outcome.status == 0)
            #expect(String(decoding: outcome.standardOutput, as: UTF8.self) == entry.generated, "\(entry.command)")
        }
    }

    @Test func theyFollowTheTable() {
        let bash = BashCompletion.script, zsh = ZshCompletion.script, man = ManPage.page
        for command in CommandTable.visibleCommands {
            #expect(bash.contains(" \(command.name) ") || bash.contains("'\(command.name) "), "bash: \(command.name)")
            #expect(zsh.contains("'\(command.name):\(command.summary)'"), "zsh: \(command.name)")
            #expect(man.contains(".SS \(ManPage.roff(command.name))\n"), "man: \(command.name)")
        }
        for option in CommandTable.allOptions {
            #expect(bash.contains("--\(option.name)"), "bash: --\(option.name)")
            #expect(zsh.contains("--\(option.name)"), "zsh: --\(option.name)")
            #expect(man.contains("\\fB\\-\\-\(ManPage.roff(option.name))\\fR"), "man: --\(option.name)")
            if let short = option.short {
                #expect(bash.contains(" -\(short) ") || bash.contains("'-\(short) "), "bash: -\(short)")
                #expect(zsh.contains("{-\(short),"), "zsh: -\(short)")
                #expect(man.contains("\\fB\\-\(short)\\fR, "), "man: -\(short)")
            }
        }
        for hidden in CommandTable.commands where hidden.isHidden {
            #expect(!CommandTable.overview.contains("  \(hidden.name) "), "--help does not list \(hidden.name)")
            #expect(!zsh.contains("'\(hidden.name):"), "zsh does not offer \(hidden.name)")
            #expect(!man.contains(".SS \(hidden.name)\n"))
        }
        for (status, _) in CommandTable.exitStatuses { #expect(man.contains(".TP\n.B \(status.rawValue)\n")) }
        #expect(man.contains("\"ping\\-keyring \(PingStorageVersion.current)\""), "the version in .TH")
    }

    @Test func theReferenceCoversTheTable() throws {
        // docs/ping-keyring.md is written by hand: at least every command and option is in it.
        let reference = try String(contentsOf: packageRoot.appendingPathComponent("docs/ping-keyring.md"), encoding: .utf8)
        for command in CommandTable.commands { #expect(reference.contains("`\(command.name)"), "\(command.name)") }
        for option in CommandTable.allOptions {
            let forms = (option.short.map { "`-\($0)`, " } ?? "") + "`--\(option.name)"
            #expect(reference.contains(forms), "the options table has \(forms)")
        }
        for (status, _) in CommandTable.exitStatuses { #expect(reference.contains("| \(status.rawValue) | ")) }
    }

    @Test func roffEscapes() {
        #expect(ManPage.roff("--raw") == "\\-\\-raw")
        #expect(ManPage.roff("a\\b") == "a\\eb")
        #expect(ManPage.roff("the `service` attribute") == "the \\fBservice\\fR attribute")
        #expect(ManPage.roff("…é") == "\\[u2026]\\[u00E9]")
        #expect(ManPage.roff(".dot") == "\\&.dot")
        #expect(ManPage.roff("'quote") == "\\&'quote")
    }

    @Test(.enabled(if: which("groff") != nil, "groff is not installed (apt-get install groff)"))
    func theManPageRendersWithoutWarnings() async throws {
        let run = try await runTool("groff", ["-ww", "-z", "-man", "-Tutf8"], stdin: ManPage.page)
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty, "groff warnings: \(run.stderr)")
        let text = try await runTool("groff", ["-man", "-Tascii", "-P-c", "-P-b", "-P-u"], stdin: ManPage.page).stdout
        #expect(text.contains("ping-keyring get --account ACCOUNT [--service SERVICE] [--text] [--raw]"))
        #expect(text.contains("ping-keyring search ATTRIBUTE VALUE [ATTRIBUTE VALUE...]"))
        #expect(text.contains("-a, --account ACCOUNT"))
    }

    @Test(.enabled(if: which("zsh") != nil, "zsh is not installed (apt-get install zsh)"))
    func theZshCompletionParses() async throws {
        let run = try await runTool("zsh", ["-n"], stdin: ZshCompletion.script)
        #expect(run.status == 0, "zsh -n: \(run.stderr)")
        #expect(ZshCompletion.script.hasPrefix("#compdef ping-keyring\n"))
    }

    @Test func zshQuoting() {
        #expect(ZshCompletion.quoted("it's") == #"'it'\''s'"#)
        #expect(ZshCompletion.brief("a [b] `c`; more") == #"a \[b\] c"#)
    }
}
