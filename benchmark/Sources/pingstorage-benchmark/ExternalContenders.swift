import BenchmarkSupport
import Foundation

/// `secret-tool` (libsecret-tools), one process per call: what a shell script or a program that
/// shells out would get. Timed from spawn to exit on a dedicated thread.
final class SecretToolContender: Sendable {
    private let worker: BlockingThread
    private let accounts = Bench.accounts("tool", 4)
    private let sizes: BatchSizes

    /// Stores the values of accounts `tool-*` with `secret-tool store`.
    init(worker: BlockingThread, sizes: BatchSizes) async throws {
        self.worker = worker
        self.sizes = sizes
        let accounts = accounts
        try await worker.run {
            for account in accounts { try Self.store(account, Token.make(account: account)) }
        }
    }

    private static func store(_ account: String, _ token: Token) throws {
        try check(ChildProcess.run(
            ["secret-tool", "store", "--label=\(account) (\(Bench.service))",
             "service", Bench.service, "account", account, "username", account],
            input: Data(token.json.utf8)), "store")
    }

    private static func lookup(_ account: String) throws {
        try check(ChildProcess.run(["secret-tool", "lookup", "service", Bench.service, "account", account]), "lookup")
    }

    private static func clear(_ account: String) throws {
        try check(ChildProcess.run(["secret-tool", "clear", "service", Bench.service, "account", account]), "clear")
    }

    private static func check(_ status: Int32, _ what: String) throws {
        guard status == 0 else { throw BenchmarkError("secret-tool \(what) exited with status \(status)") }
    }

    /// The rows of this contender.
    var operations: [Operation] {
        [
            Operation(id: "secret-tool.lookup", label: "secret-tool lookup (a process per call)",
                      contender: "secret-tool", kind: .read, isOurs: false) { [self] round in
                let account = accounts[round % accounts.count], count = sizes.external
                return try await worker.run {
                    try (0..<count).map { _ in try timed { try Self.lookup(account) } }
                }
            },
            Operation(id: "secret-tool.store", label: "secret-tool store (a process per call)",
                      contender: "secret-tool", kind: .write, isOurs: false) { [self] round in
                let account = accounts[(round + 1) % accounts.count], count = sizes.external
                let token = Token.make(account: account)
                return try await worker.run {
                    try (0..<count).map { i in
                        let changed = token.with(version: round * 100 + i + 1)
                        return try timed { try Self.store(account, changed) }
                    }
                }
            },
            Operation(id: "secret-tool.clear", label: "secret-tool clear (a process per call)",
                      contender: "secret-tool", kind: .delete, isOurs: false) { [self] round in
                let account = accounts[(round + 2) % accounts.count], count = sizes.external
                let token = Token.make(account: account)
                return try await worker.run {
                    try (0..<count).map { _ in
                        let elapsed = try timed { try Self.clear(account) }
                        try Self.store(account, token)  // re-create, untimed
                        return elapsed
                    }
                }
            },
        ]
    }
}

/// Python `keyring` (Debian's python3-keyring, backend SecretService through secretstorage),
/// in-process: one long-lived python3 that reads commands on stdin and reports its own timings
/// of `get_password` / `set_password` / `delete_password`, so process start-up and the pipe are
/// not counted. Its items carry `service` + `username` (what Python keyring matches on).
final class PythonKeyringContender: Sendable {
    private let worker: BlockingThread
    private let process: ChildProcess.Pipes
    private let accounts = Bench.accounts("py", 4)
    private let sizes: BatchSizes
    /// `keyring` and `secretstorage` versions, as the script reports them.
    let versions: String

    /// Starts the Python driver, or throws with the reason Python keyring cannot be used.
    init(worker: BlockingThread, sizes: BatchSizes, python: String) async throws {
        self.worker = worker
        self.sizes = sizes
        let accounts = accounts
        (process, versions) = try await worker.run {
            let process = try ChildProcess.start([python, "-u", "-c", Self.script])
            guard let hello = process.readLine() else {
                _ = process.finish()
                throw BenchmarkError("\(python) exited at once")
            }
            guard hello.hasPrefix("ready ") else {
                _ = process.finish()
                throw BenchmarkError(hello)
            }
            let base = Token.make(account: "py").json
            process.send("token \(base)")
            _ = try Self.reply(process)
            for account in accounts {
                process.send("put \(Bench.service) \(account) 1")
                _ = try Self.reply(process)
            }
            return (process, String(hello.dropFirst("ready ".count)))
        }
    }

