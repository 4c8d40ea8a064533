import Foundation
import PingStorage
import Testing

/// The fake Secret Service of dbus-test/fake-secret-service on a bus of its own, next to the real
/// keyring of the test run: each test gets a fresh one and drives it with `control`.
final class FakeSecretServiceInstance: @unchecked Sendable {
    // @unchecked Sendable: all properties are immutable after init; the processes are only signalled.
    let directory: String
    let busAddress: String
    private let bus: BackgroundProcess
    private var service: BackgroundProcess?
    private let dbusTest: String

    init(scenario: String = "normal") throws {
        let environment = ProcessInfo.processInfo.environment
        dbusTest = URL(fileURLWithPath: Harness.ctlPath).deletingLastPathComponent().path
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
            if address.isEmpty { usleep(20_000) }
        }
        guard !address.isEmpty else { throw HarnessError("the fake's bus did not start") }
        busAddress = address
        try start(scenario: scenario)
    }

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        environment["DBUS_TEST_DIR"] = directory
        return environment
    }

    /// Starts (or starts again, with the same state file) the service.
    func start(scenario: String = "normal") throws {
        var environment = self.environment
        environment["FAKE_SECRET_SERVICE_SCENARIO"] = scenario
        service = try BackgroundProcess(
            ["/usr/bin/python3", dbusTest + "/fake-secret-service/service.py", "--state", directory + "/state.json"],
            stdoutPath: directory + "/service.log", environment: environment)
        for _ in 0..<250 {
            let owned = try run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                                          "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.NameHasOwner",
                                          "org.freedesktop.secrets"], environment: self.environment, timeout: 10)
            if owned.output.contains("true") { return }
            usleep(20_000)
        }
        throw HarnessError("the fake Secret Service did not start")
    }

    func kill() { service?.stop(signal: SIGKILL) }

    @discardableResult
    func control(_ arguments: [String]) throws -> String {
        let result = try run("/usr/bin/python3", [dbusTest + "/fake-secret-service/control"] + arguments,
                             environment: environment, timeout: 20)
        guard result.status == 0 else { throw HarnessError("control \(arguments): \(result.stderr)") }
        return result.output
    }

    /// The items as the fake holds them: path → (attributes, secret).
    func items() throws -> [(path: String, attributes: [String: String], secret: Data)] {
        let json = try JSONSerialization.jsonObject(with: Data(try control(["state"]).utf8)) as! [String: Any]
        return (json["items"] as! [[String: Any]]).map { item in
            (item["path"] as! String, item["attributes"] as! [String: String],
             Data(base64Encoded: item["secret"] as! String)!)
        }
    }

    func seed(account: String, value: String, modified: Int) throws {
        try control(["add-item", "--collection", "login", "--label", "seed", "--attr", "service=com.pingidentity.keychainService",
                     "--attr", "account=\(account)", "--attr", "copy=\(modified)",
                     "--secret-base64", Data("\"\(value)\"".utf8).base64EncodedString(), "--modified", "\(modified)"])
    }

    /// Runs keychain-probe against this fake.
    func probe(_ arguments: [String], input: Data? = nil, timeout: TimeInterval = 60) throws -> ProcessResult {
        try run(Harness.probePath, arguments, input: input, environment: environment, timeout: timeout)
    }

    deinit {
        service?.stop(signal: SIGKILL)
        bus.stop(signal: SIGKILL)
    }
}

extension Integration {
    /// The fault scenarios of issue 4, each ending in a typed error or the right result within the
    /// deadline, with the provider's items unchanged (checked in the fake's own state).
    @Suite("Faults through the fake Secret Service")
    struct FakeFaults {
        let account = "acct"

