import Foundation
import Testing
@testable import PingStorage

/// A delegate that records on which actor it was called (nonsending: it runs where its caller is).
private final class IsolationRecorder: Storage, @unchecked Sendable {
    // @unchecked Sendable: `calledOnMainActor` is written only on the main actor (the tests call
    // from it) and read after the awaited call returned.
    var calledOnMainActor: [Bool] = []
    nonisolated(nonsending) func save(item: Int) async throws { record(#isolation) }
    nonisolated(nonsending) func get() async throws -> Int? { record(#isolation); return 1 }
    nonisolated(nonsending) func delete() async throws { record(#isolation) }
    private func record(_ isolation: (any Actor)?) { calledOnMainActor.append(isolation === MainActor.shared) }
}

/// A `Storage` conformer written the iOS way: no isolation annotations at all.
private struct IOSShapedStorage: Storage {
    let box = Box()
    final class Box: @unchecked Sendable {
        // @unchecked Sendable: test-only, used by one task at a time.
        var item: String?
    }
    func save(item: String) async throws { box.item = item }
    func get() async throws -> String? { box.item }
    func delete() async throws { box.item = nil }
}

/// An actor to call from: its identity is what `#isolation` names in a callee that runs on it.
private actor CallerActor {
    func get(_ storage: some Storage<String>) async throws { _ = try await storage.get() }
    func get(_ storage: any Storage<String>) async throws { _ = try await storage.get() }
    func getThroughADelegate(_ storage: any Storage<String>) async throws {
        _ = try await StorageDelegate(delegate: storage, cacheStrategy: .NO_CACHE).get()
    }
}

/// A conformer that records the isolation (`#isolation`, by identity) its `get` ran with.
private final class NonsendingProbe: Storage, @unchecked Sendable {
    // @unchecked Sendable: the array is written by one call at a time and read after it returned.
    var isolations: [ObjectIdentifier?] = []
    nonisolated(nonsending) func save(item: String) async throws {}
    nonisolated(nonsending) func get() async throws -> String? {
        isolations.append(#isolation.map { ObjectIdentifier($0) })
        return nil
    }
    nonisolated(nonsending) func delete() async throws {}
}

/// A StorageDelegate subclass written the iOS way.
private final class IOSShapedDelegate: StorageDelegate<String>, @unchecked Sendable {
    init() { super.init(delegate: IOSShapedStorage(), cacheable: true) }
}

@Suite("Calls from the main actor stay on it")
struct MainActorTests {
    @MainActor @Test func storageDelegateCallsItsDelegateOnTheCallersActor() async throws {
        let recorder = IsolationRecorder()
        for strategy in [CacheStrategy.NO_CACHE, .CACHE, .CACHE_ON_FAILURE] {
            let storage = StorageDelegate<Int>(delegate: recorder, cacheStrategy: strategy)
            try await storage.save(item: 1)
            _ = try await storage.get()
            try await storage.delete()
        }
        #expect(!recorder.calledOnMainActor.isEmpty)
        #expect(recorder.calledOnMainActor.allSatisfy { $0 }, "\(recorder.calledOnMainActor)")
    }

    @MainActor @Test func iOSShapedConformersAndSubclassesStillWork() async throws {
        let storage = IOSShapedDelegate()
        try await storage.save(item: "token")
        #expect(try await storage.get() == "token")
        let plain: any Storage<String> = IOSShapedStorage()
        try await plain.save(item: "other")
        #expect(try await plain.get() == "other")
        try await plain.delete()
        #expect(try await plain.get() == nil)
    }

    /// Which executor a Storage call runs on, settled by `#isolation`: a `nonisolated(nonsending)`
    /// conformer runs with its caller's isolation, called directly, through an existential, or
    /// through a ``StorageDelegate`` (whose methods are nonsending too); so a cached read from the
    /// main actor never leaves it. (A conformer written the iOS way is a plain nonisolated async
    /// function, which SE-0338 runs on the global concurrent executor; nothing about it to assert
    /// here: its `#isolation` is nil by construction.)
    @Test func whichExecutorAStorageCallRunsOn() async throws {
        let caller = CallerActor()
        let probe = NonsendingProbe()
        try await caller.get(probe)
        try await caller.get(probe as any Storage<String>)
        try await caller.getThroughADelegate(probe)
        #expect(probe.isolations == Array(repeating: ObjectIdentifier(caller), count: 3))
        // From no actor, it has none.
        _ = try await probe.get()
        #expect(probe.isolations.last == .some(nil))
    }
}
