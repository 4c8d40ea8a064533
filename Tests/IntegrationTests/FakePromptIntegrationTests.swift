import DBusTransport
import Foundation
import PingStorage
import SecretService
import Testing

extension Integration {
    /// Prompts, and a provider that exits, as SecretServiceClient sees them (in this process): every
    /// call ends with the right result or a typed error, at once unless it has to wait for a prompt,
    /// and a client keeps working once the provider is back.
    @Suite("Prompts and exits through the fake Secret Service")
    struct FakePrompts {
        let login = ObjectPath.fakeLogin

        @Test func unlockThroughAPromptThatCompletes() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("locked-prompt-completes")
            let client = fake.client()
            #expect(try await client.collectionInfo(.default).isLocked)
            try await client.unlock([login])
            #expect(try await client.collectionInfo(.default).isLocked == false)
            #expect(try fake.calls("Prompt") == 1)
            #expect(try fake.state().collection(fakeLogin)?.locked == false)
        }

        @Test func unlockThroughADismissedPromptIsPromptDismissed() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("locked-prompt-dismissed")
            let client = fake.client()
            let (error, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await client.unlock([login])
            }
            #expect(error?.code == .promptDismissed, "\(String(describing: error))")
            #expect(elapsed < .seconds(10), "at once, not at the 30 s deadline: \(elapsed)")
            #expect(try fake.calls("Prompt") == 1)
            #expect(try fake.state().collection(fakeLogin)?.locked == true)
        }

        @Test func unlockThroughAPromptThatNeverCompletesReachesThePromptTimeoutAndDismissesIt() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("prompt-never-completes")
            let client = fake.client(timeout: .seconds(3), promptTimeout: .seconds(5))
            let (error, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await client.unlock([login])
            }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(error?.message.hasPrefix("No one answered the keyring's prompt within 5 s, so it was closed.") == true,
                    "\(String(describing: error))")
            #expect(elapsed >= .milliseconds(4900) && elapsed < .seconds(30), "at the 5 s prompt timeout, not the 3 s call timeout: \(elapsed)")
            #expect(try fake.calls("Prompt") == 1)
            #expect(try await fake.awaitCalls("Dismiss", atLeast: 1) == 1, "the prompt was dismissed:\n\(fake.log)")
            #expect(try fake.state().collection(fakeLogin)?.locked == true)
        }

        @Test func promptResultOfTheWrongTypeIsAProtocolErrorAtOnce() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("prompt-wrong-type")
            let client = fake.client()
            let (error, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await client.unlock([login])
            }
            #expect(error?.code == .protocolError, "\(String(describing: error))")
            #expect(elapsed < .seconds(10), "when the prompt answers (0.1 s), not at the 30 s deadline: \(elapsed)")
            #expect(try fake.calls("Prompt") == 1)
        }

        @Test func unlockWithPromptsOffIsLockedAtOnceAndShowsNoPrompt() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("locked-prompt-completes")
            let client = fake.client(allowsPrompts: false)
            #expect(try await client.collectionInfo(.default).isLocked, "connected before the timed call")
            let (error, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await client.unlock([login])
            }
            #expect(error?.code == .locked, "\(String(describing: error))")
            #expect(elapsed < .seconds(5), "at once, not at the 30 s deadline: \(elapsed)")
            #expect(try fake.calls("Unlock") == 1)
            #expect(try await fake.awaitCalls("Dismiss", atLeast: 1) == 1, "the prompt Unlock returned is dismissed unseen")
            #expect(try fake.calls("Prompt") == 0, "no Prompt() call:\n\(fake.log)")
            #expect(try fake.state().collection(fakeLogin)?.locked == true)
        }

        /// The provider dies on receiving GetSecret: the call ends with a typed error as soon as
        /// the bus says so, and the same client reads the item once the provider is back.
        @Test func serviceExitingMidCallEndsTheCallAtOnceAndTheNextCallWorks() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client(timeout: .seconds(20))
            let item = try await client.createItem(in: .default, label: "kept", attributes: ["account": "A"],
                                                   secret: SecretValue(bytes: Data("kept".utf8))).path
            try fake.scenario("exit-mid-call", "method=GetSecret")
            let (error, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await client.secret(of: item)
            }
            #expect(error?.code == .noSecretService, "\(String(describing: error))")
            #expect(elapsed < .seconds(5), "at once, not at the 20 s deadline: \(elapsed)")
            try await fake.restartAfterExit()
            #expect(try await client.secret(of: item).value.bytes == Data("kept".utf8))
        }

        /// The provider exits while its prompt is open (libsecret waits forever): the call ends at
        /// once, and after the restart the same client unlocks through a new prompt.
        @Test func serviceExitingDuringAPromptEndsTheCallAtOnceAndTheNextCallWorks() async throws {
            let fake = try await FakeSecretServiceInstance()
            let client = fake.client(timeout: .seconds(20))
            try fake.scenario("prompt-then-exit")
            let (error, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await client.unlock([login])
            }
            #expect(error?.code == .noSecretService, "\(String(describing: error))")
            #expect(elapsed < .seconds(5), "at once, not at the 20 s deadline: \(elapsed)")
            try await fake.restartAfterExit()
            try fake.scenario("locked-prompt-completes")
            try await client.unlock([login])
            #expect(try fake.state().collection(fakeLogin)?.locked == false)
            #expect(try fake.calls("Prompt") == 1, "the new provider's prompt")
        }
    }
}
