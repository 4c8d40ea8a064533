import BenchmarkSupport
import Foundation

/// Everything one run measured, as written to `latest.json`. Field names are stable (snake_case
/// in the file); latencies are in microseconds, sizes in bytes.
struct Report: Codable, Sendable {
    /// Bumped when a field changes meaning or disappears (2: `issue15` became `workloads`, and a
    /// target's `issue` number its `group`).
    var schemaVersion = 2
    var date: String
    var machine: Machine
    var provider: Provider
    var settings: Settings
    var operations: [OperationResult]
    /// Contenders that could not run, with the reason (e.g. python3-keyring not installed).
    var unavailable: [Unavailable]
    var concurrency: [ScalingBenchmark.Result]
    var memory: MemoryBenchmark.Result?
    /// The workloads (main actor, cold start, accounts, concurrent saves, scale); nil when not run.
    var workloads: WorkloadResults?
    /// Every target, in its group (`group`).
    var targets: [Target]
    var durationSeconds: Double

    struct Machine: Codable, Sendable {
        var nproc: Int
        var cpuModel: String
        var kernel: String
        var os: String
    }

    struct Provider: Codable, Sendable {
        var executable: String
        var transport: String
        var collection: String
    }

    struct Settings: Codable, Sendable {
        var rounds: Int
        var seed: UInt64
        var readsPerBatch: Int
        var writesPerBatch: Int
        var externalPerBatch: Int
        var cachedIterationsPerSample: Int
        var cryptoIterationsPerSample: Int
        var benchmarkItems: Int
        var tokenJsonBytes: Int
        /// `full`, or `short` (benchmark/run --short: every section with tiny sizes, for CI).
        var mode = "full"
        /// The sections that ran (`--sections`; all of them unless told).
        var sections: [String]
    }

    struct OperationResult: Codable, Sendable {
        var id: String
        var label: String
        var contender: String
        var kind: OperationKind
        var ours: Bool
        var samples: Int
        var medianMicroseconds: Double?
        var p95Microseconds: Double?
        var meanMicroseconds: Double?
        /// Median over the median of the raw libsecret call of the same kind.
        var ratioToLibsecret: Double?
        /// The raw libsecret operation `ratio_to_libsecret` compares with.
        var libsecretReference: String?
        /// Median over the floor's median (one GetSecret round trip).
        var ratioToFloor: Double?
    }

    struct Unavailable: Codable, Sendable {
        var contender: String
        var reason: String
    }

    struct Target: Codable, Sendable {
        var id: String
        var description: String
        var measured: Double?
        var limit: Double
        /// `at_most` or `at_least`.
        var comparison: String
        var unit: String
        /// nil when it could not be measured.
        var pass: Bool?
        /// The set the target belongs to; the report prints each set under its own heading.
        var group = Group.operations

        /// The sets of targets.
        enum Group: String, Codable, Sendable {
            /// The table, concurrency and memory: KeychainStorage against raw libsecret and the floor.
            case operations
            /// The workloads: main actor, cold start, many accounts, scale.
            case workloads
            /// coldstart-app's read share: the read built as an app usually is.
            case appColdStart = "app_cold_start"
        }
    }
}

extension Report {
    /// Builds the per-operation results, with ratios, from the samples of the rounds.
    static func operationResults(_ operations: [Operation], _ samples: [String: Samples]) -> [OperationResult] {
        func median(_ id: String) -> Double? { samples[id]?.median }
        let floor = median("floor.load-secret")
        let references: [OperationKind: String] = [
            .read: "libsecret.lookup", .write: "libsecret.store", .delete: "libsecret.clear",
        ]
        return operations.map { operation in
            let values = samples[operation.id] ?? Samples()
            let reference = references[operation.kind]
            let own = values.median
            func ratio(_ base: Double?) -> Double? {
                guard let own, let base, base > 0 else { return nil }
                return own / base
            }
            return OperationResult(
                id: operation.id, label: operation.label, contender: operation.contender, kind: operation.kind,
                ours: operation.isOurs, samples: values.count, medianMicroseconds: own.map { $0 * 1e6 },
                p95Microseconds: values.p95.map { $0 * 1e6 }, meanMicroseconds: values.mean.map { $0 * 1e6 },
                ratioToLibsecret: reference.flatMap { ratio(median($0)) }, libsecretReference: reference,
                ratioToFloor: operation.kind == .compute ? nil : ratio(floor))
        }
    }

