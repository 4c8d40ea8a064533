import Foundation
import PingStorage
import Testing

extension Integration.PingKeyring {
    // MARK: --backend and PINGSTORAGE_BACKEND on the host

    /// Where the file keyring is for the processes this test starts (libsecret's rule).
    private static var fileKeyringPath: String {
        let environment = ProcessInfo.processInfo.environment
        let data = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (environment["HOME"] ?? "") + "/.local/share"
        return data + "/keyrings/default.keyring"
    }

    @Test func theFileKeyringOutsideASandboxNeedsTheSecretPortal() async throws {
        // dbus-test/run --isolated starts no portal, and its bus activates nothing.
        let started = ContinuousClock.now
        let listed = try await runPingKeyring(["list", "--backend", "file-keyring"], timeout: 30)
        #expect(listed.status == 3)
        #expect(listed.stderr.hasPrefix("ping-keyring: error: noSecretService:"), "\(listed.stderr)")
        #expect(listed.stderr.contains("Secret portal"))

        let doctor = try await runPingKeyring(["doctor", "--backend", "file-keyring"], timeout: 30)
        #expect(ContinuousClock.now - started < .seconds(10), "a diagnosis, not a wait")
        #expect(doctor.status == 3)
        let lines = doctor.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "ping-keyring doctor (file keyring: \(Self.fileKeyringPath))")
        #expect(lines.contains("ok    backend            file keyring \(Self.fileKeyringPath) (set by --backend file-keyring)"))
        let portal = try #require(lines.firstIndex { $0.hasPrefix("FAIL  Secret portal ") }, "\(doctor.output)")
        #expect(lines[portal...].contains { $0.contains("fix: install xdg-desktop-portal with a Secret backend") })
        #expect(lines.contains { $0.hasPrefix("skip  Secret Service     skipped: the file keyring is used: set by --backend") })
        #expect(lines.last == "1 check failed (exit status 3).")
        #expect(!FileManager.default.fileExists(atPath: Self.fileKeyringPath), "nothing is created without the secret")
    }

    @Test func theOptionWinsOverTheVariableAndABadVariableIsAUsageError() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PINGSTORAGE_BACKEND"] = "kwallet"
        let listed = try await runPingKeyring(["list"], environment: environment)
        #expect(listed.status == 2)
        #expect(listed.stderr.hasPrefix("ping-keyring: error: invalidArgument: PINGSTORAGE_BACKEND is 'kwallet'"), "\(listed.stderr)")
        let doctor = try jsonObject(try await runPingKeyring(["doctor", "--json"], environment: environment))
        #expect(doctor["exitCode"] as? Int == 2)
        #expect(doctor["backend"] is NSNull)
        let checks = try #require(doctor["checks"] as? [[String: Any]])
        #expect(checks[1]["id"] as? String == "backend")
        #expect(checks[1]["status"] as? String == "fail")

        environment["PINGSTORAGE_BACKEND"] = "file-keyring"
        let chosen = try await runPingKeyring(["list", "--backend", "secret-service", "--verbose"], environment: environment)
        #expect(chosen.status == 0, "\(chosen.stderr)")
        #expect(chosen.stderr == "backend: Secret Service (set by --backend secret-service)\n")
        // Without the option the variable applies: the file keyring, which needs the portal.
        let variable = try await runPingKeyring(["doctor", "--json"], environment: environment, timeout: 30)
        #expect(variable.status == 3)
        let backend = try #require(try jsonObject(variable)["backend"] as? [String: Any])
        #expect(backend["kind"] as? String == "fileKeyring")
        #expect(backend["reason"] as? String == "PINGSTORAGE_BACKEND=file-keyring")
    }
}
