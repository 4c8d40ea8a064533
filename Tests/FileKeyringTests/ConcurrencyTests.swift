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
