import BenchmarkSupport
import Foundation
import PingStorage
import Synchronization

/// Throughput of `KeychainStorage` with 1, 4 and 16 tasks, each on an account of its own, doing
/// `get` (NO_CACHE) or `save` (a changed value each time) in a loop for a fixed window. Rounds
/// interleave the configurations in a shuffled order; the result per configuration is the median
/// over rounds.
final class ScalingBenchmark: Sendable {
    /// One measured configuration.
    struct Result: Codable, Sendable {
        /// `get` or `save`.
        var operation: String
        var tasks: Int
        /// The median over rounds.
        var opsPerSecond: Double
        /// Each round's value.
        var roundsOpsPerSecond: [Double]
        /// Operations counted over all rounds.
        var operations: Int
    }

    let storages: [KeychainStorage<Token>]
    let taskCounts: [Int]
    let rounds: Int
    let getWindow: Duration
    let saveWindow: Duration
    private let versions = Atomic<Int>(1_000_000)

    init(storages: [KeychainStorage<Token>], taskCounts: [Int], rounds: Int, getWindow: Duration, saveWindow: Duration) {
        self.storages = storages
        self.taskCounts = taskCounts
        self.rounds = rounds
        self.getWindow = getWindow
        self.saveWindow = saveWindow
    }

    func run(random: inout SplitMix64, progress: (String) -> Void) async throws -> [Result] {
        let configurations = ["get", "save"].flatMap { operation in taskCounts.map { (operation, $0) } }
        var perRound: [String: [Double]] = [:]
        var totals: [String: Int] = [:]
        for round in 0..<rounds {
            progress("concurrency round \(round + 1)/\(rounds)")
            for (operation, tasks) in configurations.shuffled(using: &random) {
                let (count, elapsed) = try await window(operation, tasks: tasks)
                perRound["\(operation)/\(tasks)", default: []].append(Double(count) / elapsed.seconds)
                totals["\(operation)/\(tasks)", default: 0] += count
            }
        }
        return configurations.map { operation, tasks in
            let values = perRound["\(operation)/\(tasks)"] ?? []
            var samples = Samples()
            values.forEach { samples.append(seconds: $0) }
            return Result(operation: operation, tasks: tasks, opsPerSecond: samples.median ?? 0,
                          roundsOpsPerSecond: values, operations: totals["\(operation)/\(tasks)"] ?? 0)
        }
    }

    /// Runs `tasks` tasks for one window; returns the operations completed and the time taken
    /// (until the last task finished its last operation).
    private func window(_ operation: String, tasks: Int) async throws -> (Int, Duration) {
        let participants = Array(storages.prefix(tasks))
        let isSave = operation == "save"
        let tokens = participants.map { Token.make(account: $0.account) }
        // Warm-up, untimed: every account's item is remembered.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for storage in participants { group.addTask { _ = try await storage.get() } }
            try await group.waitForAll()
        }
        let clock = ContinuousClock()
        let start = clock.now
        let end = start + (isSave ? saveWindow : getWindow)
        let count = try await withThrowingTaskGroup(of: Int.self) { group in
            for (storage, token) in zip(participants, tokens) {
                group.addTask { [self] in
                    var done = 0
                    while clock.now < end {
                        if isSave {
                            try await storage.save(item: token.with(version: versions.add(1, ordering: .relaxed).newValue))
                        } else {
                            guard try await storage.get() != nil else {
                                throw BenchmarkError("\(storage.account): get returned nil")
                            }
                        }
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
        return (count, clock.now - start)
    }
}
