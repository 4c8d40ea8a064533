import Foundation
import PingStorage
import SecretService
import Testing

extension Integration {
    /// The first run on a keyring service with no default collection (a freshly activated
    /// gnome-keyring has only its in-memory `session` collection): one is created through the
    /// provider's prompt when prompts are allowed, as libsecret and oo7 do; otherwise the error
    /// says that no default keyring exists yet and how to create one, and the doctor says so too.
    @Suite("First run: no default collection")
    struct FirstRun {
        let account = "first-run"

        @Test func theDefaultCollectionIsCreatedThroughItsPromptOnce() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("no-default-collection")
            #expect(try fake.state().collections.map(\.path) == ["/org/freedesktop/secrets/collection/session"])
            // Two first calls at once (a save and a read of another account) create one collection.
            async let saved: Void = fake.storage(account).save(item: "first")
            async let read = fake.storage("other").get()
            try await saved
            #expect(try await read == nil)
            let state = try fake.state()
            #expect(state.calls["CreateCollection"] == 1 && state.calls["Prompt"] == 1, "\(state.calls)")
            let created = try #require(state.collections.first { $0.aliases.contains("default") })
            #expect(created.label == "Default keyring")
            #expect(state.items.map(\.collection) == [created.path], "the item went into the new default collection")
            #expect(try await fake.storage(account).get() == "first")
        }

        @Test func withoutPromptsTheErrorSaysNoDefaultKeyringExistsYetAndHowToCreateOne() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("no-default-collection")
            let error = await keychainError { try await fake.storage(account, allowsPrompts: false).save(item: "x") }
            #expect(error?.kind == "collectionNotFound", "\(String(describing: error))")
            #expect(error?.failureReason == "No default keyring exists yet.", "\(String(describing: error))")
            #expect(error?.recoverySuggestion?.hasPrefix("Create one:") == true)
            #expect(error?.detail?.contains("prompts are turned off") == true, "\(String(describing: error?.detail))")
            #expect(try fake.calls("CreateCollection") == 0 && fake.state().collections.count == 1, "nothing created")

            // The doctor checks it (and never creates anything).
            let doctor = try pingKeyring(["doctor"], environment: fake.environment, timeout: 60)
            #expect(doctor.status == 3, "\(doctor.output)\(doctor.stderr)")
            #expect(doctor.output.contains("FAIL  collection") && doctor.output.contains("No default keyring exists yet."),
                    "\(doctor.output)")
            #expect(doctor.output.contains("fix: no default keyring exists yet: create one"), "\(doctor.output)")
            #expect(try fake.calls("CreateCollection") == 0)
        }

        @Test func aDismissedCreationPromptCreatesNothing() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("no-default-collection", "prompt=dismiss")
            let error = await keychainError { try await fake.storage(account).save(item: "x") }
            #expect(error?.kind == "collectionNotFound", "\(String(describing: error))")
            #expect(error?.failureReason == "No default keyring exists yet.")
            #expect(error?.detail?.contains("prompt to create one was dismissed") == true, "\(String(describing: error?.detail))")
            #expect(try fake.state().collections.count == 1 && fake.items().isEmpty)
        }

        /// The creation prompt runs inside the one shared read of the `default` alias; when every
        /// call waiting for it is cancelled, it is dismissed (the person is not left answering a
        /// prompt no call waits for), and the next call asks again.
        @Test func cancellingTheOnlyCallDismissesTheCreationPrompt() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("no-default-collection", "delay=30")
            let save = Task { try await fake.storage(account).save(item: "x") }
            #expect(try await fake.awaitCalls("Prompt", atLeast: 1, timeout: .seconds(10)) == 1)
            save.cancel()
            await #expect(throws: CancellationError.self) { try await save.value }
            #expect(try await fake.awaitCalls("Dismiss", atLeast: 1) == 1, "the creation prompt was dismissed:\n\(fake.log)")
            #expect(try fake.state().collections.count == 1, "nothing was created")
        }

        /// A freshly started gnome-keyring without a login keyring (an empty keyrings directory, not
        /// unlocked at start), on a bus of its own that starts no prompter: headless, its creation
        /// prompt cannot be shown, and the error says so and what works here, which is then done.
        @Test(.enabled(if: Harness.provider == "gnome-keyring", "needs gnome-keyring-daemon"))
        func aFreshGnomeKeyringSaysNoDefaultKeyringExistsYetAndWhatWorksHeadless() async throws {
            let fresh = try await FreshGnomeKeyring()
            let neverPrompt = SecretServiceClient(bus: .address(fresh.address), options: .init(timeout: .seconds(10), allowsPrompts: false))
            let error = await secretServiceError { () async throws(SecretServiceError) in try await neverPrompt.collectionPath(.default) }
            #expect(error?.code == .collectionNotFound, "\(String(describing: error))")
            #expect(error?.message == "No default keyring exists yet.", "not '(no label)': \(String(describing: error))")
            #expect(error?.recovery?.hasPrefix("Create one: run a program that allows prompts in the desktop session once "
                                               + "(GNOME Keyring shows \"Choose password for new keyring\"") == true,
                    "\(String(describing: error?.recovery))")
            #expect(error?.detail?.contains("prompts are turned off") == true, "\(String(describing: error?.detail))")

            // Prompts allowed: gnome-keyring dismisses its creation prompt at once, no prompter on
            // the bus: the error says it could not be shown, and not to run again with prompts
            // allowed (they were) or `secret-tool store` (it meets the same prompt).
            let prompting = SecretServiceClient(bus: .address(fresh.address), options: .init(timeout: .seconds(10)))
            let (unseen, elapsed) = await timedSecretServiceError { () async throws(SecretServiceError) in
                try await prompting.collectionPath(.default)
            }
            #expect(unseen?.code == .collectionNotFound, "\(String(describing: unseen))")
            #expect(unseen?.message == "No default keyring exists yet.", "\(String(describing: unseen))")
            #expect(unseen?.detail?.contains("prompt to create one could not be shown: GNOME Keyring could not start its prompter") == true,
                    "\(String(describing: unseen?.detail))")
            let advice = unseen?.recovery ?? ""
            #expect(advice.hasPrefix("Create one from the desktop session, where GNOME Keyring can ask for its password"), "\(advice)")
            #expect(!advice.contains("prompts allowed") && !advice.contains("secret-tool"), "\(advice)")
            #expect(advice.contains("`gnome-keyring-daemon --replace --unlock`, with its password on standard input"), "\(advice)")
            #expect(elapsed < .seconds(5), "at once: \(elapsed)")
            let failed = await keychainError { try await fresh.storage("first").save(item: "x") }
            #expect(failed?.kind == "collectionNotFound" && failed?.recoverySuggestion == advice, "\(String(describing: failed))")

            // What the advice says works without a desktop does.
            try await fresh.replaceWithUnlockedLoginKeyring(password: "first run \(UUID().uuidString.prefix(6))")
            try await fresh.storage("first").save(item: "saved")
            #expect(try await fresh.storage("first").get() == "saved")
        }
    }
}
