import Foundation

/// What a finished child process left.
struct ProcessOutput: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// The readme-snippets executable, built next to this test bundle.
var readmeSnippetsPath: String {
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
    if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
    return directory.appendingPathComponent("readme-snippets").path
}

/// Runs `executable` with `arguments` and no input, waiting for it on a thread of its own (a test
/// waiting on one of Swift's cooperative threads, as many as cores, stalls every other test).
/// Output goes through files, so a chatty child never blocks on a full pipe. `directory`: the
/// child's working directory (nil: this process's).
func runProcess(_ executable: String, _ arguments: [String], in directory: URL? = nil) async throws -> ProcessOutput {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try runProcessBlocking(executable, arguments, in: directory) })
        }
    }
}

private func runProcessBlocking(_ executable: String, _ arguments: [String], in workingDirectory: URL?) throws -> ProcessOutput {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-process-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let out = directory.appendingPathComponent("stdout"), err = directory.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let workingDirectory { process.currentDirectoryURL = workingDirectory }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    try process.run()
    process.waitUntilExit()
    return ProcessOutput(
        status: process.terminationStatus,
        stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self),
        stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
}
