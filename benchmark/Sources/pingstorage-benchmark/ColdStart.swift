import BenchmarkSupport
import Foundation

/// The cold start: whole processes, each started through `spawn-measure` (which reports its
/// wall time and peak RSS; see its header for why a launcher of its own), in rounds that run every
/// command once in a shuffled order, after one untimed warm-up round (page cache). Medians per
/// command; ratios are of medians from the same rounds.
struct ColdStartBenchmark {
    /// One command line to time.
    struct Command: Sendable {
        var id: String
        var label: String
        var arguments: [String]
        /// The exit status it must end with (`secret-tool --help` exits 2).
        var expectedStatus: Int32 = 0
        /// Its stderr goes to /dev/null (`secret-tool --help` prints its usage there).
        var quiet = false
    }

    /// What one command measured.
    struct Result: Codable, Sendable {
        var id: String
        var label: String
        var command: String
        var runs: Int
        var medianMilliseconds: Double?
        var p95Milliseconds: Double?
        /// The median of the runs' ru_maxrss.
        var medianMaxRssKib: Double?
        var largestMaxRssKib: Int?
    }

    let launcher: String
    let commands: [Command]
    let rounds: Int

    func run(worker: BlockingThread, seed: UInt64, progress: (String) -> Void) async throws -> [Result] {
        var random = SplitMix64(seed: seed)
        var wall: [String: Samples] = [:]
        var rss: [String: [Int]] = [:]
        for round in 0...rounds {
            if round == 0 { progress("cold start: warm-up round") }
            if round > 0, round % 10 == 0 || round == rounds { progress("cold start: round \(round)/\(rounds)") }
            for command in commands.shuffled(using: &random) {
                let (elapsed, maxRSS) = try await measure(command, worker: worker)
                guard round > 0 else { continue }
                wall[command.id, default: Samples()].append(seconds: elapsed)
                rss[command.id, default: []].append(maxRSS)
            }
        }
        return commands.map { command in
            let times = wall[command.id] ?? Samples()
            var peaks = Samples()
            (rss[command.id] ?? []).forEach { peaks.append(seconds: Double($0)) }
            return Result(id: command.id, label: command.label, command: command.arguments.joined(separator: " "),
                          runs: times.count, medianMilliseconds: times.median.map { $0 * 1e3 },
                          p95Milliseconds: times.p95.map { $0 * 1e3 }, medianMaxRssKib: peaks.median,
                          largestMaxRssKib: rss[command.id]?.max())
        }
    }

    /// One run: (wall seconds, ru_maxrss KiB).
    private func measure(_ command: Command, worker: BlockingThread) async throws -> (Double, Int) {
        let arguments = [launcher] + (command.quiet ? ["--quiet"] : []) + command.arguments
        let line = try await worker.run { () throws -> String? in
            let process = try ChildProcess.start(arguments)
            let line = process.readLine()
            _ = process.finish()
            return line
        }
        let fields = (line ?? "").split(separator: " ").compactMap { Int64($0) }
        guard fields.count == 3 else {
            throw BenchmarkError("spawn-measure \(command.arguments.joined(separator: " ")): no measurement (\(line ?? "no output"))")
        }
        guard fields[0] == command.expectedStatus else {
            throw BenchmarkError("\(command.arguments.joined(separator: " ")) exited with status \(fields[0]), "
                                 + "not \(command.expectedStatus)")
        }
        return (Double(fields[1]) * 1e-9, Int(fields[2]))
    }

    /// The commands: the spawn floor, the Swift floor, `secret-tool lookup` and `--help`, each build of
    /// coldstart-get, and `get --account` and `--help` of each ping-keyring build, all on the item of
    /// `account`; and each build of coldstart-app (the app built as usual) with its floor. The first
    /// build of each program has the plain ids (`coldstart-get`, `coldstart-app`, `ping-keyring.get`);
    /// the others `.1`, `.2`… after the program's name, and their label in the row.
    static func commands(account: String, secretTool: String, coldStartGets: [(label: String, path: String)],
                         swiftHello: String, coldStartApps: [(label: String, path: String)],
                         pingKeyring: [(label: String, path: String)]) -> [Command] {
        var commands = [
            Command(id: "floor.true", label: "/bin/true (the launcher's floor)", arguments: ["/bin/true"]),
            Command(id: "floor.swift-hello", label: "swift-hello (a Swift program printing one line)",
                    arguments: [swiftHello]),
            Command(id: "secret-tool.lookup", label: "secret-tool lookup",
                    arguments: [secretTool, "lookup", "service", Bench.service, "account", account]),
            Command(id: "secret-tool.help", label: "secret-tool --help", arguments: [secretTool, "--help"],
                    expectedStatus: 2, quiet: true),
        ]
        for (index, build) in coldStartGets.enumerated() {
            commands.append(index == 0
                ? Command(id: "coldstart-get", label: "coldstart-get (KeychainStorage<Token>.get)", arguments: [build.path, account])
                : Command(id: "coldstart-get.\(index)", label: "coldstart-get (\(build.label))", arguments: [build.path, account]))
        }
        for (index, build) in coldStartApps.enumerated() {
            if index == 0 {
                commands.append(Command(id: "coldstart-app", label: "coldstart-app (Foundation, dynamic): get",
                                        arguments: [build.path, account]))
                commands.append(Command(id: "coldstart-app.floor", label: "coldstart-app --floor (exits at main)",
                                        arguments: [build.path, "--floor"]))
                commands.append(Command(id: "coldstart-app.floor-await", label: "coldstart-app --floor-await (one await)",
                                        arguments: [build.path, "--floor-await"]))
            } else {
                // Another build, compared with the first: its read and its own floor.
                commands.append(Command(id: "coldstart-app.\(index)", label: "coldstart-app (\(build.label)): get",
                                        arguments: [build.path, account]))
                commands.append(Command(id: "coldstart-app.\(index).floor", label: "coldstart-app --floor (\(build.label))",
                                        arguments: [build.path, "--floor"]))
            }
        }
        for (index, build) in pingKeyring.enumerated() {
            let suffix = index == 0 ? "" : ".\(index)"
            commands.append(Command(id: "ping-keyring.get\(suffix)", label: "ping-keyring get --account (\(build.label))",
                                    arguments: [build.path, "get", "--account", account, "--service", Bench.service, "--app", Bench.app]))
            commands.append(Command(id: "ping-keyring.help\(suffix)", label: "ping-keyring --help (\(build.label))",
                                    arguments: [build.path, "--help"]))
        }
        return commands
    }
}
