import Foundation
import Testing

@testable import FileKeyring

/// A fresh directory under the system's temporary directory, removed with its contents when
/// released (a suite that keeps one in a property loses it after each test) or by `cleanUp()`.
/// A local one is cleaned up with `defer`: ARC may release it after its last use, before the
/// scope ends.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("FileKeyringTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory (not created).
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// The names of the directory's entries.
    func entries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
    }

    func cleanUp() { try? FileManager.default.removeItem(at: url) }

    deinit { cleanUp() }
}

/// The master secret the tests use (libsecret's `SECRET_FILE_TEST_PASSWORD` is text).
let testPassword = "hunter22"

func makeKeyring(_ path: String, password: String = testPassword, lockTimeout: Duration = .seconds(10)) throws -> FileKeyring {
    try FileKeyring(path: path, masterSecret: FileKeyringSecret(utf8: password), lockTimeout: lockTimeout)
}

func secretText(_ secret: FileKeyringSecret) -> String {
    secret.withBytes { span in String(decoding: (0..<span.count).map { span[$0] }, as: UTF8.self) }
}

/// The file's bytes (through the module's own reader: Foundation's `Data(contentsOf:)` leaks a
/// buffer for empty files, which spoils the AddressSanitizer run).
func readBytes(_ path: String) throws -> [UInt8] {
    guard let bytes = try POSIX.readFile(path) else { throw TestFailure("\(path) does not exist") }
    return bytes
}

func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func bytes(hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        result.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return result
}

/// What a finished child process left.
struct ProcessResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs `executable` with `arguments`, `environment` added to this process's (a nil value removes
/// the variable), `input` on stdin; kills it after `timeout` seconds.
func run(
    _ executable: String, _ arguments: [String], environment: [String: String?] = [:], input: String = "",
    timeout: Double = 60
) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for (name, value) in environment { merged[name] = value }
    process.environment = merged
    // Output goes to files, so a chatty child can never block on a full pipe.
    let outputDirectory = try TemporaryDirectory()
    defer { outputDirectory.cleanUp() }
    let outPath = outputDirectory.path("stdout"), errPath = outputDirectory.path("stderr")
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let stdin = Pipe()
    process.standardInput = stdin
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    try await runToEnd(process, timeout: timeout) {
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try? stdin.fileHandleForWriting.close()
    }
    return ProcessResult(
        status: process.terminationStatus,
        stdout: String(decoding: try readBytes(outPath), as: UTF8.self),
        stderr: String(decoding: try readBytes(errPath), as: UTF8.self))
}

/// Starts `process` and waits for its end without blocking a thread: Swift Testing runs every
/// suite of the process on as many cooperative threads as there are cores (two here), and a test
/// blocked waiting for a child stalled the others for seconds (their deadlines then expired).
/// `started` runs once the process runs. Terminates it after `timeout` seconds and throws.
func runToEnd(_ process: Process, timeout: Double, started: () -> Void = {}) async throws {
    try process.run()
    started()
    let watchdog = Task {
        try await Task.sleep(for: .seconds(timeout))
        process.terminate()
    }
    // Waited for on a thread of its own, never a cooperative one. Not with terminationHandler:
    // Foundation then never releases the Process (LeakSanitizer reported each one in the ASan run).
    let exited = ProcessExit(process)
    await withCheckedContinuation { continuation in
        Thread {
            exited.process.waitUntilExit()
            continuation.resume()
        }.start()
    }
    watchdog.cancel()
    if await watchdog.result.isSuccess {
        throw TestFailure("\(process.executableURL?.path ?? "?") did not finish within \(timeout) s")
    }
}

/// A Process handed to the thread that waits for it.
private final class ProcessExit: @unchecked Sendable {
    // @unchecked Sendable: `process` is only waited for on that thread, and read by the caller after
    // the wait ended (the continuation orders the two).
    let process: Process
    init(_ process: Process) { self.process = process }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The directory holding the built products (file-keyring-probe sits next to the test bundle).
var binaryDirectory: URL {
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0]
    var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
    if url.pathExtension == "xctest" { url = url.deletingLastPathComponent() }
    return url
}

var probePath: String { binaryDirectory.appendingPathComponent("file-keyring-probe").path }

/// The environment that puts libsecret (secret-tool, the Python binding) on its file backend
/// with `path` and `password`, without any D-Bus session.
func libsecretFileEnvironment(_ path: String, password: String = testPassword) -> [String: String?] {
    [
        "SECRET_BACKEND": "file", "SECRET_FILE_TEST_PATH": path, "SECRET_FILE_TEST_PASSWORD": password,
        "DBUS_SESSION_BUS_ADDRESS": nil,
    ]
}

/// Runs `secret-tool` on libsecret's file backend.
func secretTool(_ arguments: [String], keyring: String, password: String = testPassword, input: String = "") async throws -> ProcessResult {
    try await run("/usr/bin/secret-tool", arguments, environment: libsecretFileEnvironment(keyring, password: password), input: input)
}

/// Runs a Python script with libsecret's GObject binding (system Python: python3-gi, gir1.2-secret-1).
func libsecretPython(_ script: String, keyring: String, password: String = testPassword) async throws -> ProcessResult {
    let prelude = """
        import gi, sys
        gi.require_version('Secret', '1')
        from gi.repository import Secret, GLib
        SCHEMA = Secret.Schema.new('org.example.FileKeyringTests', Secret.SchemaFlags.DONT_MATCH_NAME, {})

        """
    return try await run("/usr/bin/python3", ["-c", prelude + script], environment: libsecretFileEnvironment(keyring, password: password))
}
