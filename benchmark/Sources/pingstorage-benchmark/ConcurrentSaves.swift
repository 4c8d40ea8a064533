import BenchmarkSupport
import Foundation
import PingStorage
import Synchronization

/// The 100 accounts saved at once (a workload) from one process: KeychainStorage with one task per
/// account (each saving a changed value once) against raw libsecret storing the same number of
/// values, on the login collection. Rounds run the two in a shuffled order; a round's throughput
/// is accounts / (time until the last save finished); the result is the median over rounds.
///
/// Raw libsecret uses its asynchronous API (`secret_password_storev`), every store in flight at
/// once on one GMainContext (`cbl_store_concurrently`): that is the most a C program gets from
/// libsecret — all requests queued at the daemon together, the same shape as 100 tasks — with no
/// thread-pool size for us to pick. Its `_sync` API from a pool of N threads would have at most N
/// requests in flight, so it could only be slower.
final class ConcurrentSavesBenchmark: Sendable {
    /// The measurement.
    struct Result: Codable, Sendable {
        var accounts: Int
        var rounds: Int
        var collection: String
        var oursSavesPerSecond: Double
        var rawSavesPerSecond: Double
        /// Ours over raw: above 1 means KeychainStorage saved faster.
        var throughputRatio: Double
        var oursRoundsSavesPerSecond: [Double]
        var rawRoundsSavesPerSecond: [Double]
    }

    private let storages: [KeychainStorage<Token>]
    private let rawAccounts: [String]
    private let rounds: Int
    private let worker: BlockingThread
    private let versions = Atomic<Int>(5_000_000)

    /// Creates the storages (`many-ks-*`) and stores every account's first value, both contenders.
    init(accounts: Int, rounds: Int, worker: BlockingThread) async throws {
        storages = Bench.accounts("many-ks", accounts).map {
            KeychainStorage<Token>(account: $0, configuration: Bench.configuration)
        }
        rawAccounts = Bench.accounts("many-raw", accounts)
        self.rounds = rounds
        self.worker = worker
        for storage in storages { try await storage.save(item: Token.make(account: storage.account)) }
        let accounts = rawAccounts
        try await worker.run {
            for account in accounts { try RawLibsecret.store(Token.make(account: account).json, account: account) }
        }
    }

    func run(seed: UInt64, progress: (String) -> Void) async throws -> Result {
        var random = SplitMix64(seed: seed)
        var ours: [Double] = [], raw: [Double] = []
        for round in 0..<rounds {
            progress("\(storages.count) accounts saved at once: round \(round + 1)/\(rounds)")
            for contender in ["ours", "raw"].shuffled(using: &random) {
                if contender == "ours" {
                    ours.append(Double(storages.count) / (try await saveAll()).seconds)
                } else {
                    raw.append(Double(rawAccounts.count) / (try await storeAll()).seconds)
                }
            }
        }
        func median(_ values: [Double]) -> Double {
            var samples = Samples()
            values.forEach { samples.append(seconds: $0) }
            return samples.median ?? 0
        }
        let oursMedian = median(ours), rawMedian = median(raw)
        return Result(accounts: storages.count, rounds: rounds, collection: "login (alias default)",
                      oursSavesPerSecond: oursMedian, rawSavesPerSecond: rawMedian,
                      throughputRatio: rawMedian > 0 ? oursMedian / rawMedian : 0,
                      oursRoundsSavesPerSecond: ours, rawRoundsSavesPerSecond: raw)
    }

    private func nextVersion() -> Int {
        versions.add(1, ordering: .relaxed).newValue
    }

    /// One task per account, one save each; the values are made before the clock starts.
    private func saveAll() async throws -> Duration {
        let work = storages.map { ($0, Token.make(account: $0.account).with(version: nextVersion())) }
        return try await timed {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (storage, token) in work { group.addTask { try await storage.save(item: token) } }
                try await group.waitForAll()
            }
        }
    }

    /// All stores in flight at once on the worker thread, timed there.
    private func storeAll() async throws -> Duration {
        let accounts = rawAccounts
        let secrets = accounts.map { Token.make(account: $0).with(version: nextVersion()).json }
        return try await worker.run {
            try timed { try RawLibsecret.storeConcurrently(secrets, accounts: accounts, inFlight: accounts.count) }
        }
    }
}
