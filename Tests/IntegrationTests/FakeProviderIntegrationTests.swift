import DBusTransport
import Foundation
import PingStorage
import SecretService
import Testing

extension Integration {
    /// The fault scenarios of issue 4, each ending in a typed error or the right result within the
    /// deadline, with the provider's items unchanged (checked in the fake's own state). The library
    /// runs in this process, pointed at the fake's bus (see ``FakeSecretServiceInstance``).
    @Suite("Faults through the fake Secret Service")
    struct FakeFaults {
        let account = "acct"

        @Test func lockedWithPromptThatCompletesUnlocksAndReads() async throws {
            let fake = try await FakeSecretServiceInstance()
            try await fake.storage(account).save(item: "kept")
            try fake.scenario("locked-prompt-completes")
            let (neverPrompt, elapsed) = await timedKeychainError { _ = try await fake.storage(account, allowsPrompts: false).get() }
            #expect(neverPrompt?.kind == "locked", "\(String(describing: neverPrompt))")
            #expect(elapsed < .seconds(10), "never-prompt fails at once, not at the 30 s deadline: \(elapsed)")
            #expect(try fake.calls("Prompt") == 0, "no prompt was shown")
            #expect(try await fake.storage(account).get() == "kept")
            #expect(try fake.calls("Prompt") == 1)
        }

        @Test func lockedWithPromptDismissedIsPromptDismissedAndTouchesNothing() async throws {
            let fake = try await FakeSecretServiceInstance()
            let storage = fake.storage(account)
            try await storage.save(item: "kept")
            let before = try fake.items()
            try fake.scenario("locked-prompt-dismissed")
            #expect(await keychainError { _ = try await storage.get() }?.kind == "promptDismissed")
            #expect(await keychainError { try await storage.save(item: "new") }?.kind == "promptDismissed")
            #expect(await keychainError { try await storage.delete() }?.kind == "promptDismissed")
            #expect(await keychainError { _ = try await fake.storage("missing-account").get() }?.kind == "promptDismissed")
            let after = try fake.items()
            #expect(after.map(\.secret) == before.map(\.secret) && after.map(\.path) == before.map(\.path))
        }

