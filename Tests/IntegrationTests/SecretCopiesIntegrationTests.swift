import Foundation
import Testing

extension Integration {
    /// After a call returns, the secret it handled is nowhere in the process's writable memory but
    /// in page-locked buffers (and the caller's own copies, which the probe wipes). Checked by
    /// secret-memory-probe, which scans its own memory after each step.
    @Suite("Copies of secrets left in memory")
    struct SecretCopies {
        static var probe: String { Harness.binaryDirectory.appendingPathComponent("secret-memory-probe").path }

        @Test func aValueLeavesNoCopyWhenCreatedReplacedAndRead() throws {
            let result = try run(Self.probe, ["value", uniqueAccount()], timeout: 120)
            #expect(result.status == 0, "\(result.output)\(result.stderr)")
            #expect(result.output.contains("copies: 0"))
        }

        @Test func aNewEncryptionKeyLeavesNoCopyOutsideItsLockedMemory() throws {
            let result = try run(Self.probe, ["key"], timeout: 120)
            #expect(result.status == 0, "\(result.output)\(result.stderr)")
            #expect(result.output.contains("copies: 0"))
        }

        /// SecretMemory.makeProcessNonDumpable() as the kernel sees it: prctl(PR_GET_DUMPABLE) in
        /// the probe says 1 before and 0 after (no core file; /proc/PID/mem and ptrace are root's only).
        @Test func theNonDumpableOptionMakesTheProcessNonDumpable() throws {
            let result = try run(Self.probe, ["dumpable"], timeout: 60)
            #expect(result.status == 0, "\(result.output)\(result.stderr)")
            #expect(result.output.contains("dumpable before: true"), "\(result.output)")
            #expect(result.output.contains("dumpable after: false (agreed: true)"), "\(result.output)")
        }
    }
}
