import Foundation
import Locking
import SecretService
import Testing

extension Integration {
    /// Callers that wait for work another caller started (here, the transport session being
    /// negotiated) leave on their own cancellation, and the work goes on for the others (issue 11,
    /// "Waiting").
    @Suite("Waiting for the transport session")
    struct FakeWaiting {
        @Test func aCancelledCallerLeavesWhileTheSessionOpensAndTheOtherGetsIt() async throws {
            let fake = try await FakeSecretServiceInstance()
            // Every Secret Service call, OpenSession included, answers after 6 s.
            try fake.scenario("slow", "delay=6")
            let client = fake.client()
            let otherEnded = Locked(false)
            let cancelled = Task { () async throws(SecretServiceError) -> SecretServiceProvider in
                try await client.provider()
            }
            try await Task.sleep(for: .milliseconds(200))
            let other = Task { () async throws(SecretServiceError) -> SecretServiceProvider in
                defer { otherEnded.withLock { $0 = true } }
                return try await client.provider()
            }
            try await Task.sleep(for: .milliseconds(200))
            let cancelledAt = ContinuousClock.now
            cancelled.cancel()
            let result = await cancelled.result
            // At once, not when OpenSession answers (6 s after it was sent): the margin is seconds.
            #expect(ContinuousClock.now - cancelledAt < .seconds(4), "the cancelled caller left before the session was open")
            #expect(otherEnded.withLock { $0 } == false, "and while the other caller still waited")
            switch result {
            case .success: Issue.record("a cancelled caller gets no result")
            case .failure(let error): #expect((error as? SecretServiceError)?.code == .cancelled, "\(error)")
            }
            let provider = try await other.value
            #expect(provider.transportAlgorithm == "dh-ietf1024-sha256-aes128-cbc-pkcs7",
                    "the other caller got the session the first one started")
            #expect(try fake.state().sessionsKept == 1, "one OpenSession for both callers")
        }

        /// Issue 15: a first call's searches go out while the session's Diffie-Hellman exchange
        /// is still under way; only the secret waits for it.
        @Test func searchesDoNotWaitForTheSessionOnlySecretsDo() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.control(["add-item", "--collection", "login", "--label", "x", "--attr", "service=overlap",
                              "--secret-base64", Data("value".utf8).base64EncodedString(), "--modified", "1700000000"])
            try fake.scenario("slow", "delay=4", "method=OpenSession")
            let client = fake.client()
            let found = try await client.searchItems(matching: ["service": "overlap"], in: .default)
            #expect(found.unlocked.count == 1)
            #expect(try fake.state().sessionsKept == 0, "the search was answered before OpenSession was")
            let secret = try await client.secret(of: try #require(found.unlocked.first))
            #expect(secret.value.bytes == Data("value".utf8))
            #expect(try fake.state().sessionsKept == 1, "the secret waited for the one session")
        }
    }
}
