import Foundation
import SecretService
import Testing
@testable import PingStorage

/// A cacheable KeychainStorage's cache follows what other processes do to the item (the fake plays
/// them: ``FakeSecretService/otherProcessWrites(_:at:)``), announced or not; the process's own saves
/// keep it; and between checks a cached get reads nothing.
@Suite("A cache that stays true across processes (in-memory Secret Service)")
struct CacheAcrossProcessesTests {
    private func cachedStorage(_ fake: FakeSecretService, account: String = "cached") -> KeychainStorage<String> {
        KeychainStorage<String>(account: account, encryptor: NoEncryptor(), cacheStrategy: .CACHE,
                                configuration: KeychainConfiguration(), backend: fake)
    }

    private func ourItem(_ fake: FakeSecretService) throws -> ItemPath {
        try #require(fake.items.first { $0.value.attributes["account"] == "cached" }?.key)
    }

    @Test(arguments: [true, false])
    func anotherProcesssSaveReachesTheCache(announced: Bool) async throws {
        let fake = FakeSecretService()
        fake.state.withLock { $0.announcesSecretChanges = announced }
        let storage = cachedStorage(fake)
        try await storage.save(item: "ours")
        let reads = fake.reads
        #expect(try await storage.get() == "ours")
        #expect(fake.reads == reads, "a cached get reads nothing")
        fake.otherProcessWrites(Data("\"theirs\"".utf8), at: try ourItem(fake))
        if !announced {
            // Not announced (GNOME Keyring): heard at the first check, at most CacheStamp.trustedFor later.
            try await Task.sleep(for: CacheStamp.trustedFor + .milliseconds(10))
        }
        #expect(try await storage.get() == "theirs")
    }

    /// Another process's save announced while this process checks its cache (here: the check
    /// after its own save, which reads the item) is examined by the next get, not counted as
    /// checked: KWallet and KeePassXC announce it, so nothing else would ever look again.
    @Test func aSaveAnnouncedDuringACheckReachesTheCache() async throws {
        let fake = FakeSecretService()
        let storage = cachedStorage(fake)
        fake.state.withLock { $0.writeAfterNextRead = Data("\"theirs\"".utf8) }
        try await storage.save(item: "ours")
        #expect(fake.state.withLock { $0.writeAfterNextRead } == nil, "the check after the save read the item")
        #expect(try await storage.get() == "theirs")
    }

    /// Another process's save returned, and its announcement is routed to us but not yet read
    /// from the socket: a get after the cache's time of trust waits one round trip to the bus
    /// and sees it; within that time, or with nothing on its way, a cached get makes no call.
    @Test func anAnnouncementStillOnItsWayIsWaitedFor() async throws {
        let fake = FakeSecretService()
        let storage = cachedStorage(fake)
        try await storage.save(item: "ours")
        #expect(try await storage.get() == "ours")
        try await Task.sleep(for: CacheStamp.trustedFor + .milliseconds(10))
        let (reads, trips) = (fake.reads, fake.state.withLock { $0.roundTripsToTheBus })
        #expect(try await storage.get() == "ours")
        #expect(fake.reads == reads, "nothing heard about the item: not read")
        #expect(fake.state.withLock { $0.roundTripsToTheBus } == trips + 1, "one round trip to the bus")
        #expect(try await storage.get() == "ours")
        #expect(fake.state.withLock { $0.roundTripsToTheBus } == trips + 1, "trusted again for a while: no call")

        try await Task.sleep(for: CacheStamp.trustedFor + .milliseconds(10))
        fake.otherProcessWrites(Data("\"theirs\"".utf8), at: try ourItem(fake), announcementOnItsWay: true)
        #expect(try await storage.get() == "theirs")
    }

    @Test func anotherProcesssDeleteReachesTheCache() async throws {
        let fake = FakeSecretService()
        let storage = cachedStorage(fake)
        try await storage.save(item: "ours")
        #expect(try await storage.get() == "ours")
        fake.otherProcessDeletes(try ourItem(fake))
        #expect(try await storage.get() == nil, "a logout in another process is a logout here")
    }

    /// The process's own saves keep the cache: after each, gets are answered from memory.
    @Test func ownSavesKeepTheCache() async throws {
        let fake = FakeSecretService()
        let storage = cachedStorage(fake)
        for value in ["one", "two", "three"] {
            try await storage.save(item: value)
            let reads = fake.reads
            for _ in 0..<5 { #expect(try await storage.get() == value) }
            #expect(fake.reads == reads, "after our own save of \(value), gets read nothing")
        }
    }

    /// Another account's item changing, or another item created, does not hand back another value.
    @Test func anotherItemsChangeIsNoChangeOfOurs() async throws {
        let fake = FakeSecretService()
        let storage = cachedStorage(fake)
        try await storage.save(item: "ours")
        try await cachedStorage(fake, account: "other").save(item: "x")
        fake.otherProcessWrites(Data("\"y\"".utf8), at: try #require(fake.items.first { $0.value.attributes["account"] == "other" }?.key))
        #expect(try await storage.get() == "ours")
    }

    /// After another process's save, or another item's creation, has made the cache stale, the value
    /// read from the keyring is what the cache holds: the gets after it read nothing (a cache
    /// dropped for good would read the keyring on every get for the rest of the process).
    @Test func aStaleCacheIsReplacedByWhatTheKeyringHolds() async throws {
        let fake = FakeSecretService()
        let storage = cachedStorage(fake)
        try await storage.save(item: "ours")
        fake.otherProcessWrites(Data("\"theirs\"".utf8), at: try ourItem(fake))
        fake.seed(attributes: ["service": "elsewhere", "account": "x"], secret: "created meanwhile")
        #expect(try await storage.get() == "theirs")
        let reads = fake.reads
        for _ in 0..<5 { #expect(try await storage.get() == "theirs") }
        #expect(fake.reads == reads, "the gets after it read nothing")
    }
}
