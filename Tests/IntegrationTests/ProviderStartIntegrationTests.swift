import Foundation
import PingStorage
import Testing

/// A provider the bus starts on demand (D-Bus activation, a real service file on the private bus)
/// that does not come up (issue 38): one that exits at start is a no-service error as soon as the
/// bus reports it, naming the failure; one that starts and never takes its name costs the deadline,
/// and the message says so. The doctor says the same.
extension Integration.Faults {
    @Test(.enabled(if: Harness.provider == "gnome-keyring", "restarts the provider; one provider is enough"))
    func aProviderThatExitsAtStartIsNamedAtOnce() async throws {
        try await withActivatableProvider { activate in
            let storage = KeychainStorage<String>(account: uniqueAccount(), configuration: KeychainConfiguration(timeout: .seconds(20)))
            try await activate("/bin/sh -c 'exit 3'")
            var started = ContinuousClock.now
            let exited = await keychainError { _ = try await storage.get() }
            #expect(ContinuousClock.now - started < .seconds(5), "the bus said it at once; it took \(ContinuousClock.now - started)")
            #expect(exited?.kind == "noSecretService", "\(String(describing: exited))")
            #expect(exited?.errorDescription == "The keyring service could not be started: the bus started it and it exited "
                        + "with status 3 before it answered.")
            #expect(exited?.detail?.contains("org.freedesktop.DBus.Error.Spawn.ChildExited") == true)

            started = ContinuousClock.now
            let doctor = try await runPingKeyring(["doctor", "--timeout", "20"])
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(doctor.status == 3)
            #expect(doctor.output.contains("The keyring service could not be started: the bus started it and it exited with "
                                           + "status 3 before it answered."), "\(doctor.output)")
            #expect(doctor.output.contains("fix: the bus starts a provider when asked"), "\(doctor.output)")

            try await activate("/bin/sh -c 'kill -KILL $$'")
            started = ContinuousClock.now
            let killed = await keychainError { try await storage.save(item: "never written") }
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(killed?.kind == "noSecretService", "\(String(describing: killed))")
            #expect(killed?.errorDescription?.contains("it was ended by signal 9 before it answered") == true,
                    "\(String(describing: killed))")
        }
    }

    @Test(.enabled(if: Harness.provider == "gnome-keyring", "restarts the provider; one provider is enough"))
    func aProviderThatStartsButNeverAnswersCostsTheDeadlineAndSaysSo() async throws {
        let pidFile = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]! + "/silent-provider.pid"
        try await withActivatableProvider { activate in
            // Started, and never takes the name (the bus cannot tell it from a daemon that forks).
            try await activate("/bin/sh -c 'echo $$ > \(pidFile); exec sleep 120'")
            defer {
                if let pid = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                    kill(pid, SIGKILL)
                }
            }
            let storage = KeychainStorage<String>(account: uniqueAccount(), configuration: KeychainConfiguration(timeout: .seconds(3)))
            var started = ContinuousClock.now
            let silent = await keychainError { _ = try await storage.get() }
            let waited = ContinuousClock.now - started
            #expect(waited >= .seconds(3) && waited < .seconds(10), "it waited \(waited)")
            #expect(silent?.kind == "timedOut", "\(String(describing: silent))")
            #expect(silent?.errorDescription?.hasPrefix("The keyring service was started but did not answer within 3 s, "
                                                        + "the call's whole timeout") == true, "\(String(describing: silent))")

            started = ContinuousClock.now
            let doctor = try await runPingKeyring(["doctor", "--timeout", "3"])
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(doctor.status == 3)
            #expect(doctor.output.contains("The keyring service was started but did not answer within 3 s"), "\(doctor.output)")
            #expect(doctor.output.contains("fix: the bus started a provider from its D-Bus service file"), "\(doctor.output)")
        }
    }
}

/// Stops the provider, runs `body` with a way to make the bus start `org.freedesktop.secrets` with
/// a command of the test's (a service file in the private bus's only service directory,
/// `$DBUS_TEST_DIR/services`, and the bus's configuration reloaded), then removes the file and
/// starts the provider again, whatever `body` did.
private func withActivatableProvider(_ body: (_ activate: (String) async throws -> Void) async throws -> Void) async throws {
    let serviceFile = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]! + "/services/org.freedesktop.secrets.service"
    try await Harness.waitUntilPersisted()
    // On a thread of their own: a stop or start takes seconds, which must not hold a cooperative thread.
    try await offThePool { try Harness.ctl("stop") }
    let outcome: Result<Void, any Error>
    do {
        try await body { command in
            try "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=\(command)\n"
                .write(toFile: serviceFile, atomically: true, encoding: .utf8)
            try await reloadBusConfiguration()
        }
        outcome = .success(())
    } catch {
        outcome = .failure(error)
    }
    try? FileManager.default.removeItem(atPath: serviceFile)
    try await reloadBusConfiguration()
    try await offThePool { try Harness.ctl("start") }
    try outcome.get()
}

/// Has the private bus read its service directory again.
private func reloadBusConfiguration() async throws {
    let reloaded = try await run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                                           "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.ReloadConfig"])
    try #require(reloaded.status == 0, "ReloadConfig: \(reloaded.stderr)")
}