    /// The targets of the table, concurrency and memory (group `operations`), evaluated on this run.
    static func targets(_ results: [OperationResult], _ scaling: [ScalingBenchmark.Result],
                        _ memory: MemoryBenchmark.Result?) -> [Target] {
        func result(_ id: String) -> OperationResult? { results.first { $0.id == id } }
        func opsPerSecond(_ operation: String, _ tasks: Int) -> Double? {
            scaling.first { $0.operation == operation && $0.tasks == tasks }?.opsPerSecond
        }
        func target(_ id: String, _ description: String, _ measured: Double?, _ comparison: String,
                    _ limit: Double, _ unit: String) -> Target {
            let pass = measured.map { comparison == "at_most" ? $0 <= limit : $0 >= limit }
            return Target(id: id, description: description, measured: measured, limit: limit,
                          comparison: comparison, unit: unit, pass: pass)
        }
        let get = result("keychain.get")
        let speedup: Double? = {
            guard let one = opsPerSecond("get", 1), let sixteen = opsPerSecond("get", 16), one > 0 else { return nil }
            return sixteen / one
        }()
        return [
            target("get_vs_libsecret_lookup", "uncached get ≤ 0.6× raw libsecret lookup",
                   get?.ratioToLibsecret, "at_most", 0.6, "ratio"),
            target("get_vs_floor", "uncached get ≤ 1.2× the floor (one GetSecret)",
                   get?.ratioToFloor, "at_most", 1.2, "ratio"),
            target("save_vs_libsecret_store", "save ≤ 1.0× raw libsecret store",
                   result("keychain.save")?.ratioToLibsecret, "at_most", 1.0, "ratio"),
            target("delete_vs_libsecret_clear", "delete ≤ 1.0× raw libsecret clear",
                   result("keychain.delete")?.ratioToLibsecret, "at_most", 1.0, "ratio"),
            target("cached_get_median", "cached get ≤ 2 µs median",
                   result("keychain.get.cached")?.medianMicroseconds, "at_most", 2.0, "µs"),
            target("concurrency_get_16_vs_1", "16 tasks ≥ 1.5× the ops/s of 1 task (get)",
                   speedup, "at_least", 1.5, "ratio"),
            target("rss_growth", "RSS growth from 1,000 to 100,000 operations ≤ 1 MiB",
                   memory.map { Double($0.growthBytes) / 1_048_576 }, "at_most", 1.0, "MiB"),
        ]
    }

    /// The human-readable report (what `latest.txt` holds).
    var text: String {
        var lines: [String] = []
        lines.append("PingStorage benchmark, \(date)")
        lines.append("machine: \(machine.nproc) CPUs (nproc), \(machine.cpuModel), Linux \(machine.kernel), \(machine.os)")
        lines.append("provider: \(provider.executable), collection \(provider.collection), transport \(provider.transport)")
        lines.append("population: \(settings.benchmarkItems) items (service \(Bench.service)) with tokens of "
                     + "\(settings.tokenJsonBytes) bytes of JSON in that collection")
        lines.append("\(settings.rounds) rounds, every operation once per round in a shuffled order (seed \(settings.seed)); "
                     + "a batch is \(settings.readsPerBatch) reads, \(settings.writesPerBatch) writes or "
                     + "\(settings.externalPerBatch) external calls")
        if settings.mode == "short" {
            lines.append("mode: short (benchmark/run --short): every section with tiny sizes, to check that it runs; "
                         + "not figures to judge by")
        }
        // --sections: the sections that did not run, and the targets they would have measured, are left out.
        let someSections = settings.sections.count < PingStorageBenchmark.Options.Section.allCases.count
        let shownTargets = someSections ? targets.filter { $0.measured != nil } : targets
        if someSections {
            lines.append("sections: \(settings.sections.joined(separator: ", ")) (--sections: the others did not run)")
        }
        if let sizes = workloads?.scale?.sizes, !sizes.isEmpty {
            let fastest = workloads?.scale?.trial?.approaches.filter { $0.id != "raw.64.session" }.map(\.projectedMinutes).min()
            lines.append("scale: the login collection holding \(sizes.map { grouped($0.items) }.joined(separator: ", ")) items, "
                         + "written as gnome-keyring's keyring file (daemon restarted)")
            if let fastest, let largest = sizes.map(\.items).max() {
                lines.append("  instead of stored one by one: ≈ \(formatMinutes(fastest)) for \(grouped(largest)), each write "
                             + "costing in proportion to the items present (see the trial)")
            }
        }
        if !operations.isEmpty || !someSections {
            lines += operationsTable
        }
        for missing in unavailable {
            lines.append("not measured: \(missing.contender): \(missing.reason)")
        }

        if !concurrency.isEmpty {
            lines.append("")
            lines.append("Concurrency: KeychainStorage, each task on its own account (median over rounds)")
            lines.append(column("tasks", 7) + column("get ops/s", 12, right: true) + column("× 1 task", 10, right: true)
                         + column("save ops/s", 12, right: true) + column("× 1 task", 10, right: true))
            let taskCounts = Array(Set(concurrency.map(\.tasks))).sorted()
            func value(_ operation: String, _ tasks: Int) -> Double? {
                concurrency.first { $0.operation == operation && $0.tasks == tasks }?.opsPerSecond
            }
            for tasks in taskCounts {
                var line = column(String(tasks), 7)
                for operation in ["get", "save"] {
                    let ops = value(operation, tasks)
                    let base = value(operation, taskCounts[0])
                    line += column(ops.map { String(format: "%.0f", $0) } ?? "—", 12, right: true)
                    line += column(formatRatio(ops.flatMap { ops in base.map { ops / $0 } }), 10, right: true)
                }
                lines.append(line)
            }
        }

        if let memory {
            lines.append("")
            lines.append("Memory: \(memory.operations) mixed operations (\(memory.tasks) tasks) on the "
                         + "\(memory.collection) collection, \(String(format: "%.0f", memory.seconds)) s")
            lines.append("  RSS after the first 1,000: \(memory.rssAfterFirstThousandBytes / 1024) KiB; after all: "
                         + "\(memory.rssAfterAllBytes / 1024) KiB; growth: \(memory.growthBytes / 1024) KiB")
        }

        if let workloads {
            lines += workloads.text
        }

        if shownTargets.contains(where: { $0.group == .operations }) || !someSections {
            lines.append("")
            lines.append("Targets (operations):")
            lines += Self.targetLines(shownTargets.filter { $0.group == .operations })
        }
        if let one = concurrency.first(where: { $0.operation == "save" && $0.tasks == 1 })?.opsPerSecond,
           let sixteen = concurrency.first(where: { $0.operation == "save" && $0.tasks == 16 })?.opsPerSecond, one > 0 {
            lines.append("  info  save with 16 tasks: \(formatRatio(sixteen / one)) the ops/s of 1 task (not a target: "
                         + "gnome-keyring serializes writes and rewrites its file on each)")
        }
        if let workloads {
            lines += workloads.targetText(shownTargets.filter { $0.group == .workloads })
            lines += workloads.appColdStartTargetText(shownTargets.filter { $0.group == .appColdStart })
        }
        lines.append("")
        lines.append(String(format: "The run took %.0f s.", durationSeconds))
        return lines.joined(separator: "\n")
    }

