import DBusTransport
import Foundation
import PingStorage
import SecretService
import Testing

/// The fake Secret Service of dbus-test/fake-secret-service on a bus of its own, next to the real
/// keyring of the test run: each test gets a fresh one, drives it with `control`, and points the
/// library under test (in this process) at ``busAddress``.
final class FakeSecretServiceInstance: @unchecked Sendable {
    // @unchecked Sendable: `current` is only read or replaced under `lock`; everything else is
    // immutable after init.
    let directory: String
    let busAddress: String
    private let bus: BackgroundProcess
    private let lock = NSLock()
    private var current: LoggedProcess?
    private var service: LoggedProcess? {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
    private let dbusTest: String

    init(scenario: String = "normal") async throws {
        let environment = ProcessInfo.processInfo.environment
        dbusTest = Harness.dbusTestDirectory
        directory = environment["DBUS_TEST_DIR"]! + "/fake-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let addressFile = directory + "/bus-address"
        bus = try BackgroundProcess(
            ["dbus-daemon", "--config-file=\(environment["DBUS_TEST_DIR"]!)/session.conf", "--nofork", "--print-address=1"],
            stdoutPath: addressFile)
        var address = ""
        for _ in 0..<200 where address.isEmpty {
            address = (try? String(contentsOfFile: addressFile, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if address.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        }
        guard !address.isEmpty else { throw HarnessError("the fake's bus did not start") }
        busAddress = address
        try await start(scenario: scenario)
    }

    /// The environment of a process that should see the fake as its session bus's Secret Service.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        environment["DBUS_TEST_DIR"] = directory
        return environment
    }

    /// The fake's log (every call it received, the scenario switches): for failure messages.
    var log: String { (try? String(contentsOfFile: directory + "/service.log", encoding: .utf8)) ?? "" }

    /// Starts (or starts again, with the same state file) the service; returns once it owns its name.
    func start(scenario: String = "normal") async throws {
        var environment = self.environment
        environment["FAKE_SECRET_SERVICE_SCENARIO"] = scenario
        service = try LoggedProcess(
            ["/usr/bin/python3", dbusTest + "/fake-secret-service/service.py", "--state", directory + "/state.json"],
            logPath: directory + "/service.log", environment: environment)
        for _ in 0..<250 {
            if try await nameHasOwner() {
                // A scenario from the environment waits for dbus-test's readiness probe, answering
                // ReadAlias normally until then; nothing probes here, so it is switched on now,
                // whatever the library under test calls first.
                if scenario != "normal" { try control(["scenario"] + scenario.split(separator: " ").map(String.init)) }
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError("the fake Secret Service did not start")
    }

    func kill() { service?.stop(signal: SIGKILL) }

    /// Waits until the service process has exited by itself (exit-mid-call, prompt-then-exit).
    func waitUntilExited(timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if service?.hasExited ?? true { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw HarnessError("the fake Secret Service did not exit")
    }

    /// After the service exited by itself: starts it again with the same items.
    func restartAfterExit() async throws {
        try await waitUntilExited()
        // Its name is released when its connection closes, which the bus may notice a moment after
        // the exit: wait, so that start() does not see the old owner.
        for _ in 0..<250 {
            if try await !nameHasOwner() { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        try await start()
    }

    private func nameHasOwner() async throws -> Bool {
        let owned = try await run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                                      "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.NameHasOwner",
                                      "org.freedesktop.secrets"], environment: environment, timeout: 10)
        return owned.output.contains("true")
    }

    @discardableResult
    func control(_ arguments: [String]) throws -> String {
        let result = try run("/usr/bin/python3", [dbusTest + "/fake-secret-service/control"] + arguments,
                             environment: environment, timeout: 20)
        guard result.status == 0 else { throw HarnessError("control \(arguments): \(result.stderr)") }
        return result.output
    }

    /// Switches the scenario: `scenario("kwallet-locked", "prompt=never")`.
    func scenario(_ name: String, _ parameters: String...) throws {
        try control(["scenario", name] + parameters)
    }

    /// Everything `control state` prints.
    func state() throws -> FakeState {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(FakeState.self, from: Data(try control(["state"]).utf8))
    }

    /// The items as the fake holds them: path, stored attributes, secret.
    func items() throws -> [(path: String, attributes: [String: String], secret: Data)] {
        try state().items.map { ($0.path, $0.attributes, $0.secretBytes) }
    }

    /// How many calls of `method` (a D-Bus member name: `Prompt`, `Dismiss`, `OpenSession`, …) the
    /// fake received since it started.
    func calls(_ method: String) throws -> Int { try state().calls[method] ?? 0 }

    /// Waits (up to `timeout`) until the fake has received `count` calls of `method`; returns how
    /// many it received. For calls sent without waiting for an answer (`Dismiss`).
    func awaitCalls(_ method: String, atLeast count: Int, timeout: Duration = .seconds(3)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        var seen = try calls(method)
        while seen < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            seen = try calls(method)
        }
        return seen
    }

    /// Adds an item of `account` holding `value` as JSON, modified at `modified` (Unix seconds), of
    /// `app`'s own (default: this test process's, the app its storages are), or no app's when nil.
    func seed(account: String, value: String, modified: Int, app: String? = AppIdentity.current.id) throws {
        try control(["add-item", "--collection", "login", "--label", "seed", "--attr", "service=com.pingidentity.keychainService",
                     "--attr", "account=\(account)", "--attr", "copy=\(modified)"]
                    + (app.map { ["--attr", "\(AppIdentity.attribute)=\($0)"] } ?? [])
                    + ["--secret-base64", Data("\"\(value)\"".utf8).base64EncodedString(), "--modified", "\(modified)"])
    }

    /// A Secret Service client of the fake, in this process, with a connection of its own.
    func client(timeout: Duration = .seconds(30), allowsPrompts: Bool = true,
                allowsPlainTransport: Bool = false, promptTimeout: Duration = .seconds(300)) -> SecretServiceClient {
        SecretServiceClient(bus: .address(busAddress),
                            options: .init(timeout: timeout, allowsPrompts: allowsPrompts,
                                           allowsPlainTransport: allowsPlainTransport, promptTimeout: promptTimeout))
    }

    /// A KeychainStorage of the fake, in this process (every storage of one fake shares one
    /// connection, as in an app).
    func storage(_ account: String, timeout: Duration = .seconds(30), allowsPrompts: Bool = true,
                 allowsPlainTransport: Bool = false, collection: KeychainConfiguration.Collection = .default,
                 promptTimeout: Duration = .seconds(300)) -> KeychainStorage<String> {
        var configuration = KeychainConfiguration(collection: collection, timeout: timeout, allowsPrompts: allowsPrompts,
                                                  allowsPlainTransport: allowsPlainTransport, bus: .address(busAddress))
        configuration.promptTimeout = promptTimeout
        return KeychainStorage<String>(account: account, configuration: configuration)
    }

    deinit {
        service?.stop(signal: SIGKILL)
        bus.stop(signal: SIGKILL)
    }
}

/// What `control state` prints (see dbus-test/fake-secret-service/README.md).
struct FakeState: Decodable {
    struct Scenario: Decodable {
        var name: String
        var params: [String: String]
        var active: Bool
    }
    struct Collection: Decodable {
        var path: String
        var label: String
        var locked: Bool
        var aliases: [String]
    }
    struct Item: Decodable {
        var path: String
        var collection: String
        var label: String
        var attributes: [String: String]
        var secret: String
        var contentType: String
        var locked: Bool
        var secretBytes: Data { Data(base64Encoded: secret)! }
    }
    struct Session: Decodable {
        var path: String
        var algorithm: String
        var client: String
    }
    var scenario: Scenario
    var collections: [Collection]
    var items: [Item]
    var sessions: [Session]
    var sessionsOpened: Int
    var garbledLeft: Int
    var strippedLeft: Int
    var miskeyedLeft: Int
    var calls: [String: Int]

    func collection(_ path: String) -> Collection? { collections.first { $0.path == path } }

    /// Sessions opened and not closed by the client: the client closes the one session in 256
    /// whose shared secret starts with a zero byte and opens another (SessionCrypto), so counts of
    /// sessions the client went on to use are taken here, not from `sessionsOpened`.
    var sessionsKept: Int { sessionsOpened - (calls["Close"] ?? 0) }
}

/// A process whose stdout and stderr go to one log file, that can tell whether it has exited.
final class LoggedProcess: @unchecked Sendable {
    // @unchecked Sendable: `pid` is immutable; `reaped` is only touched under `lock`.
    private let pid: pid_t
    private let lock = NSLock()
    private var reaped = false

    init(_ argv: [String], logPath: String, environment: [String: String]? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        pid = try spawnWithCleanSignals(argv, environment: environment, actions: &actions)
    }

    /// Whether the process has exited (reaped here once it has).
    var hasExited: Bool {
        lock.withLock {
            if reaped { return true }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { reaped = true }
            return reaped
        }
    }

    func stop(signal: Int32 = SIGTERM) {
        lock.withLock {
            guard !reaped else { return }
            Foundation.kill(pid, signal)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            reaped = true
        }
    }
}

/// Runs `body` and returns the SecretServiceError it threw (recording an issue when it returned).
func secretServiceError<Value>(_ body: () async throws(SecretServiceError) -> Value,
                               sourceLocation: SourceLocation = #_sourceLocation) async -> SecretServiceError? {
    do {
        let value = try await body()
        Issue.record("expected a SecretServiceError, got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Runs `body` and returns what it returned or threw, with how long it took.
func timed<Value>(_ body: () async throws -> Value) async -> (Result<Value, any Error>, Duration) {
    let started = ContinuousClock.now
    let result: Result<Value, any Error>
    do { result = .success(try await body()) } catch { result = .failure(error) }
    return (result, ContinuousClock.now - started)
}

/// Runs `body` and returns the SecretServiceError it threw and how long it took.
func timedSecretServiceError<Value>(_ body: () async throws(SecretServiceError) -> Value,
                                    sourceLocation: SourceLocation = #_sourceLocation) async -> (SecretServiceError?, Duration) {
    let started = ContinuousClock.now
    let error = await secretServiceError(body, sourceLocation: sourceLocation)
    return (error, ContinuousClock.now - started)
}

/// Runs `body` and returns the KeychainError it threw and how long it took.
func timedKeychainError(_ body: () async throws -> Void,
                        sourceLocation: SourceLocation = #_sourceLocation) async -> (KeychainError?, Duration) {
    let started = ContinuousClock.now
    let error = await keychainError(body, sourceLocation: sourceLocation)
    return (error, ContinuousClock.now - started)
}

/// The stored JSON of a KeychainStorage<String> value.
func storedJSON(_ value: String) -> Data { Data("\"\(value)\"".utf8) }

/// The fake's `login` collection.
let fakeLogin = "/org/freedesktop/secrets/collection/login"

extension ObjectPath {
    /// The fake's `login` collection (the `default` alias).
    static var fakeLogin: ObjectPath { try! ObjectPath(IntegrationTests.fakeLogin) }
}
