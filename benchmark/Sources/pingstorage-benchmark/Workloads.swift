import BenchmarkSupport
import Foundation
import PingStorage
import SecretService

extension PingStorageBenchmark {
    /// Issue 15's sections, after issue 5's: main actor, cold start, memory of many accounts, many
    /// accounts saved at once, and scale, which runs last because it replaces the login collection.
    /// A section whose tools are missing is reported as not measured; a section that fails to run
    /// fails the benchmark.
    static func runIssue15(_ options: Options, worker: BlockingThread, client: SecretServiceClient,
                           progress: (String) -> Void) async throws -> Issue15Results {
        var results = Issue15Results()
        // The helper executables are built next to this one (benchmark/run builds the whole package).
        let tools = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        func tool(_ name: String) throws -> String {
            let path = tools.appendingPathComponent(name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw BenchmarkError("\(path) is missing: build the whole benchmark package (benchmark/run does)")
            }
            return path
        }

        progress("main actor: \(options.rounds) rounds")
        results.mainActor = try await MainActorBenchmark.run(
            rounds: options.rounds, reads: options.sizes.reads, cachedIterations: options.sizes.cachedIterations,
            seed: options.seed &+ 15)

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
        if options.coldStartApp == nil {
            results.unavailable.append(.init(contender: "coldstart-app cold start",
                                             reason: "no build given (benchmark/run passes --coldstart-app PATH)"))
        }
        if let launcher = options.spawnMeasure {
            let commands = ColdStartBenchmark.commands(account: account, secretTool: secretTool,
                                                       coldStartGet: try tool("coldstart-get"), swiftHello: try tool("swift-hello"),
                                                       coldStartApp: options.coldStartApp, pingKeyring: options.pingKeyring)
            results.coldStartRounds = options.coldStartRounds
            results.coldStart = try await ColdStartBenchmark(launcher: launcher, commands: commands,
                                                             rounds: options.coldStartRounds)
                .run(worker: worker, seed: options.seed &+ 16, progress: progress)
        } else {
            results.unavailable.append(.init(contender: "cold start",
                                             reason: "no launcher given (benchmark/run passes --spawn-measure PATH)"))
        }

        progress("memory of \(options.memoryAccounts) accounts")
        results.accountsMemory = try await AccountsMemoryBenchmark(
            executable: try tool("accounts-rss"), accounts: options.memoryAccounts, runs: options.memoryAccountRuns
        ).run(worker: worker, progress: progress)

        progress("\(options.concurrentAccounts) accounts saved at once: storing their first values")
        results.concurrentSaves = try await ConcurrentSavesBenchmark(
            accounts: options.concurrentAccounts, rounds: options.concurrentRounds, worker: worker
        ).run(seed: options.seed &+ 17, progress: progress)

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

    /// The first executable `name` in PATH (the cold-start rows time the process, not a PATH search).
    static func executableInPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
