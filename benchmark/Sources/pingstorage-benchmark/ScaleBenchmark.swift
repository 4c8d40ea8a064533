import BenchmarkSupport
import Foundation
import PingStorage
import SecretService
import Synchronization

/// The scale rows (a workload): get, save (changed value) and delete of KeychainStorage against raw
/// libsecret with 10, 1,000 and 5,000 items in the login collection (alias default), which
/// gnome-keyring rewrites and re-encrypts whole on each write. At each size, rounds run the six
/// operations in a shuffled order, as the main table does.
///
/// How the collection gets its items: gnome-keyring's cost per write grows with the items already
/// in the collection (here ~0.15 ms per item: about 0.2 s per write at 1,200 items and 0.5 s at
/// 3,000, measured with libsecret), so storing N items one by one costs about N²/2 times that,
/// 20–40 minutes for 5,000 whatever the client does: small secrets shrink the file but not the per-item work, concurrency
/// does not help since gnome-keyring serves one request at a time, and the `session` collection,
/// which is never written to disk, is not the collection the rows are about. The trial at the
/// second size (PopulationTrial) measures each of those approaches in every run. Instead, the
/// whole login collection is written as gnome-keyring's own keyring file while the daemon is
/// stopped (KeyringFixture): a second or two for 5,000 items, exactly N items at each size, and
/// the daemon then holds what it would hold after N stores.
///
/// Items: three accounts per contender (get, save, delete) with the 2 KiB token, and fillers
/// with 64-byte secrets (a typical password) up to N, all with KeychainStorage's attributes.
/// This section runs last: it replaces the login collection.
final class ScaleBenchmark: Sendable {
    /// One operation at one size.
    struct Row: Codable, Sendable {
        var id: String
        var samples: Int
        var medianMicroseconds: Double?
        var p95Microseconds: Double?
    }

    /// Everything measured at one size.
    struct SizeResult: Codable, Sendable {
        var items: Int
        /// Items the collection held when measuring started (checked against `items`).
        var itemsFound: Int
        /// Writing the file and restarting gnome-keyring.
        var populationSeconds: Double
        var rows: [Row]
        var getRatio: Double?
        var saveRatio: Double?
        var deleteRatio: Double?
    }

    /// The section's result.
    struct Result: Codable, Sendable {
        var sizes: [SizeResult]
        var rounds: Int
        var readsPerBatch: Int
        var writesPerBatch: Int
        var fillerSecretBytes: Int
        var trial: PopulationTrial.Result?
    }

    static let fillerSecretBytes = 64
    let sizes: [Int]
    let rounds: Int
    let reads = 12
    let writes = 2
    let trialItems: Int
    let fixture: KeyringFixture
    let worker: BlockingThread
    let client: SecretServiceClient
    private let versions = Atomic<Int>(9_000_000)

    init(sizes: [Int], rounds: Int, trialItems: Int, fixture: KeyringFixture, worker: BlockingThread,
         client: SecretServiceClient) {
        self.sizes = sizes
        self.rounds = rounds
        self.trialItems = trialItems
        self.fixture = fixture
        self.worker = worker
        self.client = client
    }

    private static let ours = ["get": "scale-ks-get", "save": "scale-ks-save", "delete": "scale-ks-delete"]
    private static let raw = ["get": "scale-raw-get", "save": "scale-raw-save", "delete": "scale-raw-delete"]

    func run(seed: UInt64, progress: (String) -> Void) async throws -> Result {
        var random = SplitMix64(seed: seed)
        var results: [SizeResult] = []
        var trial: PopulationTrial.Result?
        for (index, size) in sizes.enumerated() {
            progress("scale: writing a login collection of \(size) items and restarting gnome-keyring")
            var items = (Array(Self.ours.values) + Array(Self.raw.values)).sorted().map {
                KeyringFixture.Item(account: $0, secret: Array(Token.make(account: $0).json.utf8))
            }
            let fillers = max(size - items.count, 0)
            items += (0..<fillers).map { KeyringFixture.Item(account: "scale-fill-\($0)", secret: Self.filler($0)) }
            let population = try await fixture.install(items, worker: worker)
            try await worker.run { try RawLibsecret.reconnect() }
            let found = try await client.searchItems(matching: ["service": Bench.service], in: .default).all.count
            guard found == items.count else {
                throw BenchmarkError("the fixture should hold \(items.count) items, the login collection has \(found)")
            }
            progress("scale: \(found) items (population \(String(format: "%.1f", population.seconds)) s); measuring")
            results.append(try await measure(size: size, found: found, population: population, random: &random))
            if index == min(1, sizes.count - 1) {
                trial = try await PopulationTrial(items: trialItems, worker: worker)
                    .run(collectionSize: found, largestSize: sizes.max() ?? size, progress: progress)
            }
        }
        return Result(sizes: results, rounds: rounds, readsPerBatch: reads, writesPerBatch: writes,
                      fillerSecretBytes: Self.fillerSecretBytes, trial: trial)
    }

