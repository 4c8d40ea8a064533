import Foundation
import PingStorage

/// `keychain-probe contended-memory`: ten saves at once through a cached StorageDelegate over a
/// slow in-memory store (each save holds the storage's write lock for 20 ms, so nine wait for it),
/// then prints `contended` when they did wait, and one line per thread of the process
/// (`thread NAME`), so a test can check which threads in-memory storage starts.
extension Probe {
    static func contendedMemory() async {
        let storage = StorageDelegate<String>(delegate: SlowMemory(), cacheStrategy: .CACHE)
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<10 {
                group.addTask { try? await storage.save(item: "value \(index)") }
            }
        }
        if ContinuousClock.now - started >= .milliseconds(180) { emit("contended") }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks.sorted() {
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "?"
            emit("thread \(name.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }
}

/// An in-memory store whose saves take 20 ms.
private struct SlowMemory: Storage {
    let memory = Memory<String>()
    func save(item: String) async throws {
        try await Task.sleep(for: .milliseconds(20))
        try await memory.save(item: item)
    }
    func get() async throws -> String? { try await memory.get() }
    func delete() async throws { try await memory.delete() }
}
