import Foundation

/// The repository root, found from this file's path (Tests/HarnessTests/StubSystem.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A pretend machine for the harness scripts: a temporary directory with a fake os-release and a
/// `bin` that holds stub package managers (`apt-get`, `dpkg-query`, `dnf`, `rpm`, `pacman`, `sudo`,
/// `id`, `gdbus`, and any stub command a test names) next to links to the few real tools the
/// scripts use (bash, sed, grep...). The scripts run with PATH=bin and nothing else from this
/// process's environment, so no real package manager can be reached. Every stub but `id` appends
/// its name and arguments, one line per call, to `calls.log`.
struct StubSystem {
    enum OS {
        case debian, ubuntu, fedora, arch
        case custom(String)
        case none

        var osRelease: String? {
            switch self {
            case .debian: return "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n"
            case .ubuntu: return "NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\n"
            case .fedora: return "NAME=\"Fedora Linux\"\nID=fedora\nVERSION_ID=40\n"
            case .arch: return "NAME=\"Arch Linux\"\nID=arch\nBUILD_ID=rolling\n"
            case .custom(let text): return text
            case .none: return nil
            }
        }
    }

    struct Outcome {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    let root: URL
    var bin: URL { root.appendingPathComponent("bin") }
    var log: URL { root.appendingPathComponent("calls.log") }

    /// - Parameters:
    ///   - os: what /etc/os-release says (`.none`: no such file).
    ///   - uid: what `id -u` prints.
    ///   - installed: the packages dpkg-query, rpm -q and pacman -Q report as installed.
    ///   - secretServiceRunning: what `gdbus call ... NameHasOwner org.freedesktop.secrets` answers.
    ///   - commands: extra stub commands (they only log their arguments and exit 0).
    init(os: OS, uid: Int = 0, installed: [String] = [], secretServiceRunning: Bool = false,
         commands: [String] = []) throws {
        let fileManager = FileManager.default
        root = fileManager.temporaryDirectory.appendingPathComponent("harness-tests-\(UUID().uuidString)")
        try fileManager.createDirectory(at: root.appendingPathComponent("bin"), withIntermediateDirectories: true)
        if let text = os.osRelease {
            try text.write(to: root.appendingPathComponent("os-release"), atomically: true, encoding: .utf8)
        }
        try (installed.map { $0 + "\n" }.joined()).write(to: root.appendingPathComponent("installed"),
                                                         atomically: true, encoding: .utf8)
        try Data().write(to: log)

        // Real tools the scripts need, and nothing else.
        for tool in ["bash", "sed", "grep", "tr", "cat", "dirname", "ls", "timeout", "mktemp", "mkdir",
                     "rm", "chmod", "head", "sort"] {
            guard let real = ["/usr/bin/", "/bin/"].map({ $0 + tool }).first(where: fileManager.isExecutableFile)
            else { throw StubError("no \(tool) on this machine") }
            try fileManager.createSymbolicLink(atPath: bin.appendingPathComponent(tool).path, withDestinationPath: real)
        }

        let logLine = "printf '%s' \"${0##*/}\" >> \"$STUB_LOG\"; printf ' %s' \"$@\" >> \"$STUB_LOG\"; echo >> \"$STUB_LOG\""
        let isInstalled = "grep -qx -- \"$1\" \"$STUB_ROOT/installed\""
        var stubs: [String: String] = [
            "apt-get": logLine,
            "dnf": logLine,
            "sudo": logLine,
            "dpkg-query": """
                \(logLine)
                package=${@: -1}
                if grep -qx -- "$package" "$STUB_ROOT/installed"; then printf 'install ok installed'; exit 0; fi
                echo "dpkg-query: no packages found matching $package" >&2; exit 1
                """,
            "rpm": """
                \(logLine)
                [[ $1 == -q ]] || exit 2
                shift; \(isInstalled) && exit 0
                echo "package $1 is not installed"; exit 1
                """,
            "pacman": """
                \(logLine)
                case $1 in
                    -Q) shift; \(isInstalled) && { echo "$1 1.0-1"; exit 0; }; echo "error: package '$1' was not found" >&2; exit 1 ;;
                    -S) exit 0 ;;
                    *) exit 2 ;;
                esac
                """,
            "id": "[[ $1 == -u ]] && echo \(uid)",
            "gdbus": """
                \(logLine)
                echo "(\(secretServiceRunning),)"
                """,
        ]
        for command in commands { stubs[command] = logLine }
        for (name, body) in stubs {
            try Self.writeExecutable(bin.appendingPathComponent(name).path, "#!/usr/bin/env bash\n" + body + "\n")
        }
    }

    /// Runs dbus-test/SCRIPT with ARGUMENTS in this pretend machine. It waits for the script's end
    /// without blocking a thread: Swift Testing runs the other suites on the same two cooperative
    /// threads, and a blocked one made a 200 ms deadline test of another suite take over 3 s.
    func run(_ script: String, _ arguments: [String], environment extra: [String: String] = [:]) async throws -> Outcome {
        let process = Process()
        process.executableURL = repositoryRoot.appendingPathComponent("dbus-test/\(script)")
        process.arguments = arguments
        process.currentDirectoryURL = root
        var environment = [
            "PATH": bin.path,
            "HOME": root.path,
            "TMPDIR": root.path,
            "LANG": "C",
            "STUB_LOG": log.path,
            "STUB_ROOT": root.path,
            "DBUS_TEST_OS_RELEASE": root.appendingPathComponent("os-release").path,
        ]
        environment.merge(extra) { _, new in new }
        process.environment = environment
        let stdout = root.appendingPathComponent("stdout"), stderr = root.appendingPathComponent("stderr")
        try Data().write(to: stdout)
        try Data().write(to: stderr)
        let out = try FileHandle(forWritingTo: stdout), err = try FileHandle(forWritingTo: stderr)
        defer { try? out.close(); try? err.close() }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        return Outcome(status: process.terminationStatus,
                       stdout: try String(contentsOf: stdout, encoding: .utf8),
                       stderr: try String(contentsOf: stderr, encoding: .utf8))
    }

    /// Writes an executable file through a descriptor that no child process inherits. The test
    /// process starts other processes from other threads all the time (the integration tests);
    /// one started while a stub was being written kept a writable descriptor of it, and running
    /// that stub then failed with ETXTBSY ("text file busy"): a call missing from the log.
    static func writeExecutable(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw StubError("cannot write \(path): errno \(errno)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw StubError("cannot write \(path): errno \(errno)")
        }
    }

    /// Every logged stub call, in order ("apt-get install -y ...").
    func calls() throws -> [String] {
        try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
            .map { String($0).trimmingCharacters(in: .whitespaces) }
    }

    /// The logged calls of the named stubs only.
    func calls(of names: Set<String>) throws -> [String] {
        try calls().filter { names.contains(String($0.prefix { $0 != " " })) }
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

struct StubError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The stubs that install or check packages.
let packageTools: Set<String> = ["apt-get", "dpkg-query", "dnf", "rpm", "pacman", "sudo"]
