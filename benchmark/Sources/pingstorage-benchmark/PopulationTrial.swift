import BenchmarkSupport
import Foundation
import PingStorage

/// The ways of populating the login collection that ScaleBenchmark weighed, measured in every run
/// on the collection of the scale rows' second size (1,000 items; 50 in the short run), so the
/// choice of a keyring file over stores stays backed by figures from the same machine and daemon.
/// Each approach stores `items` new items, one approach after the other (the collection grows by
/// `items` each time); the time per item is then projected to a collection of `largestSize`,
/// assuming, as measured here, that a write costs in proportion to the items already present
/// (total ≈ per-item cost / current size × largest² / 2).
struct PopulationTrial {
    /// One approach.
    struct Approach: Codable, Sendable {
        var id: String
        var label: String
        var items: Int
        var seconds: Double
        var millisecondsPerItem: Double
        /// The projected time to store `largestSize` items this way, from an empty collection.
        var projectedMinutes: Double
    }

    /// The trial.
    struct Result: Codable, Sendable {
        /// Items in the login collection when the trial started.
        var collectionSize: Int
        var largestSize: Int
        var approaches: [Approach]
    }

    let items: Int
    let worker: BlockingThread

    func run(collectionSize: Int, largestSize: Int, progress: (String) -> Void) async throws -> Result {
        progress("population trial: \(items) items per approach, from \(collectionSize) items")
        let small = String(decoding: ScaleBenchmark.filler(0), as: UTF8.self)
        var approaches: [Approach] = []
        func record(_ id: String, _ label: String, _ elapsed: Duration) {
            let perItem = elapsed.seconds / Double(items)
            let projected = perItem / Double(max(collectionSize, 1)) * Double(largestSize * largestSize) / 2
            approaches.append(Approach(id: id, label: label, items: items, seconds: elapsed.seconds,
                                       millisecondsPerItem: perItem * 1e3, projectedMinutes: projected / 60))
        }

        let storages = Bench.accounts("trial-ks", items).map {
            KeychainStorage<Token>(account: $0, configuration: Bench.configuration)
        }
        let tokens = storages.map { Token.make(account: $0.account) }
        record("keychain.2k", "KeychainStorage.save, 2 KiB tokens, one after another", try await timed {
            for (storage, token) in zip(storages, tokens) { try await storage.save(item: token) }
        })

        let count = items
        let rawTokens = Bench.accounts("trial-raw", count).map { ($0, Token.make(account: $0).json) }
        record("raw.2k", "raw libsecret storev_sync, 2 KiB tokens, one after another", try await worker.run {
            try timed { for (account, json) in rawTokens { try RawLibsecret.store(json, account: account) } }
        })

        let smallAccounts = Bench.accounts("trial-small", count)
        record("raw.64", "raw libsecret storev_sync, 64-byte secrets, one after another", try await worker.run {
            try timed { for account in smallAccounts { try RawLibsecret.store(small, account: account) } }
        })

        let asyncAccounts = Bench.accounts("trial-async", count)
        record("raw.64.async", "raw libsecret storev (async), 64-byte secrets, 8 in flight", try await worker.run {
            try timed {
                try RawLibsecret.storeConcurrently(Array(repeating: small, count: count), accounts: asyncAccounts,
                                                   inFlight: 8)
            }
        })

        let sessionAccounts = Bench.accounts("trial-session", count)
        record("raw.64.session", "raw libsecret storev_sync, 64-byte secrets, session collection (in memory)",
               try await worker.run {
                   try timed {
                       for account in sessionAccounts { try RawLibsecret.store(small, account: account, collection: "session") }
                   }
               })
        return Result(collectionSize: collectionSize, largestSize: largestSize, approaches: approaches)
    }
}