        func expectError(_ result: ProcessResult, _ kind: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(result.status == 3, "exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
            #expect(result.stderr.hasPrefix("error: \(kind):"), "\(result.stderr)", sourceLocation: sourceLocation)
        }

        func timed(_ body: () throws -> ProcessResult) rethrows -> (ProcessResult, Duration) {
            let started = ContinuousClock.now
            let result = try body()
            return (result, ContinuousClock.now - started)
        }

        @Test func lockedWithPromptThatCompletesUnlocksAndReads() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "kept"]).status == 0)
            try fake.control(["scenario", "locked-prompt-completes"])
            let (neverPrompt, elapsed) = try timed { try fake.probe(["--no-prompt", "get", account]) }
            expectError(neverPrompt, "locked")
            #expect(elapsed < .seconds(2), "never-prompt fails at once")
            let read = try fake.probe(["get", account])
            #expect(read.output == "kept\n", "\(read.stderr)")
        }

        @Test func lockedWithPromptDismissedIsPromptDismissedAndTouchesNothing() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "kept"]).status == 0)
            let before = try fake.items()
            try fake.control(["scenario", "locked-prompt-dismissed"])
            expectError(try fake.probe(["get", account]), "promptDismissed")
            expectError(try fake.probe(["save", account, "new"]), "promptDismissed")
            expectError(try fake.probe(["delete", account]), "promptDismissed")
            expectError(try fake.probe(["get", "missing-account"]), "promptDismissed")
            let after = try fake.items()
            #expect(after.map(\.secret) == before.map(\.secret) && after.map(\.path) == before.map(\.path))
        }

        @Test func promptThatNeverCompletesEndsAtTheDeadline() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "kept"]).status == 0)
            try fake.control(["scenario", "prompt-never-completes"])
            let (result, elapsed) = try timed { try fake.probe(["--timeout-ms", "2000", "get", account], timeout: 30) }
            expectError(result, "timedOut")
            #expect(elapsed < .seconds(6), "\(elapsed)")
            try fake.control(["scenario", "normal"])
            #expect(try fake.items().first?.secret == Data("\"kept\"".utf8))
        }

        /// KeePassXC crashing while it shows a prompt: libsecret would wait for the prompt forever;
        /// the call ends as soon as the bus reports the provider gone, long before its deadline.
        @Test func providerExitingDuringAPromptEndsTheCallAtOnce() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "kept"]).status == 0)
            try fake.control(["scenario", "prompt-then-exit"])
            let (result, elapsed) = try timed { try fake.probe(["--timeout-ms", "20000", "get", account], timeout: 60) }
            // libsecret logs a GLib-GIO-CRITICAL (g_task_return_error with no error) before our line.
            #expect(result.status == 3, "exit \(result.status): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").contains { $0.hasPrefix("error: noSecretService:") }, "\(result.stderr)")
            #expect(elapsed < .seconds(5), "ended when the provider went away, not at the 20 s deadline: \(elapsed)")
        }

        @Test func promptResultOfTheWrongTypeDoesNotHang() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "kept"]).status == 0)
            try fake.control(["scenario", "prompt-wrong-type"])
            let (result, elapsed) = try timed { try fake.probe(["--timeout-ms", "2000", "get", account], timeout: 30) }
            #expect(result.status == 3, "a typed error: \(result.stderr)")
            #expect(elapsed < .seconds(6), "\(elapsed)")
        }

        @Test func slowRepliesEndAtTheDeadline() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "kept"]).status == 0)
            try fake.control(["scenario", "slow", "delay=10"])
            let (result, elapsed) = try timed { try fake.probe(["--timeout-ms", "1500", "get", account], timeout: 30) }
            expectError(result, "timedOut")
            #expect(elapsed >= .milliseconds(1400) && elapsed < .seconds(5), "\(elapsed)")
            let (save, saveElapsed) = try timed { try fake.probe(["--timeout-ms", "1500", "save", account, "new"], timeout: 30) }
            expectError(save, "timedOut")
            #expect(saveElapsed < .seconds(5))
        }

        @Test func serviceExitingMidCallLosesNothingAndTheNextCallReconnects() async throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "before"]).status == 0)
            // One process: a read works, then the service dies while a save is in flight, is
            // started again, and the next call of the same process works without being restarted.
            let marker = fake.directory + "/switched"
            let restarted = fake.directory + "/restarted"
            let steps = "get\ntouch \(fake.directory)/first-done\nawait \(marker)\nsave after\nawait \(restarted)\nget\n"
            let probe = Task.detached { try fake.probe(["steps", account], input: Data(steps.utf8), timeout: 60) }
            for _ in 0..<500 where !FileManager.default.fileExists(atPath: fake.directory + "/first-done") { usleep(10_000) }
            try fake.control(["scenario", "exit-mid-call", "method=SetSecret,CreateItem", "when=before"])
            _ = FileManager.default.createFile(atPath: marker, contents: nil)
            // The service exits when the save arrives; start it again with the same state.
            for _ in 0..<500 {
                let owned = try run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                                              "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.NameHasOwner",
                                              "org.freedesktop.secrets"], environment: fake.environment, timeout: 10)
                if owned.output.contains("false") { break }
                usleep(10_000)
            }
            fake.kill()
            try fake.start()
            _ = FileManager.default.createFile(atPath: restarted, contents: nil)
            let output = try await probe.value
            let lines = output.output.split(separator: "\n").map(String.init)
            #expect(lines.first == "before")
            #expect(lines.count == 6, "\(lines)")
            #expect(lines[3].hasPrefix("error: "), "the save in flight fails with a typed error: \(lines)")
            #expect(lines.last == "before", "nothing lost, and the same process reads again after the restart")
        }

        @Test func plainOnlyProviderIsRefusedUnlessAllowed() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance(scenario: "plain-only")
            expectError(try fake.probe(["save", account, "x"]), "insecureTransport")
            #expect(try fake.items().isEmpty, "nothing was sent")
            #expect(try fake.probe(["--allow-plain", "save", account, "x"]).status == 0)
            #expect(try fake.probe(["--allow-plain", "get", account]).output == "x\n")
        }

        @Test func noDefaultAliasNamesTheFixAndTheCollections() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance(scenario: "no-default-alias")
            let result = try fake.probe(["save", account, "x"])
            expectError(result, "collectionNotFound")
            #expect(result.stderr.contains("it has: Login"), "names what exists")
            #expect(try fake.items().isEmpty, "no collection or item created silently")
            #expect(try fake.probe(["--collection", "/org/freedesktop/secrets/collection/login", "save", account, "x"]).status == 0)
        }

        @Test func duplicatesReadTheNewestAndSaveLeavesOne() throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            try fake.seed(account: account, value: "middle", modified: 1_700_000_100)
            try fake.seed(account: account, value: "newest", modified: 1_700_000_200)
            try fake.seed(account: account, value: "oldest", modified: 1_700_000_000)
            try fake.control(["scenario", "duplicates", "order=reverse"])
            #expect(try fake.probe(["get", account]).output == "newest\n")
            #expect(try fake.items().count == 3)
            #expect(try fake.probe(["save", account, "one"]).status == 0)
            let items = try fake.items()
            #expect(items.count == 1)
            #expect(items.first?.secret == Data("\"one\"".utf8))
        }

        @Test func forgottenSessionsAreReopenedWithoutAFailedCall() async throws {
            try Harness.requireHarness()
            let fake = try FakeSecretServiceInstance()
            #expect(try fake.probe(["save", account, "kept"]).status == 0)
            let marker = fake.directory + "/switched"
            let steps = "get\ntouch \(fake.directory)/first-done\nawait \(marker)\nget\nsave changed\nget\n"
            let probe = Task.detached { try fake.probe(["steps", account], input: Data(steps.utf8), timeout: 60) }
            for _ in 0..<500 where !FileManager.default.fileExists(atPath: fake.directory + "/first-done") { usleep(10_000) }
            try fake.control(["scenario", "no-session-after-restart"])
            _ = FileManager.default.createFile(atPath: marker, contents: nil)
            let lines = try await probe.value.output.split(separator: "\n").map(String.init)
            #expect(lines == ["kept", "ok", "ok", "kept", "ok", "changed"], "\(lines)")
        }
    }
}
