import Foundation
import Locking
import SecretService
import Testing

extension Integration {
    /// Callers that wait for work another caller started (here, a connection being opened) leave
    /// on their own cancellation, and the work goes on for the others (issue 11, "Waiting").
    @Suite("Waiting for a connection another caller is opening")
    struct FakeWaiting {
        @Test func aCancelledCallerLeavesWhileTheConnectionOpensAndTheOtherGetsIt() async throws {
            try Harness.requireHarness()
            let fake = try await FakeSecretServiceInstance()
            // Every Secret Service call, OpenSession included, answers after 6 s.
            try fake.scenario("slow", "delay=6")
            let client = fake.client()
            let otherEnded = Locked(false)
            let cancelled = Task { () async throws(SecretServiceError) -> SecretCollectionInfo in
                try await client.collectionInfo(.default)
            }
            try await Task.sleep(for: .milliseconds(200))
            let other = Task { () async throws(SecretServiceError) -> SecretCollectionInfo in
                defer { otherEnded.withLock { $0 = true } }
                return try await client.collectionInfo(.default)
            }
            try await Task.sleep(for: .milliseconds(200))
            let cancelledAt = ContinuousClock.now
            cancelled.cancel()
            let result = await cancelled.result
            // At once, not when OpenSession answers (6 s after it was sent): the margin is seconds.
            #expect(ContinuousClock.now - cancelledAt < .seconds(4), "the cancelled caller left before the connection was open")
            #expect(otherEnded.withLock { $0 } == false, "and while the other caller still waited")
            switch result {
            case .success: Issue.record("a cancelled caller gets no result")
            case .failure(let error): #expect((error as? SecretServiceError)?.code == .cancelled, "\(error)")
            }
            let info = try await other.value
            #expect(info.path == .fakeLogin, "the other caller got the collection over the connection the first one started")
        }
    }
}
