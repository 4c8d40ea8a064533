import BenchmarkSupport
import CKeyringFixture
import Foundation

/// The login collection of the throwaway gnome-keyring, replaced by a file with exactly the items
/// the scale rows need: the provider is stopped (`$DBUS_TEST_CTL stop`), `login.keyring` is written
/// in gnome-keyring's own format (CKeyringFixture), and the provider is started again
/// (`$DBUS_TEST_CTL start`, which returns once the default collection is unlocked). See
/// ScaleBenchmark for why the items are not stored one by one.
///
/// Only inside `dbus-test/run` with gnome-keyring, and only on a keyring file inside the
/// throwaway directory: `locate` refuses anything else, so a user's keyring is never touched.
struct KeyringFixture {
    /// One item: KeychainStorage's attributes for (Bench.service, account), and the secret.
    struct Item {
        var account: String
        var secret: [UInt8]
    }

    let keyringPath: String
    /// The bytes gnome-keyring-daemon --unlock read from its stdin: the password file, newline
    /// included (gnome-keyring takes all of stdin as the password).
    let password: [UInt8]
    let ctl: String

    /// The fixture of this dbus-test session, or throws why there is none.
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> KeyringFixture {
        guard let directory = environment["DBUS_TEST_DIR"], let ctl = environment["DBUS_TEST_CTL"] else {
            throw BenchmarkError("not inside dbus-test/run (no DBUS_TEST_DIR / DBUS_TEST_CTL)")
        }
        guard environment["DBUS_TEST_PROVIDER"] == "gnome-keyring" else {
            throw BenchmarkError("the provider is \(environment["DBUS_TEST_PROVIDER"] ?? "unknown"), not gnome-keyring")
        }
        let home = environment["HOME"] ?? directory
        let data = environment["XDG_DATA_HOME"] ?? home + "/.local/share"
        let keyringPath = URL(fileURLWithPath: data + "/keyrings/login.keyring").resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        guard keyringPath.hasPrefix(root + "/") else {
            throw BenchmarkError("\(keyringPath) is outside the throwaway directory \(root)")
        }
        guard FileManager.default.fileExists(atPath: keyringPath) else {
            throw BenchmarkError("no login keyring at \(keyringPath)")
        }
        guard let password = FileManager.default.contents(atPath: directory + "/gnome-keyring.password") else {
            throw BenchmarkError("no gnome-keyring.password in \(directory)")
        }
        return KeyringFixture(keyringPath: keyringPath, password: Array(password), ctl: ctl)
    }

    /// Stops the provider, writes `items` as the whole login collection, starts the provider
    /// again; returns the time all of it took.
    func install(_ items: [Item], worker: BlockingThread) async throws -> Duration {
        let (path, password, ctl) = (keyringPath, password, ctl)
        let sendableItems = items.map { ($0.account, $0.secret) }
        return try await worker.run {
            try timed {
                try Self.control(ctl, "stop")
                try Self.write(path: path, password: password, items: sendableItems)
                try Self.control(ctl, "start")
            }
        }
    }

    private static func control(_ ctl: String, _ command: String) throws {
        let status = try ChildProcess.run([ctl, command])
        guard status == 0 else { throw BenchmarkError("$DBUS_TEST_CTL \(command) exited with status \(status)") }
    }

    private static func write(path: String, password: [UInt8], items: [(String, [UInt8])]) throws {
        // C strings and secrets that live until the call returns.
        let service = strdup(Bench.service)
        let accounts = items.map { strdup($0.0) }
        let secrets = items.map { item -> UnsafeMutablePointer<UInt8> in
            let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(item.1.count, 1))
            buffer.initialize(from: item.1, count: item.1.count)
            return buffer
        }
        defer {
            free(service)
            accounts.forEach { free($0) }
            secrets.forEach { $0.deallocate() }
        }
        let fixtureItems = items.indices.map { index in
            CKFItem(service: service, account: accounts[index], secret: secrets[index], secret_length: items[index].1.count)
        }
        var message: UnsafeMutablePointer<CChar>?
        let result = fixtureItems.withUnsafeBufferPointer { buffer in
            ckf_write_keyring(path, "Login", password, password.count, buffer.baseAddress, buffer.count, &message)
        }
        guard result == 0 else {
            defer { ckf_free_string(message) }
            throw BenchmarkError("writing \(path): " + (message.map { String(cString: $0) } ?? "failed"))
        }
    }
}
