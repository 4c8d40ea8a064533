import Foundation
import PingStorage
import SecretService

/// A freshly started gnome-keyring without any keyring (an empty keyrings directory, not unlocked
/// at start: a first login without PAM, or a new account), on a bus of its own that starts what
/// the harness's bus starts: nothing, or under `--prompter` GNOME's prompter, with the display
/// `display` in the bus's activation environment (nil: none, as over SSH).
final class FreshGnomeKeyring: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; the processes are only signalled.
    let directory: String
    let address: String
    let environment: [String: String]
    private let bus: BackgroundProcess
    private var daemon: LoggedProcess

    init(display: String? = nil) async throws {
        let harness = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]!
        directory = harness + "/fresh-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        let addressFile = directory + "/bus-address"
        // The bus's activation environment is its own: the prompter gets the display from here.
        var busEnvironment = ProcessInfo.processInfo.environment
        busEnvironment["DISPLAY"] = display
        bus = try BackgroundProcess(["dbus-daemon", "--config-file=\(harness)/session.conf", "--nofork", "--print-address=1"],
                                    stdoutPath: addressFile, environment: busEnvironment)
        var address = ""
        for _ in 0..<200 where address.isEmpty {
            address = (try? String(contentsOfFile: addressFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if address.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        }
        self.address = address
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        environment["HOME"] = directory
        environment["XDG_DATA_HOME"] = directory + "/data"
        // A runtime directory of its own: gnome-keyring-daemon looks for another daemon through
        // the control socket in $XDG_RUNTIME_DIR/keyring, and sharing the harness's, it found the
        // harness's daemon and took over from it; the tests after this one then found no Secret
        // Service at all (noSecretService, 70 of them in one run).
        try FileManager.default.createDirectory(atPath: directory + "/run", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        environment["XDG_RUNTIME_DIR"] = directory + "/run"
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        self.environment = environment
        daemon = try LoggedProcess(["/usr/bin/gnome-keyring-daemon", "--foreground", "--components=secrets"],
                                   logPath: directory + "/gnome-keyring.log", environment: environment)
        guard try await Self.answers(address) else { throw HarnessError("the fresh gnome-keyring-daemon did not start") }
    }

    /// Whether a Secret Service answers on `address` within 10 s (the daemon owns its name).
    private static func answers(_ address: String) async throws -> Bool {
        let probe = SecretServiceClient(bus: .address(address), options: .init(timeout: .seconds(10), allowsPrompts: false))
        for _ in 0..<100 {
            let error = await secretServiceErrorIfAny { () async throws(SecretServiceError) in _ = try await probe.collections() }
            guard error?.code == .noSecretService else { return error == nil }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// What the first-run advice says to do on a machine without a desktop: GNOME Keyring started
    /// again (`--replace`) with `--unlock` and a password on its standard input, which creates the
    /// login keyring. Returns once the new daemon answers.
    func replaceWithUnlockedLoginKeyring(password: String) async throws {
        let passwordFile = directory + "/password"
        _ = FileManager.default.createFile(atPath: passwordFile, contents: Data(password.utf8), attributes: [.posixPermissions: 0o600])
        let replaced = daemon
        daemon = try LoggedProcess(["/bin/sh", "-c", "exec /usr/bin/gnome-keyring-daemon --replace --foreground --unlock "
                                        + "--components=secrets < \"$1\"", "sh", passwordFile],
                                   logPath: directory + "/gnome-keyring.log", environment: environment)
        for _ in 0..<100 where !replaced.hasExited { try await Task.sleep(for: .milliseconds(100)) }
        let probe = SecretServiceClient(bus: .address(address), options: .init(timeout: .seconds(10), allowsPrompts: false))
        for _ in 0..<100 {
            if (try? await probe.collectionPath(.default)) != nil { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HarnessError("the replacing gnome-keyring-daemon did not give a default keyring")
    }

    /// A KeychainStorage on this keyring's bus.
    func storage(_ account: String, allowsPrompts: Bool = true, timeout: Duration = .seconds(25)) -> KeychainStorage<String> {
        KeychainStorage<String>(account: account, configuration: KeychainConfiguration(
            timeout: timeout, allowsPrompts: allowsPrompts, bus: .address(address)))
    }

    deinit {
        daemon.stop()
        bus.stop()
    }
}

/// The error `body` throws, or nil when it succeeds.
func secretServiceErrorIfAny(_ body: () async throws(SecretServiceError) -> Void) async -> SecretServiceError? {
    do throws(SecretServiceError) {
        try await body()
        return nil
    } catch {
        return error
    }
}
