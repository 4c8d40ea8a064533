import Foundation
import PingStorage
import DBusTransport
import SecretService
import Testing

extension Integration {
    /// A prompt is the person's time: the fake's prompt completes after longer than the call's
    /// timeout, and the call still completes; callers waiting behind the prompt (on the same
    /// account, on the same collection) keep their time too, and share its one answer.
    @Suite("Prompt time through the fake Secret Service")
    struct FakePromptTime {
        let login = ObjectPath.fakeLogin

        /// The fake's prompt answers after 7 s; the call may take 5 s, and still reads the secret
        /// after the prompt (GetSecret, IsLocked, Unlock, the prompt, GetSecret again).
        @Test func aPromptLongerThanTheCallsTimeoutDoesNotEndTheCall() async throws {
            let fake = try await FakeSecretServiceInstance()
            let item = try await fake.client().createItem(in: .default, label: "kept", attributes: ["account": "long-prompt"],
                                                          secret: SecretValue(bytes: Data("kept".utf8))).path
            try fake.scenario("locked-prompt-completes", "delay=7")
            let client = fake.client(timeout: .seconds(5))
            let started = ContinuousClock.now
            #expect(try await client.secret(of: item).value.bytes == Data("kept".utf8))
            #expect(ContinuousClock.now - started >= .milliseconds(6900), "it waited for the prompt")
            #expect(try fake.calls("Prompt") == 1)
        }

        @Test func aKeychainStorageReadWaitsForThePersonAndReads() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.seed(account: "reader", value: "kept", modified: 1_700_000_000)
            try fake.scenario("locked-prompt-completes", "delay=7")
            #expect(try await fake.storage("reader", timeout: .seconds(5)).get() == "kept")
            #expect(try fake.calls("Prompt") == 1)
        }

        /// Two reads of one account: the second waits for the account while the first shows the
        /// prompt, and keeps its time meanwhile.
        @Test func aReadWaitingBehindAPromptOnTheSameAccountKeepsItsTime() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.seed(account: "shared", value: "kept", modified: 1_700_000_000)
            try fake.scenario("locked-prompt-completes", "delay=7")
            let storage = fake.storage("shared", timeout: .seconds(5))
            async let first = storage.get()
            async let second = storage.get()
            let (a, b) = try await (first, second)
            #expect(a == "kept" && b == "kept")
            #expect(try fake.calls("Prompt") == 1)
        }

        /// Five concurrent reads of five accounts of one locked collection: one prompt, and all
        /// five read once it is answered.
        @Test func fiveConcurrentReadsWaitForOnePrompt() async throws {
            let fake = try await FakeSecretServiceInstance()
            let accounts = (1...5).map { "five-\($0)" }
            for account in accounts { try fake.seed(account: account, value: "v-\(account)", modified: 1_700_000_000) }
            try fake.scenario("locked-prompt-completes", "delay=1")
            let values = try await withThrowingTaskGroup(of: (String, String?).self) { group in
                for account in accounts {
                    group.addTask { (account, try await fake.storage(account, timeout: .seconds(20)).get()) }
                }
                return try await group.reduce(into: [String: String?]()) { $0[$1.0] = $1.1 }
            }
            #expect(values.count == 5 && accounts.allSatisfy { values[$0] == "v-\($0)" }, "\(values)")
            #expect(try fake.calls("Prompt") == 1, "one prompt for the five reads:\n\(fake.log)")
        }

        /// The person dismissed the one prompt: every read waiting for it fails as it did, and no
        /// second prompt is shown.
        @Test func aDismissedPromptFailsEveryReadWaitingForIt() async throws {
            let fake = try await FakeSecretServiceInstance()
            let accounts = (1...5).map { "no-\($0)" }
            for account in accounts { try fake.seed(account: account, value: "v", modified: 1_700_000_000) }
            try fake.scenario("locked-prompt-dismissed", "delay=1")
            let kinds = await withTaskGroup(of: String?.self) { group in
                for account in accounts {
                    group.addTask { await keychainError { _ = try await fake.storage(account).get() }?.kind }
                }
                return await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(kinds == Array(repeating: "promptDismissed", count: 5), "\(kinds)")
            #expect(try fake.calls("Prompt") == 1, "one prompt, dismissed once for all:\n\(fake.log)")
        }

        /// SecuredKeyEncryptor's key is read through the same calls: two saves that need the key
        /// of a locked keyring wait for one prompt, the second (waiting for the key the first
        /// reads) keeping its time meanwhile.
        @Test func twoEncryptedSavesWaitForThePromptOfTheirKey() async throws {
            let fake = try await FakeSecretServiceInstance()
            let writing = KeychainConfiguration(bus: .address(fake.busAddress), keyBinding: .none)
            try await KeychainStorage<String>(account: "first-key", encryptor: SecuredKeyEncryptor(configuration: writing)!,
                                              configuration: writing).save(item: "makes the key")
            try fake.scenario("locked-prompt-completes", "delay=7")
            // Another configuration: another key vault, which reads the key from the keyring.
            var shorter = writing
            shorter.timeout = .seconds(5)
            let configuration = shorter
            let encryptor = SecuredKeyEncryptor(configuration: configuration)!
            let first = KeychainStorage<String>(account: "sealed-1", encryptor: encryptor, configuration: configuration)
            let second = KeychainStorage<String>(account: "sealed-2", encryptor: encryptor, configuration: configuration)
            async let one: Void = first.save(item: "one")
            async let two: Void = second.save(item: "two")
            _ = try await (one, two)
            #expect(try fake.calls("Prompt") == 1, "one prompt:\n\(fake.log)")
            #expect(try await second.get() == "two")
        }
    }
}