    /// A filler's secret: `fillerSecretBytes` printable bytes, different for each filler.
    static func filler(_ index: Int) -> [UInt8] {
        let text = String(repeating: "f", count: fillerSecretBytes) + String(index)
        return Array(text.utf8.suffix(fillerSecretBytes))
    }

    private func measure(size: Int, found: Int, population: Duration, random: inout SplitMix64) async throws -> SizeResult {
        let storages = Self.ours.mapValues { KeychainStorage<Token>(account: $0, configuration: Bench.configuration) }
        let operations: [(String, () async throws -> [Duration])] = [
            ("keychain.get", { [self] in try await reads(storages["get"]!) }),
            ("keychain.save", { [self] in try await saves(storages["save"]!) }),
            ("keychain.delete", { [self] in try await deletes(storages["delete"]!) }),
            ("libsecret.lookup", { [self] in try await lookups(Self.raw["get"]!) }),
            ("libsecret.store", { [self] in try await stores(Self.raw["save"]!) }),
            ("libsecret.clear", { [self] in try await clears(Self.raw["delete"]!) }),
        ]
        // Warm-up, untimed: the first call after the restart reconnects, and every account's item
        // is found once (the steady state of the main table). No write: at 5,000 items each costs ~1 s.
        for storage in storages.values { _ = try await storage.get() }
        let rawAccounts = Array(Self.raw.values)
        try await worker.run { for account in rawAccounts { _ = try RawLibsecret.lookup(account: account) } }
        var samples: [String: Samples] = [:]
        for _ in 0..<rounds {
            for (id, batch) in operations.shuffled(using: &random) {
                samples[id, default: Samples()].append(contentsOf: try await batch())
            }
        }
        let rows = operations.map { id, _ in
            Row(id: id, samples: samples[id]?.count ?? 0, medianMicroseconds: samples[id]?.median.map { $0 * 1e6 },
                p95Microseconds: samples[id]?.p95.map { $0 * 1e6 })
        }
        func ratio(_ ours: String, _ raw: String) -> Double? {
            guard let own = samples[ours]?.median, let base = samples[raw]?.median, base > 0 else { return nil }
            return own / base
        }
        return SizeResult(items: size, itemsFound: found, populationSeconds: population.seconds, rows: rows,
                          getRatio: ratio("keychain.get", "libsecret.lookup"),
                          saveRatio: ratio("keychain.save", "libsecret.store"),
                          deleteRatio: ratio("keychain.delete", "libsecret.clear"))
    }

    private func nextVersion() -> Int { versions.add(1, ordering: .relaxed).newValue }

    private func reads(_ storage: KeychainStorage<Token>) async throws -> [Duration] {
        _ = try await storage.get()
        var samples: [Duration] = []
        for _ in 0..<reads {
            var value: Token?
            samples.append(try await timed { value = try await storage.get() })
            guard value != nil else { throw BenchmarkError("\(storage.account): get returned nil") }
        }
        return samples
    }

    private func saves(_ storage: KeychainStorage<Token>) async throws -> [Duration] {
        let token = Token.make(account: storage.account)
        var samples: [Duration] = []
        for _ in 0..<writes {
            let changed = token.with(version: nextVersion())
            samples.append(try await timed { try await storage.save(item: changed) })
        }
        return samples
    }

    private func deletes(_ storage: KeychainStorage<Token>) async throws -> [Duration] {
        let token = Token.make(account: storage.account)
        var samples: [Duration] = []
        for _ in 0..<writes {
            samples.append(try await timed { try await storage.delete() })
            try await storage.save(item: token.with(version: nextVersion()))  // re-create, untimed
        }
        return samples
    }

    private func lookups(_ account: String) async throws -> [Duration] {
        let count = reads
        return try await worker.run {
            try RawLibsecret.timedLookups(account: account, count: count)
        }
    }

    private func stores(_ account: String) async throws -> [Duration] {
        let token = Token.make(account: account)
        let values = (0..<writes).map { _ in token.with(version: nextVersion()).json }
        return try await worker.run {
            try values.map { value in try timed { try RawLibsecret.store(value, account: account) } }
        }
    }

    private func clears(_ account: String) async throws -> [Duration] {
        let token = Token.make(account: account)
        let values = (0..<writes).map { _ in token.with(version: nextVersion()).json }
        return try await worker.run {
            try values.map { value in
                var cleared = false
                let elapsed = try timed { cleared = try RawLibsecret.clear(account: account) }
                guard cleared else { throw BenchmarkError("\(account): clear found nothing") }
                try RawLibsecret.store(value, account: account)  // re-create, untimed
                return elapsed
            }
        }
    }
}
