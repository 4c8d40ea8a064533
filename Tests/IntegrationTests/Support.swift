import Foundation
import PingStorage
import SecretService
import Testing

/// Integration tests run only inside `dbus-test/run --isolated` (the README's test command): they
/// need the throwaway keyring it starts. Outside it the `Integration` suite, and with it every suite
/// nested in it (each test file's `extension Integration`), is skipped with the reason shown: the
/// gate is its trait, once.
enum Harness {
    static var isInside: Bool { ProcessInfo.processInfo.environment["DBUS_TEST_DIR"] != nil }
    /// Inside `dbus-test/run --sandbox` (a simulated Flatpak sandbox).
    static var isSandboxed: Bool { ProcessInfo.processInfo.environment["DBUS_TEST_SANDBOX"] == "1" }
    /// The sandbox's portal: `gnome`, `none-backend`, `no-secret` or `absent`; nil outside one.
    static var sandboxPortal: String? { isSandboxed ? ProcessInfo.processInfo.environment["DBUS_TEST_SANDBOX_PORTAL"] : nil }
    /// Whether the run has a TPM (`dbus-test/run --tpm`): SecuredKeyEncryptor's keys are bound to it.
    static var hasTPM: Bool { ProcessInfo.processInfo.environment["DBUS_TEST_TPM"] == "1" }
    /// Under `dbus-test/run --prompter`: prompts are shown on a virtual display, where
    /// ``Person`` answers them.
    static var hasPrompter: Bool { ProcessInfo.processInfo.environment["DBUS_TEST_PROMPTER"] == "1" }
    /// Whether the sandboxed app may talk to the host's Secret Service (`--sandbox-talk-secrets`).
    static var hostSecretsReachable: Bool { ProcessInfo.processInfo.environment["DBUS_TEST_HOST_SECRETS"] == "reachable" }
    /// Where libsecret keeps the sandboxed app's file keyring.
    static var sandboxKeyring: String { ProcessInfo.processInfo.environment["DBUS_TEST_SANDBOX_KEYRING"] ?? "" }

    static var ctlPath: String { ProcessInfo.processInfo.environment["DBUS_TEST_CTL"] ?? "dbus-test/ctl" }
    static var dbusTestDirectory: String { URL(fileURLWithPath: ctlPath).deletingLastPathComponent().path }

    /// Acts on the provider: stop, kill, start, restart, suspend, resume, lock.
    static func ctl(_ command: String) throws {
        let result = try run(ctlPath, [command], timeout: 30)
        guard result.status == 0 else { throw HarnessError("ctl \(command) failed: \(result.stderr)") }
    }

    /// The directory holding the test binaries (and keychain-probe).
    static var binaryDirectory: URL {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // Swift Testing on Linux runs the binary inside the .xctest bundle path's directory.
        if url.pathExtension == "xctest" { url = url.deletingLastPathComponent() }
        return url
    }

    static var probePath: String { binaryDirectory.appendingPathComponent("keychain-probe").path }

    /// The provider of this run: gnome-keyring (default), keepassxc or kwallet.
    static var provider: String { ProcessInfo.processInfo.environment["DBUS_TEST_PROVIDER"] ?? "gnome-keyring" }

    /// Whether the provider has an in-memory `session` collection (only gnome-keyring does).
    static var hasSessionCollection: Bool { provider == "gnome-keyring" }

    /// A collection tests may fill with throwaway items: `session` where it exists, else `default`.
    static var scratchCollection: CollectionReference { hasSessionCollection ? .session : .default }
    static var scratchCollectionName: String { hasSessionCollection ? "session" : "default" }

    /// The object path of the provider's `default` collection.
    static var defaultCollectionPath: String {
        switch provider {
        case "keepassxc": "/org/freedesktop/secrets/collection/passwords"
        case "kwallet": "/org/freedesktop/secrets/collection/kdewallet"
        default: "/org/freedesktop/secrets/collection/login"
        }
    }

    /// The name ping-keyring's doctor gives the provider.
    static var providerDisplayName: String {
        switch provider {
        case "keepassxc": "KeePassXC"
        case "kwallet": "KWallet"
        default: "GNOME Keyring"
        }
    }