        @Test func promptThatNeverCompletesEndsAtThePromptTimeout() async throws {
            let fake = try await FakeSecretServiceInstance()
            try await fake.storage(account).save(item: "kept")
            try fake.scenario("prompt-never-completes")
            let (error, elapsed) = await timedKeychainError {
                _ = try await fake.storage(account, timeout: .seconds(3), promptTimeout: .seconds(5)).get()
            }
            #expect(error?.kind == "timedOut", "\(String(describing: error))")
            #expect(error?.errorMessage.hasPrefix("No one answered the keyring's prompt within 5 s, so it was closed.") == true,
                    "\(String(describing: error))")
            #expect(elapsed >= .milliseconds(4900) && elapsed < .seconds(30),
                    "ends at the 5 s prompt timeout, not at the 3 s call timeout: \(elapsed)")
            #expect(try await fake.awaitCalls("Dismiss", atLeast: 1) == 1, "the prompt left behind is dismissed")
            try fake.scenario("normal")
            #expect(try fake.items().map(\.secret) == [storedJSON("kept")])
        }

        /// KeePassXC crashing while it shows a prompt: libsecret would wait for the prompt forever;
        /// the call ends as soon as the bus reports the provider gone, long before its deadline.
        @Test func providerExitingDuringAPromptEndsTheCallAtOnce() async throws {
            let fake = try await FakeSecretServiceInstance()
            let storage = fake.storage(account, timeout: .seconds(20))
            try await storage.save(item: "kept")
            try fake.scenario("prompt-then-exit")
            let (error, elapsed) = await timedKeychainError { _ = try await storage.get() }
            #expect(error?.kind == "noSecretService", "\(String(describing: error))")
            #expect(elapsed < .seconds(5), "ended when the provider went away, not at the 20 s deadline: \(elapsed)")
            // The same storage (and connection) works once the provider is back, unlocked.
            try await fake.restartAfterExit()
            #expect(try await storage.get() == "kept")
        }

        @Test func promptResultOfTheWrongTypeDoesNotHang() async throws {
            let fake = try await FakeSecretServiceInstance()
            try await fake.storage(account).save(item: "kept")
            try fake.scenario("prompt-wrong-type")
            let (error, elapsed) = await timedKeychainError { _ = try await fake.storage(account).get() }
            #expect(error?.kind == "providerError", "a protocol error, typed: \(String(describing: error))")
            #expect(elapsed < .seconds(10), "at once (the prompt answers after 0.1 s), not at the 30 s deadline: \(elapsed)")
        }

        @Test func slowRepliesEndAtTheDeadline() async throws {
            let fake = try await FakeSecretServiceInstance()
            try await fake.storage(account).save(item: "kept")
            try fake.scenario("slow", "delay=10")
            let storage = fake.storage(account, timeout: .seconds(3))
            let (error, elapsed) = await timedKeychainError { _ = try await storage.get() }
            #expect(error?.kind == "timedOut", "\(String(describing: error))")
            #expect(elapsed >= .milliseconds(2900) && elapsed < .seconds(8), "\(elapsed)")
            // The provider gave no reply at all: the next call probes it (no answer within 500 ms
            // either) and fails at once instead of waiting for its own deadline, without being sent.
            let writesBefore = try fake.calls("CreateItem") + fake.calls("SetSecret")
            let (save, saveElapsed) = await timedKeychainError { try await storage.save(item: "new") }
            #expect(save?.kind == "timedOut", "\(String(describing: save))")
            #expect(save?.detail?.contains("this call was not sent") == true, "\(String(describing: save?.detail))")
            #expect(saveElapsed < .seconds(2), "\(saveElapsed)")
            #expect(try fake.calls("CreateItem") + fake.calls("SetSecret") == writesBefore, "nothing sent")
        }

        /// One process: a read works, then the service dies while a save is in flight, is started
        /// again, and the next call of the same storage works (nothing was lost).
        @Test func serviceExitingMidCallLosesNothingAndTheNextCallReconnects() async throws {
            let fake = try await FakeSecretServiceInstance()
            let storage = fake.storage(account, timeout: .seconds(20))
            try await storage.save(item: "before")
            #expect(try await storage.get() == "before")
            try fake.scenario("exit-mid-call", "method=SetSecret,CreateItem", "when=before")
            let (error, elapsed) = await timedKeychainError { try await storage.save(item: "after") }
            #expect(error?.kind == "noSecretService", "the save in flight fails with a typed error: \(String(describing: error))")
            #expect(elapsed < .seconds(5), "at once, not at the 20 s deadline: \(elapsed)")
            try await fake.restartAfterExit()
            #expect(try await storage.get() == "before", "nothing lost, and the same storage reads again after the restart")
            #expect(try fake.items().map(\.secret) == [storedJSON("before")])
        }

        @Test func plainOnlyProviderIsRefusedUnlessAllowed() async throws {
            let fake = try await FakeSecretServiceInstance(scenario: "plain-only")
            #expect(await keychainError { try await fake.storage(account).save(item: "x") }?.kind == "insecureTransport")
            #expect(try fake.items().isEmpty, "nothing was sent")
            // Plain was offered three times (the KWallet quirk's retries); the two not kept are closed.
            let afterRefusal = try fake.state()
            #expect(afterRefusal.sessionsOpened == 3 && afterRefusal.sessionsKept == 1,
                    "opened \(afterRefusal.sessionsOpened), kept \(afterRefusal.sessionsKept)")
            try await fake.storage(account, allowsPlainTransport: true).save(item: "x")
            #expect(try await fake.storage(account, allowsPlainTransport: true).get() == "x")
            let sessions = try fake.state().sessions
            #expect(!sessions.isEmpty && sessions.allSatisfy { $0.algorithm == "plain" }, "\(sessions)")
        }

        @Test func noDefaultAliasNamesTheFixAndTheCollections() async throws {
            let fake = try await FakeSecretServiceInstance(scenario: "no-default-alias")
            let error = await keychainError { try await fake.storage(account).save(item: "x") }
            #expect(error?.kind == "collectionNotFound", "\(String(describing: error))")
            #expect(error?.errorMessage.contains("it has: Login") == true, "names what exists: \(String(describing: error))")
            #expect(try fake.items().isEmpty, "no collection or item created silently")
            let byPath = fake.storage(account, collection: .path(fakeLogin))
            try await byPath.save(item: "x")
            #expect(try fake.items().map(\.secret) == [storedJSON("x")])
        }

        /// GNOME Keyring 42–50 can handle a new client's first call before it has registered the
        /// client, and then answers `ReadAlias("default")` with "/" although the login keyring is
        /// there. The client asks again before it believes that no default collection exists:
        /// creating one would ask the person for a new keyring's password.
        @Test func aMissedDefaultAliasIsAskedAgainBeforeAKeyringIsCreated() async throws {
            let fake = try await FakeSecretServiceInstance(scenario: "default-alias-missed")
            try await fake.storage(account).save(item: "x")
            #expect(try await fake.storage(account).get() == "x")
            #expect(try fake.calls("ReadAlias") == 2, "asked twice, then remembered")
            #expect(try fake.calls("CreateCollection") == 0, "no keyring created, no prompt")
            #expect(try fake.state().items.map(\.collection) == [fakeLogin], "saved into login")
        }

        @Test func duplicatesReadTheNewestAndSaveLeavesOne() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.seed(account: account, value: "middle", modified: 1_700_000_100)
            try fake.seed(account: account, value: "newest", modified: 1_700_000_200)
            try fake.seed(account: account, value: "oldest", modified: 1_700_000_000)
            try fake.scenario("duplicates", "order=reverse")
            #expect(try await fake.storage(account).get() == "newest")
            #expect(try fake.items().count == 3)
            try await fake.storage(account).save(item: "one")
            let items = try fake.items()
            #expect(items.count == 1)
            #expect(items.first?.secret == storedJSON("one"))
        }

        @Test func forgottenSessionsAreReopenedWithoutAFailedCall() async throws {
            let fake = try await FakeSecretServiceInstance()
            let storage = fake.storage(account)
            try await storage.save(item: "kept")
            #expect(try await storage.get() == "kept")
            let opened = try fake.state().sessionsKept
            try fake.scenario("no-session-after-restart")
            #expect(try await storage.get() == "kept")
            try await storage.save(item: "changed")
            #expect(try await storage.get() == "changed")
            #expect(try fake.state().sessionsKept == opened + 1, "one new session, for the first call after the switch")
        }
    }
}
