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

        static let usage = """
            usage: pingstorage-benchmark [--output DIR] [--plot-data DIR] [--rounds N] [--seed N]
                                         [--memory-ops N] [--quick] [--python PATH] [--allow-any-keyring]
              --output DIR       where latest.json goes (default benchmark/results)
              --plot-data DIR    also write latency.tsv and scaling.tsv there (for gnuplot)
              --rounds N         interleaved rounds (default 30)
              --memory-ops N     operations of the memory run (default 100000)
              --quick            a smoke run: 3 rounds, short windows, 5,000 memory operations
              --python PATH      the Python with Debian's python3-keyring (default /usr/bin/python3)
              --allow-any-keyring  run even outside dbus-test/run --isolated (writes ~100 items!)
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
                case "--quick":
                    options.rounds = 3
                    options.concurrencyRounds = 1
                    options.getWindow = .milliseconds(300)
                    options.saveWindow = .milliseconds(300)
                    options.memoryOperations = 5000
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