    /// Waits until the provider has written what it acknowledged to disk and is writing nothing:
    /// its file unchanged and no save of it under way for 1.2 s. KeePassXC and KWallet save a moment
    /// after a change and lose it when killed before (gnome-keyring writes before it answers).
    /// Tests that kill the provider after a write call this after that write, and before it too:
    /// KeePassXC 2.7.4 drops a change made while it is saving (the save, once done, marks the
    /// whole database saved, so nothing writes that change; PROVIDERS.md), so the write the test
    /// relies on must not meet a save left running by an earlier test. Throws after 30 s of writes.
    static func waitUntilPersisted() async throws {
        guard provider != "gnome-keyring" else { return }
        func stamp() -> Date? {
            (try? FileManager.default.attributesOfItem(atPath: storageFile.path))?[.modificationDate] as? Date
        }
        var last = stamp()
        var quietSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            let now = stamp()
            if now != last || providerIsSaving() {
                last = now
                quietSince = .now
            } else if ContinuousClock.now - quietSince > .milliseconds(1200) {
                return
            }
        }
        throw HarnessError("\(provider) kept writing \(storageFile.path) for 30 s")
    }

    /// Whether the provider is writing its file now. Both KeePassXC and KWallet save through Qt's
    /// QSaveFile: an unnamed temporary file in the file's directory (`#INODE (deleted)` as
    /// /proc shows the descriptor), linked in place once written, or `FILE.XXXXXX` where the file
    /// system has no O_TMPFILE. A save is under way while the provider holds such a descriptor.
    static func providerIsSaving() -> Bool {
        let directory = storageFile.deletingLastPathComponent().path
        guard let pid = providerPID(),
              let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        else { return false }
        return descriptors.contains { descriptor in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")
            else { return false }
            return target.hasPrefix(directory + "/#") || target.hasPrefix(storageFile.path + ".")
        }
    }

    /// The provider's process ID, as dbus-test/ctl records it in provider.pid (PID and start
    /// time); nil when no provider was started.
    static func providerPID() -> String? {
        guard let line = try? String(contentsOfFile: ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]! + "/provider.pid",
                                     encoding: .utf8) else { return nil }
        return line.split(separator: " ").first.map(String.init)
    }

    /// The file the provider keeps the default collection in (rewritten on every write).
    static var storageFile: URL {
        let environment = ProcessInfo.processInfo.environment
        switch provider {
        case "keepassxc": return URL(fileURLWithPath: environment["DBUS_TEST_DIR"]! + "/keepassxc/passwords.kdbx")
        case "kwallet": return URL(fileURLWithPath: environment["XDG_DATA_HOME"]! + "/kwalletd/kdewallet.kwl")
        default: return URL(fileURLWithPath: environment["HOME"]! + "/.local/share/keyrings/login.keyring")
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

struct ProcessResult: Sendable {
    var status: Int32
    var stdout: Data
    var stderr: String
    var output: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs a program to completion (killing it after `timeout` seconds) with optional stdin.
///
/// Spawned with posix_spawn and a clean signal state rather than Foundation's `Process`: the
/// test runner's threads block SIGTERM and friends, and a child would inherit that mask, so
/// e.g. `dbus-run-session` could no longer stop its bus daemon (and a harness `ctl stop` would
/// always fall back to SIGKILL).
@discardableResult
func run(_ program: String, _ arguments: [String], input: Data? = nil,
         environment: [String: String]? = nil, timeout: TimeInterval = 60) throws -> ProcessResult {
    try runBlocking(program, arguments, input: input, environment: environment, timeout: timeout)
}

private func runBlocking(_ program: String, _ arguments: [String], input: Data?,
                         environment: [String: String]?, timeout: TimeInterval) throws -> ProcessResult {
    // keychain-probe is this test process's app (AppIdentity) unless a test says otherwise: the
    // probe sets KEYCHAIN_PROBE_APP as its identity at start-up, as an app sets its own.
    var environment = environment
    if program == Harness.probePath, environment?["KEYCHAIN_PROBE_APP"] == nil {
        environment = (environment ?? ProcessInfo.processInfo.environment).merging(["KEYCHAIN_PROBE_APP": AppIdentity.current.id]) { $1 }
    }
    let (stdinPipe, stdoutPipe, stderrPipe) = try (closeOnExecPipe(), closeOnExecPipe(), closeOnExecPipe())
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
    posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
    posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
    for fd in stdinPipe + stdoutPipe + stderrPipe { posix_spawn_file_actions_addclose(&actions, fd) }

    let pid: pid_t
    do {
        pid = try spawnWithCleanSignals([program] + arguments, environment: environment, actions: &actions)
    } catch {
        for fd in stdinPipe + stdoutPipe + stderrPipe { close(fd) }
        throw error
    }
    let argv = [program] + arguments
    close(stdinPipe[0]); close(stdoutPipe[1]); close(stderrPipe[1])
    let stdinHandle = FileHandle(fileDescriptor: stdinPipe[1], closeOnDealloc: true)
    if let input { try? stdinHandle.write(contentsOf: input) }
    try? stdinHandle.close()

    // Read both pipes concurrently so a chatty child cannot block on a full pipe; on threads of
    // their own, not Dispatch's global queues, which Swift's cooperative threads are made of.
    let collected = OutputCollector()
    let group = DispatchGroup()
    for (fd, isError) in [(stdoutPipe[0], false), (stderrPipe[0], true)] {
        group.enter()
        Thread.detachNewThread {
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            collected.store(handle.readDataToEndOfFile(), isError: isError)
            group.leave()
        }
    }
    if group.wait(timeout: .now() + timeout) == .timedOut {
        kill(pid, SIGKILL)
        var ignored: Int32 = 0
        waitpid(pid, &ignored, 0)
        throw HarnessError("\(argv.joined(separator: " ")) did not finish within \(timeout) s")
    }
    var waitStatus: Int32 = 0
    while waitpid(pid, &waitStatus, 0) == -1 && errno == EINTR {}
    let exitStatus: Int32 = (waitStatus & 0x7f) == 0 ? (waitStatus >> 8) & 0xff : 128 + (waitStatus & 0x7f)
    return ProcessResult(status: exitStatus, stdout: collected.stdout,
                         stderr: String(decoding: collected.stderr, as: UTF8.self))
}

/// ``run(_:_:input:environment:timeout:)`` for async code: the child is awaited on a thread of
/// its own. Waiting for a process on a cooperative thread (there are as many as cores) stalls
/// every other test of the process: four tests waiting for children froze this test process for
/// 30 s, and its file keyring tests ran out of their deadlines.
@discardableResult
func run(_ program: String, _ arguments: [String], input: Data? = nil,
         environment: [String: String]? = nil, timeout: TimeInterval = 60) async throws -> ProcessResult {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result {
                try runBlocking(program, arguments, input: input, environment: environment, timeout: timeout)
            })
        }
    }
}

