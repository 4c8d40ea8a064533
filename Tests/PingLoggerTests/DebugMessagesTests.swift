import Foundation
import Glibc
import PingLogger
import Testing

/// Debug messages stay out of the journal and standard error unless the user turns them on
/// (`PINGSTORAGE_LOG_DEBUG`): the journal keeps debug messages by default, and the SDK's modules
/// log request and response bodies, tokens among them, at debug.
@Suite struct DebugMessagesTests {
    @Test func onlyTheseValuesTurnDebugMessagesOn() {
        for value in ["1", "true", "TRUE", "yes", "On"] { #expect(StandardLogger.debugTurnedOn(by: value), "\(value)") }
        for value in [nil, "", "0", "false", "no", "off", "debug", " 1"] {
            #expect(!StandardLogger.debugTurnedOn(by: value), "\(String(describing: value))")
        }
        #expect(StandardLogger.debugVariable == "PINGSTORAGE_LOG_DEBUG")
    }

    @Test func aLoggerWithDebugOffSendsNoDebugMessageAndEveryOtherLevel() throws {
        let journal = try DatagramReceiver(timeout: 1)
        let pipe = try Pipe()
        let toJournal = StandardLogger(
            destination: LogDestination(journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest"),
            logsDebugMessages: false)
        let toStderr = StandardLogger(destination: LogDestination(journalSocketPath: nil, fallbackDescriptor: pipe.writeEnd),
                                      logsDebugMessages: false)
        for logger in [toJournal, toStderr] {
            logger.d("debug marker")
            logger.i("info marker")
            logger.w("warning marker", error: nil)
            logger.e("error marker", error: nil)
        }
        var messages: [String] = []
        while let received = journal.receive() { messages.append(journalFields(received.payload)?["MESSAGE"] ?? "?") }
        #expect(messages == ["info marker", "warning marker", "error marker"])
        let lines = pipe.drain().split(separator: "\n").map { String($0.split(separator: " ", maxSplits: 2)[2]) }
        #expect(lines == ["INFO info marker", "WARNING warning marker", "ERROR error marker"])
    }

    /// `log-probe` sets `LogManager.logger = LogManager.standard` and logs a marker at each level,
    /// in a namespace (bwrap) where the journal's socket path is either absent (standard error) or
    /// a stand-in the test reads: what a real program writes, with its real environment.
    @Test(arguments: [false, true], [nil, "1"])
    func aRealProcessLogsDebugOnlyWhenTheUserTurnsItOn(journalPresent: Bool, setting: String?) async throws {
        let marker = "marker-\(UUID().uuidString)"
        let journal = try DatagramReceiver(timeout: 1)
        var environment = ProcessInfo.processInfo.environment
        environment[StandardLogger.debugVariable] = setting
        var arguments = ["--dev-bind", "/", "/", "--tmpfs", "/run"]
        if journalPresent {
            arguments += ["--dir", "/run/systemd/journal", "--bind", journal.path, "/run/systemd/journal/socket"]
        }
        let result = try await runProbe(bwrapArguments: arguments, marker: marker, environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        var journalMessages: [String] = []
        while let received = journal.receive() { journalMessages.append(journalFields(received.payload)?["MESSAGE"] ?? "?") }
        let stderrMessages = result.stderr.split(separator: "\n").compactMap { line in
            line.firstRange(of: "[PingStorage] ").map { String(line[$0.upperBound...]) }
        }
        let debugOn = setting != nil
        let expected = (debugOn ? ["debug \(marker)"] : []) + ["info \(marker)", "warning \(marker)", "error \(marker)"]
        let stderrExpected = expected.map { message in
            let level = message.prefix { $0 != " " }.uppercased()
            return "\(level) \(message)"
        }
        if journalPresent {
            #expect(journalMessages == expected)
            #expect(!result.stderr.contains(marker), "\(result.stderr)")
        } else {
            #expect(journalMessages.isEmpty)
            #expect(stderrMessages == stderrExpected)
        }
    }

    private struct ProbeResult {
        var status: Int32
        var stderr: String
    }

    /// Runs `bwrap ARGUMENTS -- log-probe MARKER`, with `environment`, waiting for it on a thread of
    /// its own: never on one of Swift's cooperative threads, which the other suites need meanwhile.
    private func runProbe(bwrapArguments: [String], marker: String, environment: [String: String]) async throws -> ProbeResult {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result {
                    try Self.runBlocking(bwrapArguments: bwrapArguments, marker: marker, environment: environment)
                })
            }
        }
    }

    private static func runBlocking(bwrapArguments: [String], marker: String, environment: [String: String]) throws -> ProbeResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/bwrap")
        process.arguments = bwrapArguments + ["--", Self.probePath, marker]
        process.environment = environment
        let errors = Foundation.Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ProbeResult(status: process.terminationStatus, stderr: String(decoding: data, as: UTF8.self))
    }

    /// log-probe, built next to the test binary.
    static var probePath: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
        return directory.appendingPathComponent("log-probe").path
    }
}
