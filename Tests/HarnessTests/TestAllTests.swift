import Foundation
import Testing

/// dbus-test/test-all's last line (issue 38): the tests that ran in all its parts, Swift Testing's
/// and XCTest's read from each part's output, and the sandbox parts, rather than XCTest's
/// "Executed 0 tests". The script runs as it is, next to a stub `run` that prints what each part of
/// `swift test` prints (the lines of a real run, colours included) instead of running it.
@Suite("test-all: its last line counts the tests that ran")
struct TestAllTests {
    /// What the stub prints for the first part, and for a sandbox part: XCTest's lines (its
    /// bundle's total, then the run's), Swift Testing's last line, and XCTest's again last.
    static let firstPart = """
        Building for debugging...
        Test Suite 'All tests' started at 2026-12-04 21:36:56.726
        Test Suite 'debug.xctest' started at 2026-12-04 21:36:56.726
        Test Suite 'debug.xctest' passed at 2026-12-04 21:36:56.736
        \t Executed 2 tests, with 0 failures (0 unexpected) in 0.01 (0.01) seconds
        Test Suite 'All tests' passed at 2026-12-04 21:36:56.736
        \t Executed 2 tests, with 0 failures (0 unexpected) in 0.01 (0.01) seconds
        ◇ Test run started.
        \u{1B}[1;32m✔\u{1B}[0m Test run with 1040 tests in 180 suites passed after 300.123 seconds.
        """
    static func sandboxPart(_ tests: Int) -> String {
        """
        ✔ Test run with \(tests) test\(tests == 1 ? "" : "s") in 2 suites passed after 12.650 seconds.
        Test Suite 'Selected tests' passed at 2026-12-04 21:40:00.001
        \t Executed 0 tests, with 0 failures (0 unexpected) in 0.0 (0.0) seconds
        """
    }

    @Test func everyPartPassed() async throws {
        let outcome = try await runTestAll(parts: [
            "--tpm": (Self.firstPart, 0),
            "FileKeyringThroughThePortal": (Self.sandboxPart(11), 0),
            "none-backend": (Self.sandboxPart(5), 0),
            "no-secret": (Self.sandboxPart(5), 0),
            "absent": (Self.sandboxPart(1), 0),
            "MovingIn": (Self.sandboxPart(7), 0),
            "--prompter": (Self.sandboxPart(13), 0),
        ])
        #expect(outcome.status == 0)
        let lines = outcome.stdout.split(separator: "\n").map(String.init)
        #expect(lines.last == "dbus-test/test-all: 1084 tests ran (1082 Swift Testing, 2 XCTest) in 1 part against gnome-keyring "
                    + "with a software TPM, 5 sandbox parts and 1 prompter part; all passed", "\(outcome.stdout)")
        #expect(outcome.stdout.contains("Executed 0 tests"), "each part's output is shown as it comes")
        #expect(outcome.stdout.contains("pass  sandbox: the host's keyring in reach (moving in)\n"), "the summary is still there")
    }

    @Test func aFailedPartAndOneThatCountedNothingAreSaid() async throws {
        let outcome = try await runTestAll(parts: [
            "--tpm": (Self.firstPart, 0),
            "FileKeyringThroughThePortal": ("✘ Test run with 11 tests in 2 suites failed after 9.0 seconds with 1 issue.", 1),
            "none-backend": (Self.sandboxPart(5), 0),
            "no-secret": (Self.sandboxPart(5), 0),
            "absent": ("error: fatalError", 1),
            "MovingIn": (Self.sandboxPart(7), 0),
            "--prompter": (Self.sandboxPart(13), 0),
        ])
        #expect(outcome.status == 1, "the first failing part's status")
        #expect(outcome.stdout.split(separator: "\n").map(String.init).last == "dbus-test/test-all: 1083 tests ran (1081 Swift Testing, 2 XCTest) "
                    + "in 1 part against gnome-keyring with a software TPM, 5 sandbox parts and 1 prompter part; 2 parts FAILED "
                    + "(no test count from: sandbox: portal absent (typed errors within the deadline))", "\(outcome.stdout)")
    }

    /// Runs a copy of dbus-test/test-all whose `run` prints, for the part whose arguments contain
    /// a key of `parts`, its text, and exits with its status.
    private func runTestAll(parts: [String: (text: String, status: Int32)]) async throws -> StubSystem.Outcome {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("test-all-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let harness = root.appendingPathComponent("dbus-test")
        try FileManager.default.createDirectory(at: harness, withIntermediateDirectories: true)
        try StubSystem.writeExecutable(harness.appendingPathComponent("test-all").path,
                                       try String(contentsOf: repositoryRoot.appendingPathComponent("dbus-test/test-all"), encoding: .utf8))
        var stub = "#!/usr/bin/env bash\ncase \"$*\" in\n"
        for (key, part) in parts {
            let file = root.appendingPathComponent("part-\(key)")
            try (part.text + "\n").write(to: file, atomically: true, encoding: .utf8)
            stub += "    *\(key)*) cat '\(file.path)'; exit \(part.status) ;;\n"
        }
        stub += "    *) echo \"stub run: no part for $*\" >&2; exit 99 ;;\nesac\n"
        try StubSystem.writeExecutable(harness.appendingPathComponent("run").path, stub)

        let process = Process()
        process.executableURL = harness.appendingPathComponent("test-all")
        process.environment = ["PATH": "/usr/bin:/bin", "TMPDIR": root.path, "LANG": "C.UTF-8"]
        let output = root.appendingPathComponent("output")
        try Data().write(to: output)
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let text = try String(contentsOf: output, encoding: .utf8)
        #expect(!text.contains("stub run: no part"), "\(text)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasPrefix("test-all.") }) == [],
                "its logs are removed")
        return StubSystem.Outcome(status: process.terminationStatus, stdout: text, stderr: "")
    }
}