/// Held while a pipe is made and flagged close-on-exec, and while a child is spawned, so that no
/// child is spawned between the two (glibc's `pipe2` is not visible to Swift here).
let spawnLock = NSLock()

/// A pipe whose two ends are closed on exec: a child spawned at the same moment by another thread
/// of this process must not inherit another child's pipes (the file actions' dup2 onto 0, 1 and 2
/// clears the flag for the child they are meant for). Inherited, the write end of one child's
/// stdout stayed open in the other child, and reading it to its end waited for that other child
/// too: a poller that ran until two saving children ended kept all three waiting until the timeout.
func closeOnExecPipe() throws -> [Int32] {
    try spawnLock.withLock {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw HarnessError("pipe failed: errno \(errno)") }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return ends
    }
}

/// Starts `argv` with posix_spawnp, an empty signal mask and default signal handlers (see
/// `run`), with the given file actions; returns its PID. Pipes meant for the child come from
/// ``closeOnExecPipe()``.
func spawnWithCleanSignals(_ argv: [String], environment: [String: String]?,
                           actions: inout posix_spawn_file_actions_t) throws -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var emptyMask = sigset_t(), defaults = sigset_t()
    sigemptyset(&emptyMask)
    sigfillset(&defaults)
    posix_spawnattr_setsigmask(&attributes, &emptyMask)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    var pid: pid_t = 0
    let status = withCStrings(argv) { argvPointer in
        withCStrings(env) { envPointer in
            spawnLock.withLock { posix_spawnp(&pid, argv[0], &actions, &attributes, argvPointer, envPointer) }
        }
    }
    guard status == 0 else { throw HarnessError("cannot start \(argv[0]): errno \(status)") }
    return pid
}

private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

private final class OutputCollector: @unchecked Sendable {
    // @unchecked Sendable: both fields are only touched under `lock`.
    private let lock = NSLock()
    private var out = Data(), err = Data()
    func store(_ data: Data, isError: Bool) { lock.withLock { if isError { err = data } else { out = data } } }
    var stdout: Data { lock.withLock { out } }
    var stderr: Data { lock.withLock { err } }
}

