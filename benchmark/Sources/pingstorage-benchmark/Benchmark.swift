import BenchmarkSupport
import Foundation
import PingStorage
import SecretService
#if canImport(Glibc)
import Glibc
#endif

/// `pingstorage-benchmark`: KeychainStorage side by side with raw libsecret, the one-round-trip
/// floor, `secret-tool` and Python `keyring`, in one process, interleaved in rounds, on the same
/// keyring and population; then concurrency scaling and memory growth; then the workloads (main
/// actor, cold start, many accounts, scale; see Workloads.swift). Prints a table and the targets
/// (PASS/FAIL, never an exit status), writes `latest.json`. `--sections` runs some of them only.
///
/// Run it through `benchmark/run` (which runs it inside `dbus-test/run --isolated`): it writes
/// many items and refuses to run outside a throwaway keyring.
@main
struct PingStorageBenchmark {
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
        guard options.allowAnyKeyring || ProcessInfo.processInfo.environment["DBUS_TEST_DIR"] != nil else {
            FileHandle.standardError.write(Data("""
                pingstorage-benchmark writes and deletes hundreds of items and rewrites the keyring thousands of times;
                it runs only inside a throwaway keyring: dbus-test/run --isolated benchmark/run
                (or pass --allow-any-keyring).\n
                """.utf8))
            exit(2)
        }
        do {
            try await run(options)
        } catch {
            FileHandle.standardError.write(Data("pingstorage-benchmark: failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: Options) async throws {
        let clock = ContinuousClock()
        let started = clock.now
        func progress(_ message: String) {
            let elapsed = (clock.now - started).seconds
            FileHandle.standardError.write(Data(String(format: "[%6.1f s] %@\n", elapsed, message).utf8))
        }
        var random = SplitMix64(seed: options.seed)
        let worker = BlockingThread(name: "raw libsecret")
        let client = SecretServiceClient()

        progress("connecting and storing the population")
        let provider = try await client.provider()
        let transport = provider.transportAlgorithm
        let collectionPath = try await client.collectionPath(.default)
        try await storeFillerPopulation()
        let raw = try await RawLibsecretContender(worker: worker, sizes: options.sizes)
        let ours = try await KeychainContender(sizes: options.sizes, client: client) { try await raw.churn() }
        let tool = try await SecretToolContender(worker: worker, sizes: options.sizes)
        var unavailable: [Report.Unavailable] = []
        var python: PythonKeyringContender?
        do {
            python = try await PythonKeyringContender(worker: BlockingThread(name: "python keyring"),
                                                      sizes: options.sizes, python: options.python)
        } catch {
            unavailable.append(.init(contender: "python-keyring", reason: "\(error)"))
            progress("Python keyring not measured: \(error)")
        }
        let scalingStorages = try await KeychainContender.concurrencyStorages(count: 16)
        let itemCount = try await client.searchItems(matching: ["service": Bench.service], in: .default).all.count
        progress("\(itemCount) benchmark items in \(collectionPath)")

        // The population and the contenders are set up whatever --sections says, so that every run
        // measures the same keyring.
        let operations = options.runs(.table)
            ? ours.operations + raw.operations + tool.operations + (python?.operations ?? []) : []
        if options.runs(.table) { progress("warm-up round") }
        for operation in operations { _ = try await operation.batch(0) }
        var samples: [String: Samples] = [:]
        for round in 0..<(options.runs(.table) ? options.rounds : 0) {
            progress("round \(round + 1)/\(options.rounds)")
            for operation in operations.shuffled(using: &random) {
                samples[operation.id, default: Samples()].append(contentsOf: try await operation.batch(round + 1))
            }
        }
        await python?.stop()

        let scaling = options.runs(.concurrency) ? try await ScalingBenchmark(
            storages: scalingStorages, taskCounts: [1, 4, 16], rounds: options.concurrencyRounds,
            getWindow: options.getWindow, saveWindow: options.saveWindow
        ).run(random: &random, progress: progress) : []

        let memory = options.runs(.memory)
            ? try await MemoryBenchmark(operations: options.memoryOperations, tasks: options.memoryTasks)
                .run(progress: progress)
            : nil

        let workloads = options.runsWorkloads
            ? try await runWorkloads(options, worker: worker, client: client, progress: progress) : nil

        let results = Report.operationResults(operations, samples)
        let report = Report(
            date: ISO8601DateFormatter().string(from: Date()),
            machine: .current,
            provider: .init(executable: provider.executable ?? "pid \(provider.processID.map(String.init) ?? "unknown")", transport: transport,
                            collection: "\(collectionPath) (alias default)"),
            settings: .init(rounds: options.rounds, seed: options.seed, readsPerBatch: options.sizes.reads,
                            writesPerBatch: options.sizes.writes, externalPerBatch: options.sizes.external,
                            cachedIterationsPerSample: options.sizes.cachedIterations,
                            cryptoIterationsPerSample: options.sizes.cryptoIterations,
                            benchmarkItems: itemCount, tokenJsonBytes: Token.make(account: "ks-0").json.utf8.count,
                            mode: options.short ? "short" : "full",
                            sections: Options.Section.allCases.filter(options.runs).map(\.rawValue)),
            operations: results, unavailable: unavailable, concurrency: scaling, memory: memory, workloads: workloads,
            targets: Report.targets(results, scaling, memory) + (workloads?.targets ?? [])
                + (workloads?.appColdStartTargets ?? []),
            durationSeconds: (clock.now - started).seconds)

        print(report.text)
        try FileManager.default.createDirectory(atPath: options.output, withIntermediateDirectories: true)
        try report.json().write(to: URL(fileURLWithPath: options.output).appendingPathComponent("latest.json"))
        if let plotData = options.plotData {
            let directory = URL(fileURLWithPath: plotData)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(report.latencyTSV.utf8).write(to: directory.appendingPathComponent("latency.tsv"))
            try Data(report.scalingTSV.utf8).write(to: directory.appendingPathComponent("scaling.tsv"))
            try Data((workloads?.scaleTSV ?? "\n").utf8).write(to: directory.appendingPathComponent("scale.tsv"))
        }
        progress("done")
    }
}

extension Report.Machine {
    /// This machine: `nproc`, the CPU model from /proc/cpuinfo, the kernel, the OS release.
    static var current: Report.Machine {
        func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        func field(_ text: String, _ name: String, separator: Character) -> String? {
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: separator, maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                }
            }
            return nil
        }
        return Report.Machine(
            nproc: ProcessInfo.processInfo.activeProcessorCount,
            cpuModel: field(read("/proc/cpuinfo"), "model name", separator: ":") ?? "unknown",
            kernel: read("/proc/sys/kernel/osrelease").trimmingCharacters(in: .whitespacesAndNewlines),
            os: field(read("/etc/os-release"), "PRETTY_NAME", separator: "=") ?? "unknown")
    }
}
