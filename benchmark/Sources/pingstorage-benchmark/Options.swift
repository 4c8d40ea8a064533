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
        /// The sections to run (`--sections`); all of them unless told.
        var sections = Set(Section.allCases)
        /// Cold start: `ping-keyring` builds to start, as (label, path); the first one is judged.
        var pingKeyring: [(label: String, path: String)] = []
        /// Cold start: the launcher (tools/spawn-measure.c, compiled by benchmark/run).
        var spawnMeasure: String?
        /// Cold start: coldstart-app builds, as (label, path); the first is the app built as usual
        /// (full Foundation, dynamic runtime), the one the target judges; others are compared with it.
        var coldStartApps: [(label: String, path: String)] = []
        /// Cold start: other builds of coldstart-get, compared with the one built next to this binary.
        var coldStartGets: [(label: String, path: String)] = []
        /// Cold start: rounds of whole processes.
        var coldStartRounds = 40
        /// Memory of many accounts: accounts held by the accounts-rss process, and how many times it runs.
        var memoryAccounts = 1000
        var memoryAccountRuns = 3
        /// Accounts saved at once, and rounds of that.
        var concurrentAccounts = 100
        var concurrentRounds = 5
        /// Scale: items in the login collection, and rounds at each size.
        var scaleSizes = [10, 1000, 5000]
        var scaleRounds = 15
        /// Scale: items each population approach adds in the trial (at the second size).
        var populationTrialItems = 20

        /// The benchmark's sections, in the order they run.
        enum Section: String, CaseIterable {
            case table, concurrency, memory
            case mainActor = "main-actor", coldStart = "cold-start", accounts, concurrentSaves = "concurrent-saves", scale
        }

        /// Whether `section` runs.
        func runs(_ section: Section) -> Bool { sections.contains(section) }

        /// Whether any of the workloads (main actor and after) runs.
        var runsWorkloads: Bool {
            sections.contains { ![.table, .concurrency, .memory].contains($0) }
        }

        static let usage = """
            usage: pingstorage-benchmark [--output DIR] [--plot-data DIR] [--rounds N] [--seed N]
                                         [--memory-ops N] [--short] [--python PATH] [--allow-any-keyring]
                                         [--sections NAME,NAME,...] [--ping-keyring LABEL=PATH]...
                                         [--spawn-measure PATH] [--coldstart-app [LABEL=]PATH]...
                                         [--coldstart-get LABEL=PATH]... [--coldstart-rounds N]
                                         [--scale-sizes N,N,...]
              --output DIR       where latest.json goes (default benchmark/results)
              --plot-data DIR    also write latency.tsv, scaling.tsv and scale.tsv there (for gnuplot)
              --rounds N         interleaved rounds (default 30)
              --memory-ops N     operations of the memory run (default 100000)
              --short, --quick   a smoke run of every section with tiny sizes: 3 rounds, short windows,
                                 5,000 memory operations, 100 / 20 accounts, scale at 10 and 50 items
              --python PATH      the Python with Debian's python3-keyring (default /usr/bin/python3)
              --sections LIST    run only these sections (default all): table, concurrency, memory,
                                 main-actor, cold-start, accounts, concurrent-saves, scale
              --ping-keyring LABEL=PATH  a release build of ping-keyring for the cold-start rows
                                 (repeatable; the first is the one the targets judge)
              --spawn-measure PATH  the cold-start launcher (benchmark/tools/spawn-measure.c, built)
              --coldstart-app [LABEL=]PATH  coldstart-app built without --static-swift-stdlib (the app
                                 rows; repeatable: the first is judged, others are compared with it)
              --coldstart-get LABEL=PATH  another build of coldstart-get, compared with the one built
                                 next to this binary in the same rounds (repeatable)
              --coldstart-rounds N  rounds of the cold-start section (default 40)
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
                case "--coldstart-app":
                    let given = value(argument)
                    let pair = given.split(separator: "=", maxSplits: 1).map(String.init)
                    if pair.count == 2, !pair[0].contains("/") {
                        options.coldStartApps.append((pair[0], pair[1]))
                    } else {
                        options.coldStartApps.append(("as built", given))
                    }
                case "--coldstart-get":
                    let pair = value(argument).split(separator: "=", maxSplits: 1).map(String.init)
                    guard pair.count == 2 else { fail("--coldstart-get needs LABEL=PATH") }
                    options.coldStartGets.append((pair[0], pair[1]))
                case "--coldstart-rounds": options.coldStartRounds = number(argument)
                case "--sections":
                    var sections = Set<Section>()
                    for name in value(argument).split(separator: ",") {
                        guard let section = Section(rawValue: String(name)) else {
                            fail("--sections: no section \(name) (\(Section.allCases.map(\.rawValue).joined(separator: ", ")))")
                        }
                        sections.insert(section)
                    }
                    guard !sections.isEmpty else { fail("--sections needs at least one section") }
                    options.sections = sections
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
