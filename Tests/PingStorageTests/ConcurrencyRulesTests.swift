import Foundation
import Locking
import SecretService
import Testing
@testable import PingStorage
import Waiting

/// A storage whose saves take a random while, so that concurrent saves finish in another order
/// than they started (as KeychainStorage's do, behind its account lock).
final class SlowStorage: Storage {
    let stored = Locked<Int?>(nil)
    /// Reads fail (so that CACHE_ON_FAILURE answers from its cache).
    let failsReads = Locked(false)
    func save(item: Int) async throws {
        try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
        stored.withLock { $0 = item }
    }
    func get() async throws -> Int? {
        if failsReads.withLock({ $0 }) { throw StorageFailure() }
        return stored.withLock { $0 }
    }
    func delete() async throws { stored.withLock { $0 = nil } }
}

@Suite("Waiting and ordering: the cache and the keyring agree, waiters can leave")
struct ConcurrencyRulesTests {
    /// With CACHE, concurrent saves used to set the cache in one order and reach the storage in
    /// another: the cache kept one value and the keyring another.
    @Test(arguments: [CacheStrategy.CACHE, .CACHE_ON_FAILURE])
    func concurrentSavesLeaveTheCacheAndTheStorageHoldingTheSameItem(strategy: CacheStrategy) async throws {
        for _ in 0..<20 {
            let backing = SlowStorage()
            let storage = StorageDelegate<Int>(delegate: backing, cacheStrategy: strategy)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for value in 0..<16 { group.addTask { try await storage.save(item: value) } }
                try await group.waitForAll()
            }
            backing.failsReads.withLock { $0 = true }
            let cached = try await storage.get()
            #expect(cached == backing.stored.withLock { $0 }, "the cache answers what the storage holds")
        }
    }

    @Test func aCallerWaitingForAnAccountLeavesWhenCancelledOrOutOfTime() async throws {
        let locks = AccountLocks()
        let release = OneShot<Void, WaitError>(operation: "hold", deadline: Deadline(timeout: .seconds(30)), timekeeper: .light)
        let holder = Task { try await locks.withLock("k", deadline: Deadline(timeout: .seconds(30))) { try await release.value() } }
        try await Task.sleep(for: .milliseconds(50))

        let cancelled = Task { try await locks.withLock("k", deadline: Deadline(timeout: .seconds(30))) { 1 } }
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        cancelled.cancel()
        do {
            _ = try await cancelled.value
            Issue.record("a cancelled waiter must not get the lock while it is held")
        } catch let error as WaitError {
            #expect(error == .cancelled("wait for another call on the same account"))
        }
        #expect(ContinuousClock.now - started < .seconds(10), "at once, not when the holder is done")

        do {
            _ = try await locks.withLock("k", deadline: Deadline(timeout: .milliseconds(100))) { 2 }
            Issue.record("the lock is still held")
        } catch let error as WaitError {
            #expect(error.isTimedOut)
        }

        // The waiters that left do not keep the lock from being handed on.
        let next = Task { try await locks.withLock("k", deadline: Deadline(timeout: .seconds(30))) { 3 } }
        try await Task.sleep(for: .milliseconds(50))
        release.finish(.success(()))
        try await holder.value
        #expect(try await next.value == 3)
        #expect(try await locks.withLock("other", deadline: Deadline(timeout: .seconds(1))) { 4 } == 4)
    }
}

@Suite("Associated data: one meaning per (service, account)")
struct AssociatedDataTests {
    @Test func contextsThatJoinedAlikeNoLongerCollide() {
        let a = EncryptionContext(service: "a\u{0}b", account: "c")
        let b = EncryptionContext(service: "a", account: "b\u{0}c")
        #expect(a.associatedData != b.associatedData)
        #expect(EncryptionContext(service: "", account: "x\u{0}").associatedData
                != EncryptionContext(service: "x", account: "").associatedData)
    }

    @Test func contextsWithoutNULKeepTheBytesEveryEnvelopeSoFarIsBoundTo() {
        let context = EncryptionContext(service: "com.pingidentity.keychainService", account: "ACCESS_TOKEN_STORAGE")
        #expect(context.associatedData
                == Data("com.pingidentity.PingStorage/v1\u{0}com.pingidentity.keychainService\u{0}ACCESS_TOKEN_STORAGE\u{0}".utf8))
    }

    @Test func theLengthPrefixedFormIsExactlyAsDocumented() {
        let data = EncryptionContext(service: "s\u{0}", account: "ab").associatedData
        #expect(data == Data("com.pingidentity.PingStorage/v2\u{0}".utf8) + [0, 0, 0, 2, 0x73, 0] + [0, 0, 0, 2, 0x61, 0x62])
    }
}