    /// Ends the Python process.
    func stop() async {
        _ = try? await worker.run { [process] in process.finish() }
    }

    private static func reply(_ process: ChildProcess.Pipes) throws -> [Duration] {
        guard let line = process.readLine() else { throw BenchmarkError("the Python keyring driver exited") }
        let fields = line.split(separator: " ")
        guard fields.first == "ok" else { throw BenchmarkError("Python keyring: \(line)") }
        return fields.dropFirst().compactMap { Int64($0) }.map { Duration.nanoseconds($0) }
    }

    private func run(_ command: String, _ account: String) async throws -> [Duration] {
        let line = "\(command) \(Bench.service) \(account) \(sizes.external)"
        return try await worker.run { [process] in
            process.send(line)
            return try Self.reply(process)
        }
    }

    /// The rows of this contender.
    var operations: [Operation] {
        [
            Operation(id: "python-keyring.get", label: "Python keyring get_password", contender: "python-keyring",
                      kind: .read, isOurs: false) { [self] round in
                try await run("get", accounts[round % accounts.count])
            },
            Operation(id: "python-keyring.set", label: "Python keyring set_password", contender: "python-keyring",
                      kind: .write, isOurs: false) { [self] round in
                try await run("set", accounts[(round + 1) % accounts.count])
            },
            Operation(id: "python-keyring.delete", label: "Python keyring delete_password",
                      contender: "python-keyring", kind: .delete, isOurs: false) { [self] round in
                try await run("delete", accounts[(round + 2) % accounts.count])
            },
        ]
    }

    /// The driver. Commands, one per line: `token JSON` (the base value), `put S U 1` (store the
    /// base value, untimed), `get|set|delete S U N` (N timed calls; `set` stores a changed value
    /// each time, `delete` re-creates the item untimed after each). Replies: `ok [ns ...]` or
    /// `error ...`.
    static let script = #"""
import sys, time
try:
    import keyring
    from keyring.backends import SecretService
    backend = SecretService.Keyring()
    backend.priority  # raises when the Secret Service cannot be used
    keyring.set_keyring(backend)
    from importlib import metadata
    print("ready keyring %s, secretstorage %s" % (metadata.version("keyring"), metadata.version("secretstorage")), flush=True)
except Exception as error:
    print("unavailable: Python keyring cannot use the Secret Service: %s: %s"
          % (type(error).__name__, str(error).replace("\n", " ")), flush=True)
    sys.exit(0)

base = None
counter = 0
for line in sys.stdin:
    line = line.rstrip("\n")
    try:
        if line.startswith("token "):
            base = line[len("token "):]
            print("ok", flush=True)
            continue
        command, service, user, count = line.split(" ")
        times = []
        for _ in range(int(count)):
            if command == "put":
                keyring.set_password(service, user, base)
                continue
            if command == "get":
                start = time.perf_counter_ns()
                value = keyring.get_password(service, user)
                times.append(time.perf_counter_ns() - start)
                if value is None:
                    raise RuntimeError("get_password found nothing for " + user)
            elif command == "set":
                counter += 1
                value = base[:-1] + ',"counter":%d}' % counter
                start = time.perf_counter_ns()
                keyring.set_password(service, user, value)
                times.append(time.perf_counter_ns() - start)
            elif command == "delete":
                start = time.perf_counter_ns()
                keyring.delete_password(service, user)
                times.append(time.perf_counter_ns() - start)
                keyring.set_password(service, user, base)
            else:
                raise ValueError("unknown command " + command)
        print("ok " + " ".join(str(t) for t in times), flush=True)
    except Exception as error:
        print("error %s: %s" % (type(error).__name__, str(error).replace("\n", " ")), flush=True)
"""#
}
