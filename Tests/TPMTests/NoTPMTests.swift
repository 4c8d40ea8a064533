import Foundation
import Testing

/// Without a TPM: SecuredKey's nil paths, and no tpm2-tss library in the process. Each case runs
/// tpm-probe in a process of its own (the test process may have loaded tpm2-tss for other tests),
/// with a TPM connection that cannot answer. (The positive control, a probe that does map tpm2-tss
/// once a TPM answers, is in IntegrationTests' TPM suite.)
@Suite("SecuredKey without a TPM")
struct NoTPMTests {
    @Test("nil, false, and tpm2-tss never loaded", arguments: [
        ["PINGSTORAGE_TPM_TCTI": "none"],
        ["PINGSTORAGE_TPM_TCTI": "device:/nonexistent/tpmrm0"],
        ["PINGSTORAGE_TPM_TCTI": "tabrmd:bus_type=session", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"],
        ["PINGSTORAGE_TPM_TCTI": "tabrmd", "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus_socket"],
        ["PINGSTORAGE_TPM_TCTI": "mssim:port=2321"],
    ])
    func noTPM(environment: [String: String]) async throws {
        // No TPM is an answer, not a wait for the TPM's timeout: the probe times its two calls
        // itself (its own start-up, long on a loaded machine, is not theirs).
        let output = try await runProbe(environment: environment.merging(["TPM_PROBE_TIMING": "1"]) { $1 })
        #expect(output == "available=false\nkey=nil\nanswered-within-timeout=true\ntss-mapped=false\n", "\(environment)")
    }

    /// tpm-probe with the test's environment plus `environment`, waited for on a thread of its own.
    private func runProbe(environment: [String: String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result {
                    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
                    var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
                    if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
                    let process = Process()
                    process.executableURL = directory.appendingPathComponent("tpm-probe")
                    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
                    let output = Pipe()
                    process.standardOutput = output
                    try process.run()
                    let data = output.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    return String(decoding: data, as: UTF8.self)
                })
            }
        }
    }
}