/// `secret-tool`, the libsecret command-line client: a client we did not write, used to check
/// what really is in the keyring.
enum SecretTool {
    static func store(label: String, attributes: [String: String], secret: Data) throws {
        let result = try retryingRejectedKeys { try run("secret-tool", ["store", "--label=\(label)"] + flatten(attributes), input: secret) }
        guard result.status == 0 else { throw HarnessError("secret-tool store failed: \(result.stderr)") }
    }

    /// Stores bytes as a binary secret (`application/octet-stream`). secret-tool can only store
    /// `text/plain`, which KWallet and KeePassXC re-encode when the bytes are not UTF-8, so this
    /// goes through the SecretService client (what is read back is checked with secret-tool or
    /// dbus-test/secret-bytes).
    static func storeBinary(label: String, attributes: [String: String], secret: Data) async throws {
        _ = try await SecretServiceClient().createItem(
            in: .default, label: label, attributes: attributes,
            secret: SecretValue(bytes: secret, contentType: "application/octet-stream"), replacing: true)
    }

    /// libsecret's own clients fail about one session in 100 against KWallet ("Client public key
    /// size is invalid", or keys that disagree: "Can't find session"; PingStorage handles both
    /// itself): the test's reference clients retry too.
    static func retryingRejectedKeys(_ body: () throws -> ProcessResult) throws -> ProcessResult {
        var result = try body()
        for _ in 0..<4 where result.stderr.contains("public key size is invalid")
            || result.stderr.contains("Can't find session") {
            result = try body()
        }
        return result
    }

    /// The secret's bytes, or nil when no item matches.
    static func lookup(_ attributes: [String: String]) throws -> Data? {
        // KWallet silently derives a wrong session key about one session in 200; libsecret's
        // clients then see "no such item". Ask again before believing it.
        for _ in 0..<(Harness.provider == "kwallet" ? 2 : 0) {
            if let found = try lookupOnce(attributes) { return found }
        }
        return try lookupOnce(attributes)
    }

    private static func lookupOnce(_ attributes: [String: String]) throws -> Data? {
        let result = try retryingRejectedKeys { try run("secret-tool", ["lookup"] + flatten(attributes)) }
        if result.status != 0 {
            if result.stderr.isEmpty { return nil }
            if result.stderr.contains("does not contain a textual password") {
                // KWallet and KeePassXC keep binary content types, which secret-tool will not
                // print; dbus-test/secret-bytes reads them through libsecret's Python binding.
                var bytes = try retryingRejectedKeys { try run(Harness.dbusTestDirectory + "/secret-bytes", flatten(attributes)) }
                // KWallet's silent session-key mismatch looks like "no item" here too: ask again.
                for _ in 0..<2 where bytes.status == 1 && bytes.stderr.isEmpty {
                    bytes = try retryingRejectedKeys { try run(Harness.dbusTestDirectory + "/secret-bytes", flatten(attributes)) }
                }
                guard bytes.status == 0 else { throw HarnessError("secret-bytes failed: \(bytes.stderr)") }
                return bytes.stdout
            }
            throw HarnessError("secret-tool lookup failed: \(result.stderr)")
        }
        return result.stdout
    }

    struct Item: Sendable {
        var path: String
        var label: String
        var attributes: [String: String]
        var secret: String

        /// The attributes a client stored: without those KeePassXC adds to every item it publishes
        /// (`Title`, `UserName`, `URL`, `Notes`, `Uuid`, `Path`, and `FDO_SECRETS_CONTENT_TYPE`).
        var storedAttributes: [String: String] {
            guard Harness.provider == "keepassxc" else { return attributes }
            let added: Set<String> = ["Title", "UserName", "URL", "Notes", "Uuid", "Path", "FDO_SECRETS_CONTENT_TYPE"]
            return attributes.filter { !added.contains($0.key) }
        }
    }

    /// What a failed assertion should show about the items matching `attributes`, as secret-tool
    /// sees them: path, label and secret of each (test data only).
    static func describeItems(matching attributes: [String: String]) -> String {
        do {
            let items = try search(attributes)
            return "secret-tool finds \(items.count) item(s)" + items.map { " [\($0.path) label \($0.label.debugDescription) secret \($0.secret.debugDescription)]" }.joined()
        } catch {
            return "secret-tool search failed: \(error)"
        }
    }

