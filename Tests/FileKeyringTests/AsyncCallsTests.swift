import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@testable import FileKeyring

/// The async calls: one worker thread per keyring, a read of one account that decrypts that
/// account's records alone, and every call ending by its deadline.
@Suite("FileKeyring's async calls: one thread, selective reads, deadlines")
struct AsyncCallsTests {
    private func keyring(with others: Int, in directory: TemporaryDirectory) throws -> FileKeyring {
        let keyring = try makeKeyring(directory.path("default.keyring"))
        try keyring.modify { items throws(FileKeyringError) in
            for index in 0..<others {
                items.append(FileKeyringItem(label: "other \(index)", attributes: ["service": "s", "account": "other-\(index)"],
                                             secret: FileKeyringSecret(utf8: "x")))
            }
            items.append(FileKeyringItem(label: "mine", attributes: ["service": "s", "account": "mine"],
                                         secret: FileKeyringSecret(utf8: "secret")))
        }
        return keyring
    }

    @Test func aReadOfOneAccountDecryptsItsRecordsAlone() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let writer = try keyring(with: 40, in: directory)
        let reader = try makeKeyring(writer.path)
        let contents = try await reader.contents(matchingAny: [["service": "s", "account": "mine"], ["service": "s", "username": "mine"]],
                                                 by: .now + .seconds(30))
        #expect(contents.items.map(\.label) == ["mine"])
        #expect(contents.items.first?.recordIndex == 40, "where it is in the file")
        #expect(reader.decryptions.withLock { $0 } == 1, "one record decrypted of 41")
        #expect(try await reader.contents(matchingAny: [["service": "nowhere"]], by: .now + .seconds(30)).items.isEmpty)
        #expect(reader.decryptions.withLock { $0 } == 2, "no match: one record checked, to tell a wrong secret")
    }

    @Test func aWrongSecretIsStillAnErrorNotAnEmptyResult() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let writer = try keyring(with: 3, in: directory)
        let wrong = try makeKeyring(writer.path, password: "not the password")
        await #expect { _ = try await wrong.contents(matchingAny: [["account": "mine"]], by: .now + .seconds(30)) } throws: {
            ($0 as? FileKeyringError)?.code == .decryptionFailed
        }
    }

    @Test func everyCallRunsOnTheKeyringsOneThread() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let keyring = try keyring(with: 1, in: directory)
        let threads = try await withThrowingTaskGroup(of: UInt.self) { group in
            for index in 0..<24 {
                group.addTask {
                    try await keyring.modify(by: .now + .seconds(60)) { items throws(FileKeyringError) -> UInt in
                        items.append(FileKeyringItem(label: "\(index)", attributes: ["n": "\(index)"], secret: FileKeyringSecret(utf8: "v")))
                        return UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(bitPattern: UInt(pthread_self()))))
                    }
                }
            }
            return try await group.reduce(into: Set<UInt>()) { $0.insert($1) }
        }
        #expect(threads.count == 1, "\(threads.count) threads")
        #expect(try keyring.items().count == 26, "nothing lost")
    }

    /// A transaction waiting for another writer's lock does not hold the thread: a read goes on
    /// meanwhile (it ends while the transaction still waits), and the transaction completes once
    /// the lock is free.
    @Test func aCallWaitingForTheLockDelaysNoRead() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let keyring = try keyring(with: 1, in: directory)
        let lock = open(keyring.lockPath, O_RDWR)
        #expect(flock(lock, LOCK_EX) == 0)
        let waiting = Task { try await keyring.modify(by: .now + .seconds(60)) { items throws(FileKeyringError) in items.removeAll() } }
        // The transaction has had its first try and waits to try again.
        while keyring.worker.jobsWaitingToTryAgain == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let read = try await keyring.contents(by: .now + .seconds(60))
        #expect(read.items.count == 2)
        let second = try await keyring.contents(matchingAny: [["account": "mine"]], by: .now + .seconds(60))
        #expect(second.items.count == 1)
        #expect(try keyring.items().count == 2, "the transaction still waits for the lock")
        close(lock)
        try await waiting.value
        #expect(try keyring.items().isEmpty, "and completed once it was free")
    }

    /// A transaction that cannot take the lock by its deadline ends with lockTimeout, writing nothing.
    @Test func aLockHeldPastTheDeadlineIsALockTimeout() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let keyring = try keyring(with: 1, in: directory)
        let lock = open(keyring.lockPath, O_RDWR)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX) == 0)
        await #expect { try await keyring.modify(by: .now + .milliseconds(300)) { items throws(FileKeyringError) in items.removeAll() } } throws: {
            ($0 as? FileKeyringError)?.code == .lockTimeout
        }
        #expect(try keyring.items().count == 2, "nothing written")
    }

    /// A call whose turn does not come by its deadline ends then, with timedOut, and never runs.
    @Test func aCallEndsByItsDeadlineWhileTheThreadIsBusy() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let keyring = try keyring(with: 1, in: directory)
        let (started, startedSignal) = AsyncStream<Void>.makeStream()
        let release = DispatchSemaphore(value: 0)
        let busy = Task {
            try await keyring.modify(by: .now + .seconds(60)) { _ throws(FileKeyringError) in
                startedSignal.yield()
                release.wait()  // holds the keyring's thread (not one of Swift's) until the test lets go
                throw FileKeyringError.aborted("held the thread")
            }
        }
        for await _ in started { break }
        await #expect { _ = try await keyring.modify(by: .now + .milliseconds(200)) { items throws(FileKeyringError) in items.removeAll() } } throws: {
            ($0 as? FileKeyringError)?.code == .timedOut
        }
        release.signal()
        _ = try? await busy.value
        #expect(try await keyring.contents(by: .now + .seconds(60)).items.count == 2, "the call that timed out never ran")
    }

    /// The watch counts another writer's changes of the file, never this instance's own.
    @Test func anotherWritersChangesAreCountedOwnAreNot() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ours = try keyring(with: 1, in: directory)
        let theirs = try makeKeyring(ours.path)
        #expect(ours.foreignChanges() == 0, "the watch starts")
        try await ours.modify(by: .now + .seconds(60)) { items throws(FileKeyringError) in
            items.append(FileKeyringItem(label: "own", attributes: ["own": "1"], secret: FileKeyringSecret(utf8: "v")))
        }
        #expect(ours.foreignChangesChecked() == 0, "our own write is not another's")
        try theirs.modify { items throws(FileKeyringError) in
            items.append(FileKeyringItem(label: "theirs", attributes: ["theirs": "1"], secret: FileKeyringSecret(utf8: "v")))
        }
        #expect(ours.foreignChangesChecked() == 1, "theirs is")
        // Theirs just before ours: our transaction read a version we did not know.
        try theirs.modify { items throws(FileKeyringError) in items.removeAll { $0.label == "theirs" } }
        try ours.modify { items throws(FileKeyringError) in items.removeAll { $0.label == "own" } }
        #expect(ours.foreignChangesChecked() == 2)
    }
}
