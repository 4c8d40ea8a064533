import Foundation
import Testing
import Waiting

/// SecuredKey's synchronous calls block their caller while async keyring work runs
/// (BlockingBridge). Called from tasks, such callers can block every thread of Swift's cooperative
/// pool: the work, and the unstructured tasks it starts (SharedWork's run), must not need one.
@Suite("BlockingBridge: bridged work needs no thread of Swift's pool")
struct BlockingBridgeTests {
    @Test func bridgedWorkEndsWhileEveryPoolThreadIsBlockedByItsCaller() async {
        // More blocked callers than the pool has threads (one per core on Linux).
        let callers = ProcessInfo.processInfo.activeProcessorCount * 2 + 1
        let shared = SharedWork<Int, WaitError>(timekeeper: .light)
        let results = await withTaskGroup(of: Int?.self) { group in
            for index in 0..<callers {
                group.addTask {
                    // A synchronous caller on a pool thread, as an app calling SecuredKey from a task.
                    let result = BlockingBridge.run(backstop: .seconds(3)) {
                        await Task.yield()
                        return try await shared.value(operation: "shared work", deadline: Deadline(timeout: .seconds(2))) { _ throws(WaitError) in
                            index
                        }
                    }
                    return try? result?.get()
                }
            }
            var all: [Int?] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == callers)
        #expect(results.allSatisfy { $0 != nil }, "every caller got its work's result, none timed out: \(results)")
    }
}