    /// Every item matching `attributes` (unlocking nothing).
    static func search(_ attributes: [String: String]) throws -> [Item] {
        // secret-tool prints each item's path, label, secret and times to stdout and its attributes
        // to stderr. Both into one pipe, stdout unbuffered (coreutils' stdbuf), keep them in the
        // order they were printed, so each attribute line follows its own item's lines: read
        // apart, attributes could only be matched to items by guessing where one item's end.
        func searched() throws -> ProcessResult {
            var result = try run("/bin/sh", ["-c", "exec stdbuf -o0 secret-tool \"$@\" 2>&1", "sh", "search", "--all"] + flatten(attributes))
            // Its errors are in the one pipe too: retried as retryingRejectedKeys does.
            for _ in 0..<4 where result.output.contains("public key size is invalid") || result.output.contains("Can't find session") {
                result = try run("/bin/sh", ["-c", "exec stdbuf -o0 secret-tool \"$@\" 2>&1", "sh", "search", "--all"] + flatten(attributes))
            }
            return result
        }
        var found = items(searchOutput: try searched().stdout)
        // KWallet silently derives a wrong session key about one session in 200 (PROVIDERS.md):
        // secret-tool then prints every secret empty. Ask again before believing an empty secret.
        for _ in 0..<(Harness.provider == "kwallet" ? 3 : 0) where found.contains(where: { $0.secret.isEmpty }) {
            found = items(searchOutput: try searched().stdout)
        }
        return found
    }

    /// The items in `secret-tool search --all`'s output, stdout and stderr in the order printed:
    /// per item "[path]", "label = …", "secret = …", "created = …", "modified = …" (and
    /// "schema = …" for the `xdg:schema` attribute), then its "attribute.x = …" lines.
    ///
    /// Lines end at the byte 0x0A, not at Swift's Character "\n": a binary secret is printed raw,
    /// and one ending in "\r" would make "\r\n" a single Character, which a split at "\n" keeps
    /// whole, hiding the next lines (and with them the next item).
    static func items(searchOutput output: Data) -> [Item] {
        var items: [Item] = []
        // A binary secret can contain anything, "\n[" included: everything from "secret = " up to
        // the "created = " line that follows it belongs to the secret.
        var inSecret = false
        for bytes in output.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let line = String(decoding: bytes, as: UTF8.self)
            if inSecret {
                guard line.hasPrefix("created = ") else { continue }
                inSecret = false
            }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                items.append(Item(path: String(line.dropFirst().dropLast()), label: "", attributes: [:], secret: ""))
            }
            guard !items.isEmpty else { continue }
            let last = items.count - 1
            if line.hasPrefix("label = ") { items[last].label = String(line.dropFirst("label = ".count)) }
            if line.hasPrefix("secret = ") {
                items[last].secret = String(line.dropFirst("secret = ".count))
                inSecret = true
            }
            // secret-tool shows the xdg:schema attribute as its own "schema = …" line.
            if line.hasPrefix("schema = ") { items[last].attributes["xdg:schema"] = String(line.dropFirst("schema = ".count)) }
            if line.hasPrefix("attribute.") {
                let parts = line.dropFirst("attribute.".count).split(separator: " = ", maxSplits: 1, omittingEmptySubsequences: false)
                items[last].attributes[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            }
        }
        return items
    }

    static func clear(_ attributes: [String: String]) throws {
        _ = try retryingRejectedKeys { try run("secret-tool", ["clear"] + flatten(attributes)) }
    }

    private static func flatten(_ attributes: [String: String]) -> [String] {
        attributes.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
    }
}

/// A fresh account name per test, so tests never see each other's items.
func uniqueAccount(_ name: String = #function) -> String {
    "test-\(name.prefix(while: { $0 != "(" }))-\(UUID().uuidString.prefix(8))"
}

/// The attributes KeychainStorage looks items up by.
func lookup(_ account: String, service: String = KeychainConfiguration.defaultService) -> [String: String] {
    ["service": service, "account": account]
}

/// Runs `body` and returns the KeychainError it threw (failing the test if it threw nothing or
/// something else).
func keychainError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> KeychainError? {
    do {
        try await body()
        Issue.record("expected a KeychainError, got success", sourceLocation: sourceLocation)
    } catch let error as KeychainError {
        return error
    } catch {
        Issue.record("expected a KeychainError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
