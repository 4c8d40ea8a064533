import Foundation
import Testing

@testable import FileKeyring

/// Writers in several processes and threads at once: the lock must serialise them so no change is
/// lost, and a lock held too long must end in `lockTimeout`, not a hang.
@Suite(.serialized) struct ConcurrencyTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("keyrings/default.keyring")
    }

    /// Starts `file-keyring-probe` with `arguments`; the caller awaits its exit status.
    func startProbe(_ arguments: [String]) -> Task<Int32, any Error> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: probePath)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["FILE_KEYRING_PROBE_SECRET"] = testPassword
        process.environment = environment
        return Task {
            try await runToEnd(process, timeout: 120)
            return process.terminationStatus
        }
    }

    @Test("twoProcesses: 2 processes × 100 transactions, every item present at the end")
    func twoProcessesWriting() async throws {
        // Start from an existing file, so neither process races to create it.
        try makeKeyring(path).modify { _ in }
        let first = startProbe(["add", path, "first", "100"])
        let second = startProbe(["add", path, "second", "100"])
        #expect(try await first.value == 0)
        #expect(try await second.value == 0)
        let items = try makeKeyring(path).items()
        #expect(items.count == 200)
        for prefix in ["first", "second"] {
            let numbers = Set(items.filter { $0.attributes["probe"] == prefix }.compactMap { $0.attributes["n"].flatMap(Int.init) })
            let missing = Set(0..<100).subtracting(numbers)
            #expect(missing.isEmpty, "\(prefix): \(missing.count) of 100 items lost")
        }
        let file = try KeyringFile(parsing: readBytes(path), path: path)
        #expect(file.usageCount == 201)
        // Nothing but the keyring and its lock file is left in the directory.
        let inside = try FileManager.default.contentsOfDirectory(atPath: directory.path("keyrings")).sorted()
        #expect(inside == ["default.keyring", "default.keyring.lock"])
    }

    @Test("twoProcesses: creating the file at once loses nothing either")
    func twoProcessesCreating() async throws {
        let first = startProbe(["add", path, "first", "20"])
        let second = startProbe(["add", path, "second", "20"])
        #expect(try await first.value == 0)
        #expect(try await second.value == 0)
        #expect(try makeKeyring(path).items().count == 40)
    }

    @Test("anotherProcess holding the lock: our transaction times out, then succeeds once it is released")
    func heldLockTimesOut() async throws {
        try makeKeyring(path).modify { items in
            items = [FileKeyringItem(label: "before", attributes: ["probe": "before"], secret: FileKeyringSecret(utf8: "b"))]
        }
        let ready = directory.path("ready"), release = directory.path("release")
        let holder = startProbe(["hold", path, ready, release])
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: ready) && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(FileManager.default.fileExists(atPath: ready))
        let before = try readBytes(path)

        let impatient = try makeKeyring(path, lockTimeout: .milliseconds(300))
        let started = ContinuousClock.now
        let error = #expect(throws: FileKeyringError.self) {
            try impatient.modify { items in items.removeAll() }
        }
        let waited = ContinuousClock.now - started
        #expect(error?.code == .lockTimeout)
        #expect(waited >= .milliseconds(300) && waited < .seconds(5))
        #expect(try readBytes(path) == before)
        // Readers do not wait for the lock and see the last whole file.
        #expect(try impatient.items().map(\.label) == ["before"])

        // Released: a patient writer waits for the holder and sees its item.
        let patient = try makeKeyring(path, lockTimeout: .seconds(30))
        _ = FileManager.default.createFile(atPath: release, contents: nil)
        let labels = try patient.modify { items in
            items.append(FileKeyringItem(label: "after", attributes: ["probe": "after"], secret: FileKeyringSecret(utf8: "a")))
            return items.map(\.label)
        }
        #expect(try await holder.value == 0)
        #expect(labels == ["before", "held", "after"])
    }

    /// libsecret takes no lock: its store lands in the file while another process's transaction
    /// holds ours, between that transaction's read and its write. The transaction must see the
    /// file changed, read it again and keep libsecret's item, whether the file existed before
    /// (a rename over it) or not (a file created meanwhile, never clobbered).
    @Test("libsecret writes during a held transaction: after the release both items are there", arguments: [true, false])
    func libsecretWritingDuringAHeldTransactionLosesNothing(fileExistedBefore: Bool) async throws {
        if fileExistedBefore {
            try makeKeyring(path).modify { items in
                items = [FileKeyringItem(label: "before", attributes: ["probe": "before"], secret: FileKeyringSecret(utf8: "b"))]
            }
        }
        let ready = directory.path("ready"), release = directory.path("release")
        let holder = startProbe(["hold", path, ready, release])
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: ready) && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(FileManager.default.fileExists(atPath: ready))

        let stored = try await secretTool(["store", "--label", "libsecret's", "service", "s", "account", "a"], keyring: path, input: "theirs")
        #expect(stored.status == 0, "\(stored.stderr)")
        _ = FileManager.default.createFile(atPath: release, contents: nil)
        #expect(try await holder.value == 0)

        let items = try makeKeyring(path).items()
        #expect(Set(items.map(\.label)) == Set((fileExistedBefore ? ["before"] : []) + ["libsecret's", "held"]), "\(items.map(\.label))")
        let lookup = try await secretTool(["lookup", "service", "s", "account", "a"], keyring: path)
        #expect(lookup.stdout == "theirs", "libsecret still reads its own item: \(lookup.stderr)")
    }

    /// A writer that rewrites the file under every attempt: the transaction gives up after
    /// its attempts with `concurrentWrite`, and the file is left as that writer left it.
    @Test("a file rewritten under every attempt ends in concurrentWrite, written by no one but that writer")
    func aFileRewrittenUnderEveryAttemptIsNeverOverwritten() throws {
        try makeKeyring(path).store(label: "kept", attributes: ["probe": "kept"], secret: FileKeyringSecret(utf8: "k"))
        let theirs = try readBytes(path)
        var attempts = 0
        let error = #expect(throws: FileKeyringError.self) {
            try makeKeyring(path).modify { items throws(FileKeyringError) in
                attempts += 1
                // Another program's write, as libsecret's: a new file renamed over the keyring.
                let other = path + ".other"
                _ = FileManager.default.createFile(atPath: other, contents: Data(theirs))
                _ = rename(other, path)
                items.append(FileKeyringItem(label: "ours", attributes: ["probe": "ours"], secret: FileKeyringSecret(utf8: "o")))
            }
        }
        #expect(error?.code == .concurrentWrite)
        #expect(attempts == FileKeyring.transactionAttempts)
        #expect(try readBytes(path) == theirs)
    }

    @Test("Concurrency: threads of one process, on one instance and on separate instances")
    func threads() async throws {
        let shared = try makeKeyring(path)
        try shared.modify { _ in }
        await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    let keyring = worker % 2 == 0 ? shared : try makeKeyring(path)
                    for index in 0..<15 {
                        try keyring.modify { items in
                            items.append(FileKeyringItem(
                                label: "\(worker)-\(index)", attributes: ["w": "\(worker)"], secret: FileKeyringSecret(utf8: "s")))
                        }
                    }
                }
            }
        }
        #expect(try shared.items().count == 60)
    }
}
