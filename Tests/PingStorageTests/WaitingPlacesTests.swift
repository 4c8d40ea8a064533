import Foundation
import Testing
import Waiting
@testable import PingStorage

/// Where PingStorage's waits end: locks, shared work and remembered reads use the toolkit's light
/// timekeeper, so storage that never talks to D-Bus never starts SecretService's GLib loop thread.
@Suite("Waits outside SecretService start no GLib loop")
struct WaitingPlacesTests {
    @Test func aContendedCachedMemoryStorageStartsNoSecretServiceThread() async throws {
        let (status, output) = try await runProbe(["contended-memory"])
        #expect(status == 0)
        #expect(output.contains("contended"), "the saves waited for one another: \(output)")
        let threads = output.split(separator: "\n").filter { $0.hasPrefix("thread ") }
        #expect(!threads.isEmpty, "the probe listed its threads")
        #expect(!threads.contains("thread secret-service"), "\(threads)")
    }

    @Test func aLockWaitEndsOnTheLightTimekeeperWithTheToolkitsError() async throws {
        let locks = AccountLocks()
        let hold = OneShot<Void, WaitError>(operation: "hold", deadline: Deadline(timeout: .seconds(30)), timekeeper: .light)
        let holder = Task { try await locks.withLock("k", deadline: Deadline(timeout: .seconds(30))) { try await hold.value() } }
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        await #expect(throws: WaitError.timedOut("wait for another call on the same account", after: .milliseconds(100))) {
            try await locks.withLock("k", deadline: Deadline(timeout: .milliseconds(100))) { 1 }
        }
        // Ended by its own 100 ms deadline, not by the holder (which holds for 30 s): a bound far
        // from both, because a full parallel run on two cores can keep the waiter from being
        // resumed for seconds (5.2 s was seen in CI). How fast is the benchmark's business.
        #expect(ContinuousClock.now - started < .seconds(25))
        hold.finish(.success(()))
        try await holder.value
    }

    /// Runs keychain-probe (built next to the test binary) and returns its standard output, waiting
    /// for it on a thread of its own, never on one of Swift's cooperative threads.
    private func runProbe(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try Self.runBlocking(arguments) }) }
        }
    }

    private static func runBlocking(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
        let process = Process()
        process.executableURL = directory.appendingPathComponent("keychain-probe")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
