import BenchmarkSupport
import Foundation
import PingStorage

/// Resident memory after the first 1,000 and after all (default 100,000) mixed operations of
/// `KeychainStorage`, from /proc/self/statm. Runs on the in-memory `session` collection (no file
/// rewrite per write), so that 100,000 operations take well under a minute.
///
/// The mix, per task and per ten operations: six uncached gets, one cached get, a save of a
/// changed value, a save of the same value (no write), and a tenth operation that is alternately
/// another changed save and a delete (re-created by the next cycle's save), so items are created
/// and deleted and remembered items are re-checked.
struct MemoryBenchmark {
    /// The measurement.
    struct Result: Codable, Sendable {
        var collection: String
        var tasks: Int
        var operations: Int
        var rssAfterFirstThousandBytes: Int
        var rssAfterAllBytes: Int
        var growthBytes: Int
        var seconds: Double
    }

    let operations: Int
    let tasks: Int

    func run(progress: (String) -> Void) async throws -> Result {
        let configuration = KeychainConfiguration(service: Bench.service, collection: .session)
        let accounts = Bench.accounts("mem", tasks)
        let plain = accounts.map { KeychainStorage<Token>(account: $0, configuration: configuration) }
        let cached = accounts.map {
            KeychainStorage<Token>(account: $0 + "-cached", cacheStrategy: .CACHE, configuration: configuration)
        }
        for (storage, cache) in zip(plain, cached) {
            try await storage.save(item: Token.make(account: storage.account))
            try await cache.save(item: Token.make(account: cache.account))
        }
        let clock = ContinuousClock()
        let start = clock.now
        let first = min(1000, operations)
        try await mixed(first, plain: plain, cached: cached, offset: 0)
        let afterFirst = residentSetSize()
        progress("memory: \(first) operations, RSS \(afterFirst / 1024) KiB")
        var done = first
        while done < operations {
            let chunk = min(20_000, operations - done)
            try await mixed(chunk, plain: plain, cached: cached, offset: done)
            done += chunk
            progress("memory: \(done) operations, RSS \(residentSetSize() / 1024) KiB")
        }
        let afterAll = residentSetSize()
        return Result(collection: "session (in memory)", tasks: tasks, operations: operations,
                      rssAfterFirstThousandBytes: afterFirst, rssAfterAllBytes: afterAll,
                      growthBytes: afterAll - afterFirst, seconds: (clock.now - start).seconds)
    }

    /// `count` operations spread over the tasks; `offset` keeps the mix's position and the values
    /// changing across calls.
    private func mixed(_ count: Int, plain: [KeychainStorage<Token>], cached: [KeychainStorage<Token>],
                       offset: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                let storage = plain[task], cache = cached[task]
                let share = count / tasks + (task < count % tasks ? 1 : 0)
                let token = Token.make(account: storage.account)
                let firstIndex = offset / tasks
                group.addTask {
                    for index in firstIndex..<(firstIndex + share) {
                        switch index % 10 {
                        case 0, 1, 3, 5, 7, 8:
                            // Missing only between a delete (index % 20 == 9) and the next save.
                            let mayBeMissing = index % 20 == 10 || index % 20 == 11
                            if try await storage.get() == nil, !mayBeMissing {
                                throw BenchmarkError("\(storage.account): get returned nil")
                            }
                        case 2:
                            try await storage.save(item: token.with(version: index))
                        case 4:
                            _ = try await cache.get()
                        case 6:
                            try await storage.save(item: token.with(version: index - 4))  // same as case 2: no write
                        default:  // 9
                            if index % 20 == 9 {
                                try await storage.delete()
                            } else {
                                try await storage.save(item: token.with(version: index))
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
