import BenchmarkSupport
import Foundation
import PingStorage
import SecretService

extension PingStorageBenchmark {
    /// The workloads, after the table, concurrency and memory: main actor, cold start, memory of many
    /// accounts, many accounts saved at once, and scale, which runs last because it replaces the
    /// login collection. A section whose tools are missing is reported as not measured; a section
    /// that fails to run fails the benchmark. Sections left out by `--sections` are skipped.
    static func runWorkloads(_ options: Options, worker: BlockingThread, client: SecretServiceClient,
                             progress: (String) -> Void) async throws -> WorkloadResults {
        var results = WorkloadResults()
        // The helper executables are built next to this one (benchmark/run builds the whole package).
        let tools = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        func tool(_ name: String) throws -> String {
            let path = tools.appendingPathComponent(name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw BenchmarkError("\(path) is missing: build the whole benchmark package (benchmark/run does)")
            }
            return path
        }

        if options.runs(.mainActor) {
            progress("main actor: \(options.rounds) rounds")
            results.mainActor = try await MainActorBenchmark.run(
                rounds: options.rounds, reads: options.sizes.reads, cachedIterations: options.sizes.cachedIterations,
                seed: options.seed &+ 15)
        }
        if options.runs(.coldStart) {
            try await runColdStart(options, worker: worker, tool: tool, into: &results, progress: progress)
        }

        if options.runs(.accounts) {
            progress("memory of \(options.memoryAccounts) accounts")
            results.accountsMemory = try await AccountsMemoryBenchmark(
                executable: try tool("accounts-rss"), accounts: options.memoryAccounts, runs: options.memoryAccountRuns
            ).run(worker: worker, progress: progress)
        }

        if options.runs(.concurrentSaves) {
            progress("\(options.concurrentAccounts) accounts saved at once: storing their first values")
            results.concurrentSaves = try await ConcurrentSavesBenchmark(
                accounts: options.concurrentAccounts, rounds: options.concurrentRounds, worker: worker
            ).run(seed: options.seed &+ 17, progress: progress)
        }

        guard options.runs(.scale) else { return results }
        let fixture: KeyringFixture
        do {
            fixture = try KeyringFixture.locate()
        } catch {
            results.unavailable.append(.init(contender: "scale", reason: "\(error)"))
            progress("scale not measured: \(error)")
            return results
        }
        results.scale = try await ScaleBenchmark(
            sizes: options.scaleSizes, rounds: options.scaleRounds, trialItems: options.populationTrialItems,
            fixture: fixture, worker: worker, client: client
        ).run(seed: options.seed &+ 18, progress: progress)
        return results
    }

    /// The cold start: whole processes reading one item, with the builds given on the command line.
    private static func runColdStart(_ options: Options, worker: BlockingThread, tool: (String) throws -> String,
                                     into results: inout WorkloadResults, progress: (String) -> Void) async throws {
        let account = "cold-0"
        try await KeychainStorage<Token>(account: account, configuration: Bench.configuration)
            .save(item: Token.make(account: account))
        if options.pingKeyring.isEmpty {
            results.unavailable.append(.init(contender: "ping-keyring cold start",
                                             reason: "no build given (benchmark/run passes --ping-keyring LABEL=PATH)"))
        }
        results.pingKeyringBuilds = options.pingKeyring.map { build in
            let bytes = (try? FileManager.default.attributesOfItem(atPath: build.path)[.size] as? Int) ?? 0
            return .init(label: build.label, path: build.path, bytes: bytes)
        }
        guard let secretTool = executableInPath("secret-tool") else { throw BenchmarkError("secret-tool is not in PATH") }
        if options.coldStartApps.isEmpty {
            results.unavailable.append(.init(contender: "coldstart-app cold start",
                                             reason: "no build given (benchmark/run passes --coldstart-app PATH)"))
        }
        func compared(_ program: String, _ builds: ArraySlice<(label: String, path: String)>) -> [WorkloadResults.ComparedBuild] {
            builds.enumerated().map { offset, build in
                let bytes = (try? FileManager.default.attributesOfItem(atPath: build.path)[.size] as? Int) ?? 0
                return .init(program: program, id: "\(program).\(offset + 1)", label: build.label, path: build.path, bytes: bytes)
            }
        }
        results.comparedBuilds = compared("coldstart-get", options.coldStartGets[...])
            + compared("coldstart-app", options.coldStartApps.dropFirst())
        if let launcher = options.spawnMeasure {
            let commands = ColdStartBenchmark.commands(account: account, secretTool: secretTool,
                                                       coldStartGets: [("", try tool("coldstart-get"))] + options.coldStartGets,
                                                       swiftHello: try tool("swift-hello"),
                                                       coldStartApps: options.coldStartApps, pingKeyring: options.pingKeyring)
            results.coldStartRounds = options.coldStartRounds
            results.coldStart = try await ColdStartBenchmark(launcher: launcher, commands: commands,
                                                             rounds: options.coldStartRounds)
                .run(worker: worker, seed: options.seed &+ 16, progress: progress)
        } else {
            results.unavailable.append(.init(contender: "cold start",
                                             reason: "no launcher given (benchmark/run passes --spawn-measure PATH)"))
        }
    }

    /// The first executable `name` in PATH (the cold-start rows time the process, not a PATH search).
    static func executableInPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
