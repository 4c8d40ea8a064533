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

        /// A freshly started gnome-keyring without a login keyring (an empty keyrings directory, not
        /// unlocked at start), on a bus of its own: headless, its creation prompt cannot be shown.
        @Test(.enabled(if: Harness.provider == "gnome-keyring", "needs gnome-keyring-daemon"))
        func aFreshGnomeKeyringSaysNoDefaultKeyringExistsYet() async throws {
            let directory = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]! + "/fresh-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
            let addressFile = directory + "/bus-address"
            let bus = try BackgroundProcess(
                ["dbus-daemon", "--config-file=\(ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]!)/session.conf",
                 "--nofork", "--print-address=1"], stdoutPath: addressFile)
            defer { bus.stop() }
            var address = ""
            for _ in 0..<200 where address.isEmpty {
                address = (try? String(contentsOfFile: addressFile, encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                if address.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            }
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = address
            environment["HOME"] = directory
            environment["XDG_DATA_HOME"] = directory + "/data"
            // A runtime directory of its own: gnome-keyring-daemon looks for another daemon through
            // the control socket in $XDG_RUNTIME_DIR/keyring, and sharing the harness's, it found the
            // harness's daemon and took over from it; the tests after this one then found no Secret
            // Service at all (noSecretService, 70 of them in one run).
            try FileManager.default.createDirectory(atPath: directory + "/run", withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            environment["XDG_RUNTIME_DIR"] = directory + "/run"
            environment["DISPLAY"] = nil
            environment["WAYLAND_DISPLAY"] = nil
            let daemon = try LoggedProcess(["/usr/bin/gnome-keyring-daemon", "--foreground", "--components=secrets"],
                                           logPath: directory + "/gnome-keyring.log", environment: environment)
            defer { daemon.stop() }

            let neverPrompt = SecretServiceClient(bus: .address(address), options: .init(timeout: .seconds(10), allowsPrompts: false))
            var error: SecretServiceError?
            for _ in 0..<100 {
                error = await secretServiceError { () async throws(SecretServiceError) in try await neverPrompt.collectionPath(.default) }
                guard error?.code == .noSecretService else { break }
                try await Task.sleep(for: .milliseconds(100))  // the daemon is still starting
            }
            #expect(error?.code == .collectionNotFound, "\(String(describing: error))")
            #expect(error?.message == "No default keyring exists yet.", "not '(no label)': \(String(describing: error))")
            #expect(error?.recovery?.hasPrefix("Create one:") == true)

            // Prompts allowed: gnome-keyring's creation prompt cannot be shown here; same message.
            let prompting = SecretServiceClient(bus: .address(address), options: .init(timeout: .seconds(10)))
            let dismissed = await secretServiceError { () async throws(SecretServiceError) in try await prompting.collectionPath(.default) }
            #expect(dismissed?.code == .collectionNotFound, "\(String(describing: dismissed))")
            #expect(dismissed?.message == "No default keyring exists yet.", "\(String(describing: dismissed))")
            #expect(dismissed?.detail?.contains("prompt to create one was dismissed or could not be shown") == true,
                    "\(String(describing: dismissed?.detail))")
        }
    }
}
