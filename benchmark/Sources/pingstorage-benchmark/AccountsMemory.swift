import Foundation

/// The memory of 1,000 accounts (a workload): runs the `accounts-rss` process (see its header) a few
/// times and keeps the median of its figures. A process of its own, so that nothing else this
/// benchmark allocated (or freed, for malloc to hand out again) is counted.
struct AccountsMemoryBenchmark {
    /// The measurement (medians over the runs).
    struct Result: Codable, Sendable {
        var accounts: Int
        var runs: Int
        var collection: String
        /// RSS at the process's start, after the warm-up account, and after the accounts.
        var rssStartKib: Double
        var rssBeforeKib: Double
        var rssAfterKib: Double
        var growthKib: Double
        var kibPerAccount: Double
        /// Time of the saves and gets of all accounts.
        var seconds: Double
    }

    let executable: String
    let accounts: Int
    let runs: Int

    func run(worker: BlockingThread, progress: (String) -> Void) async throws -> Result {
        var fields: [String: [Double]] = [:]
        for index in 0..<runs {
            let arguments = [executable, String(accounts), "\(ProcessInfo.processInfo.processIdentifier)-\(index)"]
            let output = try await worker.run { () throws -> [String] in
                let process = try ChildProcess.start(arguments)
                var lines: [String] = []
                while let line = process.readLine() { lines.append(line) }
                let status = process.finish()
                guard status == 0 else { throw BenchmarkError("accounts-rss exited with status \(status.map(String.init) ?? "?")") }
                return lines
            }
            var figures: [String: Double] = [:]
            for line in output {
                let parts = line.split(separator: " ")
                if parts.count == 2, let value = Double(parts[1]) { figures[String(parts[0])] = value }
            }
            if let before = figures["before_bytes"], let after = figures["after_bytes"] { figures["growth_bytes"] = after - before }
            figures.forEach { fields[$0.key, default: []].append($0.value) }
            progress("accounts memory: run \(index + 1)/\(runs)")
        }
        func median(_ name: String) throws -> Double {
            var samples = Samples()
            (fields[name] ?? []).forEach { samples.append(seconds: $0) }
            guard let median = samples.median else { throw BenchmarkError("accounts-rss did not report \(name)") }
            return median
        }
        // The growth is the median of each run's own growth, not a difference of medians.
        let growth = try median("growth_bytes") / 1024
        return Result(accounts: accounts, runs: runs, collection: "session (in memory)",
                      rssStartKib: try median("start_bytes") / 1024, rssBeforeKib: try median("before_bytes") / 1024,
                      rssAfterKib: try median("after_bytes") / 1024, growthKib: growth,
                      kibPerAccount: growth / Double(accounts), seconds: try median("seconds"))
    }
}