    /// The table: one row per operation, with its ratios, and the legend under it.
    private var operationsTable: [String] {
        var lines: [String] = []
        lines.append("")
        let header = column("operation", 50) + column("median", 11, right: true) + column("p95", 11, right: true)
            + column("× raw", 9, right: true) + column("× floor", 9, right: true) + column("n", 6, right: true)
        lines.append(header)
        lines.append(String(repeating: "-", count: header.count))
        var previousContender: String?
        for result in operations {
            if let previousContender, previousContender != result.contender,
               result.contender != "floor" || previousContender != "libsecret" {
                lines.append("")
            }
            previousContender = result.contender
            lines.append(column(result.label, 50)
                         + column(formatLatency(result.medianMicroseconds.map { $0 / 1e6 }), 11, right: true)
                         + column(formatLatency(result.p95Microseconds.map { $0 / 1e6 }), 11, right: true)
                         + column(formatRatio(result.ratioToLibsecret), 9, right: true)
                         + column(formatRatio(result.ratioToFloor), 9, right: true)
                         + column(String(result.samples), 6, right: true))
        }
        lines.append("× raw: median over raw libsecret's median for the same kind of operation (lookup, store, clear);")
        lines.append("× floor: median over one GetSecret round trip on a known item (secret_item_load_secret_sync).")
        lines.append("Each read/save batch starts with one untimed call on its account (steady state); \"after an item")
        lines.append("change\" is a get right after another client created and deleted an item.")
        return lines
    }

    /// One line per target: PASS, FAIL or N/A (not measured), what, the measured value, and by how
    /// much a failure missed.
    static func targetLines(_ targets: [Target]) -> [String] {
        targets.map { target in
            let verdict = target.pass.map { $0 ? "PASS" : "FAIL" } ?? "N/A "
            let measured = target.measured.map { value in
                target.unit == "ratio" ? formatRatio(value) : String(format: "%.2f %@", value, target.unit)
            } ?? "not measured"
            var line = "  \(verdict)  " + column(target.description, 56) + " measured " + measured
            if target.pass == false, let value = target.measured {
                let over = target.comparison == "at_most" ? value / target.limit - 1 : 1 - value / target.limit
                line += String(format: " (%.0f%% %@ the limit)", over * 100,
                               target.comparison == "at_most" ? "over" : "under")
            }
            return line
        }
    }

    /// Tab-separated data for the latency plot, in table order: label, median µs, p95 µs, group
    /// (1 PingStorage, 2 raw libsecret and the floor, 3 secret-tool and Python keyring).
    var latencyTSV: String {
        operations.compactMap { result -> String? in
            guard let median = result.medianMicroseconds, let p95 = result.p95Microseconds else { return nil }
            let group = result.ours ? 1 : (result.contender == "libsecret" || result.contender == "floor" ? 2 : 3)
            return "\"\(result.label)\"\t\(median)\t\(p95)\t\(group)"
        }.joined(separator: "\n") + "\n"
    }

    /// Tab-separated data for the scaling plot: tasks, get ops/s, save ops/s.
    var scalingTSV: String {
        let taskCounts = Array(Set(concurrency.map(\.tasks))).sorted()
        return taskCounts.map { tasks in
            let get = concurrency.first { $0.operation == "get" && $0.tasks == tasks }?.opsPerSecond ?? 0
            let save = concurrency.first { $0.operation == "save" && $0.tasks == tasks }?.opsPerSecond ?? 0
            return "\(tasks)\t\(get)\t\(save)"
        }.joined(separator: "\n") + "\n"
    }

    /// The JSON file's content.
    func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
