import BenchmarkSupport
import Foundation
import PingStorage

/// The main-actor rows (a workload): `KeychainStorage.get` called from `@MainActor` code, as a UI app
/// calls it, against the same calls from a detached task, interleaved in rounds.
///
/// How the main actor is really running here: `PingStorageBenchmark.main()` is `async`, so the
/// Swift runtime runs it as a task on the main actor and then calls `dispatch_main()`
/// (`swift_task_asyncMainDrainQueue`). The main actor's executor on Linux is the main dispatch
/// queue, and `dispatch_main()` serves it: it ends the process's main thread (`pthread_exit`)
/// and from then on a thread of dispatch's pool drains the main queue, one job at a time. That is
/// what every Swift program with an async main gets on Linux, ping-keyring included. Nothing
/// else waits on that queue: `run(_:)` is a nonisolated async function, so the rest of the
/// benchmark runs on the cooperative pool, and the main queue only runs these measurements.
/// `verifyMainActor()` checks, before measuring and after each batch, that the code is
/// main-actor isolated and really running on the main queue (a queue-specific value set on it),
/// and the run fails otherwise. (An app whose main thread runs a `RunLoop` would have the main
/// queue drained on its main thread instead; not measured here.)
///
/// Timing is done inline on the main actor (no helper: a nonisolated async helper such as
/// `timed` would itself run off the main actor). A sample therefore covers what a main-actor
/// caller waits for: the call, any hop off the main actor and the hop back onto the main queue.
@MainActor
enum MainActorBenchmark {
    /// What one configuration measured.
    struct Row: Codable, Sendable {
        var id: String
        var label: String
        var samples: Int
        var medianMicroseconds: Double?
        var p95Microseconds: Double?
    }

    /// The four rows and the ratios the targets use.
    struct Result: Codable, Sendable {
        var rows: [Row]
        /// Uncached get: main actor's median over the detached task's.
        var uncachedMainOverDetached: Double?
        var cachedMainActorMedianMicroseconds: Double?
        /// Who ran the main queue: the process's main thread, or a dispatch thread after
        /// `dispatch_main()` ended the main thread.
        var mainQueueThread: String
    }

    /// Runs `rounds` rounds; in each, the four configurations in a shuffled order. `reads` timed
    /// uncached gets per batch; `cachedIterations` cached gets per cached sample, `reads` samples.
    static func run(rounds: Int, reads: Int, cachedIterations: Int, seed: UInt64) async throws -> Result {
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: 1)
        try verifyMainActor()
        let mainQueueThread = Thread.isMainThread ? "the process's main thread"
            : "a dispatch thread (dispatch_main() ended the process's main thread)"
        let plain = KeychainStorage<Token>(account: "main-actor-0", configuration: Bench.configuration)
        let cached = KeychainStorage<Token>(account: "main-actor-cached", cacheStrategy: .CACHE,
                                            configuration: Bench.configuration)
        for storage in [plain, cached] {
            try await storage.save(item: Token.make(account: storage.account))
            guard try await storage.get() != nil else { throw BenchmarkError("\(storage.account): get returned nil") }
        }
        var random = SplitMix64(seed: seed)
        let ids = ["uncached.main", "uncached.detached", "cached.main", "cached.detached"]
        var samples: [String: Samples] = [:]
        for _ in 0..<rounds {
            for id in ids.shuffled(using: &random) {
                let batch: [Duration]
                switch id {
                case "uncached.main": batch = try await mainActorReads(plain, count: reads)
                case "uncached.detached":
                    batch = try await Task.detached { try await detachedReads(plain, count: reads) }.value
                case "cached.main": batch = try await mainActorCachedReads(cached, samples: reads, iterations: cachedIterations)
                default:
                    batch = try await Task.detached {
                        try await detachedCachedReads(cached, samples: reads, iterations: cachedIterations)
                    }.value
                }
                samples[id, default: Samples()].append(contentsOf: batch)
            }
        }
        let labels = [
            "uncached.main": "KeychainStorage.get (NO_CACHE) from @MainActor",
            "uncached.detached": "KeychainStorage.get (NO_CACHE) from a detached task",
            "cached.main": "KeychainStorage.get (CACHE, cached) from @MainActor",
            "cached.detached": "KeychainStorage.get (CACHE, cached) from a detached task",
        ]
        let rows = ids.map { id in
            let values = samples[id] ?? Samples()
            return Row(id: id, label: labels[id] ?? id, samples: values.count,
                       medianMicroseconds: values.median.map { $0 * 1e6 }, p95Microseconds: values.p95.map { $0 * 1e6 })
        }
        let main = samples["uncached.main"]?.median, detached = samples["uncached.detached"]?.median
        return Result(rows: rows, uncachedMainOverDetached: main.flatMap { m in detached.map { m / $0 } },
                      cachedMainActorMedianMicroseconds: samples["cached.main"]?.median.map { $0 * 1e6 },
                      mainQueueThread: mainQueueThread)
    }

    private static let mainQueueKey = DispatchSpecificKey<Int>()

    /// Fails unless this code is main-actor isolated and runs on the main dispatch queue.
    private static func verifyMainActor() throws {
        MainActor.assertIsolated("the main-actor rows must run on the main actor")
        guard DispatchQueue.getSpecific(key: mainQueueKey) == 1 else {
            throw BenchmarkError("@MainActor code is not running on the main queue: the main-actor rows would be wrong")
        }
    }

    private static func mainActorReads(_ storage: KeychainStorage<Token>, count: Int) async throws -> [Duration] {
        let clock = ContinuousClock()
        _ = try await storage.get()  // warm-up, as for every contender
        var samples: [Duration] = []
        for _ in 0..<count {
            let start = clock.now
            let value = try await storage.get()
            samples.append(clock.now - start)
            guard value != nil else { throw BenchmarkError("\(storage.account): get returned nil") }
        }
        try verifyMainActor()
        return samples
    }

    private static func mainActorCachedReads(_ storage: KeychainStorage<Token>, samples count: Int,
                                             iterations: Int) async throws -> [Duration] {
        let clock = ContinuousClock()
        var samples: [Duration] = []
        for _ in 0..<count {
            var found = 0
            let start = clock.now
            for _ in 0..<iterations {
                if try await storage.get() != nil { found += 1 }
            }
            samples.append((clock.now - start) / iterations)
            guard found == iterations else { throw BenchmarkError("cached get returned nil") }
        }
        try verifyMainActor()
        return samples
    }

    nonisolated private static func detachedReads(_ storage: KeychainStorage<Token>, count: Int) async throws -> [Duration] {
        _ = try await storage.get()
        var samples: [Duration] = []
        for _ in 0..<count {
            var value: Token?
            samples.append(try await timed { value = try await storage.get() })
            guard value != nil else { throw BenchmarkError("\(storage.account): get returned nil") }
        }
        return samples
    }

    nonisolated private static func detachedCachedReads(_ storage: KeychainStorage<Token>, samples count: Int,
                                                        iterations: Int) async throws -> [Duration] {
        var samples: [Duration] = []
        for _ in 0..<count {
            var found = 0
            let total = try await timed {
                for _ in 0..<iterations {
                    if try await storage.get() != nil { found += 1 }
                }
            }
            samples.append(total / iterations)
            guard found == iterations else { throw BenchmarkError("cached get returned nil") }
        }
        return samples
    }
}
