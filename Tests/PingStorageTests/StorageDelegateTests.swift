import Locking
import SecretService
import Foundation
import Synchronization
import Testing
@testable import PingStorage

struct Dog: Codable, Sendable, Equatable {
    var name: String
    var breed: String
}

struct StorageFailure: Error, Equatable {}

/// A storage whose calls are recorded and which fails on demand.
final class ScriptedStorage<T: Codable & Sendable>: Storage {
    struct State {
        var item: T?
        var failSave = false, failGet = false, failDelete = false
        var calls: [String] = []
    }
    let state = Locked(State())

    func save(item: T) async throws {
        try state.withLock { state in
            state.calls.append("save")
            if state.failSave { throw StorageFailure() }
            state.item = item
        }
    }
    func get() async throws -> T? {
        try state.withLock { state in
            state.calls.append("get")
            if state.failGet { throw StorageFailure() }
            return state.item
        }
    }
    func delete() async throws {
        try state.withLock { state in
            state.calls.append("delete")
            if state.failDelete { throw StorageFailure() }
            state.item = nil
        }
    }
    var calls: [String] { state.withLock { $0.calls } }
    func set(_ body: (inout State) -> Void) { state.withLock { body(&$0) } }
}

let lucky = Dog(name: "Lucky", breed: "Golden Retriever")
let rex = Dog(name: "Rex", breed: "Boxer")

@Suite("StorageDelegate and CacheStrategy")
struct StorageDelegateTests {
    @Test func noCacheAlwaysGoesToStorageAndPropagatesErrors() async throws {
        let backing = ScriptedStorage<Dog>()
        let storage = StorageDelegate(delegate: backing, cacheStrategy: .NO_CACHE)
        try await storage.save(item: lucky)
        #expect(try await storage.get() == lucky)
        #expect(try await storage.get() == lucky)
        #expect(backing.calls == ["save", "get", "get"])
        backing.set { $0.failGet = true }
        await #expect(throws: StorageFailure.self) { try await storage.get() }
        try await storage.delete()
        backing.set { $0.failGet = false }
        #expect(try await storage.get() == nil)
    }

    @Test func cacheAnswersReadsFromMemoryAfterASave() async throws {
        let backing = ScriptedStorage<Dog>()
        let storage = StorageDelegate(delegate: backing, cacheStrategy: .CACHE)
        try await storage.save(item: lucky)
        backing.set { $0.failGet = true }
        #expect(try await storage.get() == lucky, "served from the cache, storage not asked")
        #expect(backing.calls == ["save"])
    }

    @Test func cacheReadsDoNotFillTheCache() async throws {
        let backing = ScriptedStorage<Dog>()
        backing.set { $0.item = lucky }
        let storage = StorageDelegate(delegate: backing, cacheStrategy: .CACHE)
        #expect(try await storage.get() == lucky)
        backing.set { $0.item = rex }
        #expect(try await storage.get() == rex, "the first read was not cached (iOS behaviour)")
        #expect(backing.calls == ["get", "get"])
    }

    @Test func cacheKeepsTheItemWhenTheSaveFails() async throws {
        let backing = ScriptedStorage<Dog>()
        backing.set { $0.failSave = true }
        let storage = StorageDelegate(delegate: backing, cacheStrategy: .CACHE)
        await #expect(throws: StorageFailure.self) { try await storage.save(item: lucky) }
        #expect(try await storage.get() == lucky)
        #expect(backing.calls == ["save"])
    }

    @Test func cacheIsClearedOnlyWhenTheDeleteSucceeds() async throws {
        let backing = ScriptedStorage<Dog>()
        let storage = StorageDelegate(delegate: backing, cacheStrategy: .CACHE)
        try await storage.save(item: lucky)
        backing.set { $0.failDelete = true }
        await #expect(throws: StorageFailure.self) { try await storage.delete() }
        #expect(try await storage.get() == lucky, "a failed delete leaves the cache as it was")
        backing.set { $0.failDelete = false }
        try await storage.delete()
        #expect(try await storage.get() == nil)
        #expect(backing.calls == ["save", "delete", "delete", "get"])
    }

    @Test func cacheOnFailureReadsStorageFirstAndFallsBackToTheCache() async throws {
        let backing = ScriptedStorage<Dog>()
        let storage = StorageDelegate(delegate: backing, cacheStrategy: .CACHE_ON_FAILURE)
        // Empty cache: the storage's error propagates.
        backing.set { $0.failGet = true }
        await #expect(throws: StorageFailure.self) { try await storage.get() }
        backing.set { $0.failGet = false; $0.item = lucky }
        #expect(try await storage.get() == lucky, "a successful read refreshes the cache")
        backing.set { $0.item = rex }
        #expect(try await storage.get() == rex, "storage answers while it works")
        backing.set { $0.failGet = true }
        #expect(try await storage.get() == rex, "the cache answers only when storage fails")
    }

    @Test func cacheOnFailureCachesOnlySuccessfulSaves() async throws {
        let backing = ScriptedStorage<Dog>()
        let storage = StorageDelegate(delegate: backing, cacheStrategy: .CACHE_ON_FAILURE)
        try await storage.save(item: lucky)
        backing.set { $0.failSave = true }
        await #expect(throws: StorageFailure.self) { try await storage.save(item: rex) }
        backing.set { $0.failGet = true }
        #expect(try await storage.get() == lucky)
    }

    @Test func cacheableTrueIsCacheAndFalseIsNoCache() {
        #expect(StorageDelegate(delegate: ScriptedStorage<Dog>(), cacheable: true).cacheStrategy == .CACHE)
        #expect(StorageDelegate(delegate: ScriptedStorage<Dog>(), cacheable: false).cacheStrategy == .NO_CACHE)
        #expect(StorageDelegate(delegate: ScriptedStorage<Dog>()).cacheStrategy == .NO_CACHE)
    }

    @Test func memoryStorageRoundTripsAndIsolatesInstances() async throws {
        let first = MemoryStorage<Dog>()
        let second = MemoryStorage<Dog>(cacheStrategy: .CACHE)
        try await first.save(item: lucky)
        #expect(try await first.get() == lucky)
        #expect(try await second.get() == nil)
        try await first.delete()
        try await first.delete()
        #expect(try await first.get() == nil)
    }

    @Test func concurrentUseOfOneCachedStorage() async throws {
        let storage = MemoryStorage<Int>(cacheable: true)
        await withTaskGroup(of: Void.self) { group in
            for value in 0..<1000 {
                group.addTask {
                    try? await storage.save(item: value)
                    _ = try? await storage.get()
                }
            }
        }
        let last = try #require(try await storage.get())
        #expect((0..<1000).contains(last))
    }
}

/// The iOS page's custom storage, compiled unchanged: a designated `super.init(delegate:cacheable:)`.
public class CustomStorage<T: Codable & Sendable>: Storage, @unchecked Sendable {
    private var data: T?
    public func save(item: T) async throws { data = item }
    public func get() async throws -> T? { data }
    public func delete() async throws { data = nil }
}

public class CustomStorageDelegate<T: Codable & Sendable>: StorageDelegate<T>, @unchecked Sendable {
    public init(cacheable: Bool = false) {
        super.init(delegate: CustomStorage<T>(), cacheable: cacheable)
    }
}

@Test func theDocumentationsCustomStorageCompilesAndWorks() async throws {
    let storage = CustomStorageDelegate<Dog>(cacheable: true)
    try await storage.save(item: lucky)
    #expect(try await storage.get() == lucky)
    let existential: any Storage<Dog> = storage
    try await existential.delete()
    #expect(try await existential.get() == nil)
}
