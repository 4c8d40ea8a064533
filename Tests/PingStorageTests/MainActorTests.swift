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
}
