import Foundation

extension PingStorageBenchmark {
    /// Command-line settings.
    struct Options {
        var output = "benchmark/results"
        var plotData: String?
        var rounds = 30
        var seed: UInt64 = 20_260_101
        var sizes = BatchSizes()
        var concurrencyRounds = 3
        var getWindow: Duration = .milliseconds(1000)
        var saveWindow: Duration = .milliseconds(1500)
        var memoryOperations = 100_000
        var memoryTasks = 4
        var python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        var allowAnyKeyring = false
        /// Whether this is the short (CI) run; the report says so.
        var short = false
        /// Issue 15: `ping-keyring` builds to start, as (label, path); the first one is judged.
        var pingKeyring: [(label: String, path: String)] = []
        /// Issue 15: the cold-start launcher (tools/spawn-measure.c, compiled by benchmark/run).
        var spawnMeasure: String?
        /// Issue 23: coldstart-app, built as an app usually is (full Foundation, dynamic runtime).
        var coldStartApp: String?
        /// Issue 15: rounds of whole processes (cold start).
        var coldStartRounds = 40
        /// Issue 15: accounts held by the accounts-rss process, and how many times it runs.
        var memoryAccounts = 1000
        var memoryAccountRuns = 3
        /// Issue 15: accounts saved at once, and rounds of that.
        var concurrentAccounts = 100
        var concurrentRounds = 5
        /// Issue 15: items in the login collection, and rounds at each size.
        var scaleSizes = [10, 1000, 5000]
        var scaleRounds = 15
        /// Issue 15: items each population approach adds in the trial (at the second size).
        var populationTrialItems = 20

        static let usage = """
            usage: pingstorage-benchmark [--output DIR] [--plot-data DIR] [--rounds N] [--seed N]
                                         [--memory-ops N] [--short] [--python PATH] [--allow-any-keyring]
                                         [--ping-keyring LABEL=PATH]... [--spawn-measure PATH]
                                         [--coldstart-app PATH]
                                         [--scale-sizes N,N,...]
              --output DIR       where latest.json goes (default benchmark/results)
              --plot-data DIR    also write latency.tsv, scaling.tsv and scale.tsv there (for gnuplot)
              --rounds N         interleaved rounds (default 30)
              --memory-ops N     operations of the memory run (default 100000)
              --short, --quick   a smoke run of every section with tiny sizes: 3 rounds, short windows,
                                 5,000 memory operations, 100 / 20 accounts, scale at 10 and 50 items
              --python PATH      the Python with Debian's python3-keyring (default /usr/bin/python3)
              --ping-keyring LABEL=PATH  a release build of ping-keyring for the cold-start rows
                                 (repeatable; the first is the one the targets judge)
              --spawn-measure PATH  the cold-start launcher (benchmark/tools/spawn-measure.c, built)
              --coldstart-app PATH  coldstart-app built without --static-swift-stdlib (the app rows)
              --scale-sizes N,N,...  items in the login collection for the scale rows (default 10,1000,5000)
              --allow-any-keyring  run even outside dbus-test/run --isolated (writes hundreds of items!)
            """

        static func parse(_ arguments: [String]) -> Options {
            var options = Options()
            var iterator = arguments.makeIterator()
            func value(_ name: String) -> String {
                guard let value = iterator.next() else { fail("\(name) needs a value") }
                return value
            }
            func number(_ name: String) -> Int {
                guard let number = Int(value(name)), number > 0 else { fail("\(name) needs a positive number") }
                return number
            }
            while let argument = iterator.next() {
                switch argument {
                case "--output": options.output = value(argument)
                case "--plot-data": options.plotData = value(argument)
                case "--rounds": options.rounds = number(argument)
                case "--seed": options.seed = UInt64(number(argument))
                case "--memory-ops": options.memoryOperations = number(argument)
                case "--python": options.python = value(argument)
                case "--allow-any-keyring": options.allowAnyKeyring = true
                case "--ping-keyring":
                    let pair = value(argument).split(separator: "=", maxSplits: 1).map(String.init)
                    guard pair.count == 2 else { fail("--ping-keyring needs LABEL=PATH") }
                    options.pingKeyring.append((pair[0], pair[1]))
                case "--spawn-measure": options.spawnMeasure = value(argument)
                case "--coldstart-app": options.coldStartApp = value(argument)
                case "--scale-sizes":
                    let sizes = value(argument).split(separator: ",").compactMap { Int($0) }
                    guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 10 }) else { fail("--scale-sizes needs numbers ≥ 10") }
                    options.scaleSizes = sizes
                case "--short", "--quick":
                    options.short = true
                    options.rounds = 3
                    options.concurrencyRounds = 1
                    options.getWindow = .milliseconds(300)
                    options.saveWindow = .milliseconds(300)
                    options.memoryOperations = 5000
                    options.coldStartRounds = 5
                    options.memoryAccounts = 100
                    options.memoryAccountRuns = 1
                    options.concurrentAccounts = 20
                    options.concurrentRounds = 1
                    options.scaleSizes = [10, 50]
                    options.scaleRounds = 2
                    options.populationTrialItems = 5
                case "-h", "--help":
                    print(usage)
                    exit(0)
                default: fail("unknown argument \(argument)")
                }
            }
            return options
        }

        private static func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("pingstorage-benchmark: \(message)\n\(usage)\n".utf8))
            exit(2)
        }
    }
}
