import Foundation
import PingStorage
import SecretService
import Testing

/// Who owns `org.freedesktop.secrets` now (its unique name); nil when no one does. The harness's
/// bus starts nothing by itself: a provider that died stays gone, and a restarted one has a new
/// name. (Its PID would not do: a dead provider that is not reaped yet keeps it.)
func secretServiceOwner() async throws -> String? {
    let reply = try await run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                        "--method", "org.freedesktop.DBus.GetNameOwner", "org.freedesktop.secrets"], timeout: 10)
    guard reply.status == 0 else { return nil }
    return reply.output.split(separator: "'").dropFirst().first.map(String.init)
}

extension Integration {
    /// Unlocking as desktop users meet it (`dbus-test/run --prompter`): the provider's real prompt
    /// on a virtual display (GNOME's gcr-prompter, which the bus starts with the display of its
    /// activation environment, or KWallet's and KeePassXC's own dialogs), answered by a person at
    /// the keyboard (dbus-test/person) who types, cancels or takes their time. This process has no
    /// DISPLAY of its own: the prompt is the session's.
    @Suite("Prompter: the provider's real prompt, and a person", .enabled(if: Harness.hasPrompter, "needs dbus-test/run --prompter"))
    struct Prompter {
        /// A locked keyring and an item of `account`, read through the prompt.
        func lockedWithItem(_ account: String, value: String = "behind the prompt") async throws {
            try await KeychainStorage<String>(account: account).save(item: value)
            try await Harness.waitUntilPersisted()
            try Harness.ctl("lock")
        }

        /// The calls the process's connection to the session bus made since the last time asked.
        func callLog() -> [String] { KeychainConfiguration.standard.processClient.takeCallLog() }

        @Test func aLockedKeyringIsReadOnceThePasswordIsTyped() async throws {
            let account = uniqueAccount()
            try await lockedWithItem(account)
            async let person = Person.answer(.typePassword)
            #expect(try await KeychainStorage<String>(account: account).get() == "behind the prompt")
            let title = try await person
            let expected = ["gnome-keyring": "Unlock Login Keyring", "kwallet": "KDE Wallet Service",
                            "keepassxc": "Unlock Database - KeePassXC"][Harness.provider]
            #expect(title == expected, "the prompt's title")
        }

        /// Escape: the read fails with promptDismissed within a second of the key, saying the
        /// prompt was dismissed (it was shown: not "could not show").
        @Test func cancelIsPromptDismissedWithinASecond() async throws {
            let account = uniqueAccount()
            try await lockedWithItem(account)
            async let person = Person.answer(.escape)
            let error = await keychainError { _ = try await KeychainStorage<String>(account: account).get() }
            let failed = Date()
            _ = try await person
            #expect(error?.kind == "promptDismissed", "\(String(describing: error))")
            #expect(error?.failureReason == "The keyring stayed locked: its prompt was dismissed.", "\(String(describing: error))")
            let escape = try #require(Person.promptsSeen().last).acted
            #expect(failed.timeIntervalSince(escape) < 1, "within a second of Escape: \(failed.timeIntervalSince(escape)) s")
            try Harness.ctl("restart")
        }

        /// The person takes 40 s, longer than the call's whole timeout (25 s): the read completes.
        @Test func aPersonWhoTakesFortySecondsStillUnlocks() async throws {
            let account = uniqueAccount()
            try await lockedWithItem(account)
            let started = ContinuousClock.now
            async let person = Person.answer(.typePassword, after: 40)
            #expect(try await KeychainStorage<String>(account: account).get() == "behind the prompt")
            _ = try await person
            #expect(ContinuousClock.now - started >= .seconds(40), "it waited for the person")
        }

        /// No answer within a short prompt timeout: the read fails saying so. GNOME Keyring's unlock
        /// prompt is left on screen (dismissing it aborts GNOME Keyring): the keyring is still
        /// running, and the person's later answer still unlocks it. KWallet's and KeePassXC's are
        /// dismissed (their windows stay: they close on the person's answer only).
        @Test func noAnswerWithinThePromptTimeoutIsReported() async throws {
            let account = uniqueAccount()
            try await lockedWithItem(account)
            let owner = try await secretServiceOwner()
            var configuration = KeychainConfiguration()
            configuration.promptTimeout = .seconds(4)
            async let person = Person.answer(.look)
            let (error, elapsed) = await timedKeychainError { _ = try await KeychainStorage<String>(account: account, configuration: configuration).get() }
            _ = try await person
            #expect(error?.kind == "timedOut", "\(String(describing: error))")
            let gnome = Harness.provider == "gnome-keyring"
            #expect(error?.errorMessage.hasPrefix("No one answered the keyring's prompt within 4 s"
                                                  + (gnome ? "; it is still open" : ", so it was closed.")) == true,
                    "\(String(describing: error))")
            #expect(elapsed >= .milliseconds(3900) && elapsed < .seconds(30), "at the prompt timeout: \(elapsed)")
            #expect(try await secretServiceOwner() == owner, "the provider is still running")
            if gnome {
                #expect(try await Person.seesAPrompt(), "GNOME Keyring's unlock prompt is still on screen")
                try await Person.answer(.typePassword)
                #expect(try await KeychainStorage<String>(account: account).get() == "behind the prompt",
                        "the answer to the prompt left open unlocked the keyring")
            } else {
                try Harness.ctl("restart")
            }
        }

        /// Five reads at once of a locked keyring: one prompt, and all five read.
        @Test func fiveConcurrentReadsShowOnePrompt() async throws {
            let accounts = (1...5).map { uniqueAccount("five\($0)") }
            for account in accounts { try await KeychainStorage<String>(account: account).save(item: "v-\(account)") }
            try await Harness.waitUntilPersisted()
            try Harness.ctl("lock")
            _ = callLog()
            let before = Person.promptsSeen().count
            async let person = Person.answer(.typePassword)
            let values = try await withThrowingTaskGroup(of: (String, String?).self) { group in
                for account in accounts { group.addTask { (account, try await KeychainStorage<String>(account: account).get()) } }
                return try await group.reduce(into: [String: String?]()) { $0[$1.0] = $1.1 }
            }
            _ = try await person
            #expect(accounts.allSatisfy { values[$0] == "v-\($0)" }, "\(values)")
            #expect(callLog().filter { $0 == "Prompt" }.count == 1, "one prompt shown")
            #expect(Person.promptsSeen().count == before + 1)
            #expect(try await Person.seesNoPrompt(), "no second prompt")
        }

        /// Five reads at once, and the person cancels the one prompt: all five fail with
        /// promptDismissed, and no further prompt appears (GNOME Keyring would show the next
        /// queued unlock prompt, one per read).
        @Test func fiveConcurrentReadsCancelledOnceAllFail() async throws {
            let accounts = (1...5).map { uniqueAccount("cancelled\($0)") }
            for account in accounts { try await KeychainStorage<String>(account: account).save(item: "v") }
            try await Harness.waitUntilPersisted()
            try Harness.ctl("lock")
            async let person = Person.answer(.escape)
            let kinds = await withTaskGroup(of: String?.self) { group in
                for account in accounts {
                    group.addTask { await keychainError { _ = try await KeychainStorage<String>(account: account).get() }?.kind }
                }
                return await group.reduce(into: [String?]()) { $0.append($1) }
            }
            _ = try await person
            #expect(kinds == Array(repeating: "promptDismissed", count: 5), "\(kinds)")
            #expect(try await Person.seesNoPrompt(), "no second prompt")
            try Harness.ctl("restart")
        }

        /// The Task is cancelled while the prompt is on screen: the read ends at once with
        /// CancellationError. GNOME Keyring's unlock prompt stays (it cannot be dismissed without
        /// aborting GNOME Keyring), and the keyring keeps running; KWallet and KeePassXC are sent
        /// Dismiss.
        @Test func cancellingTheTaskDuringAPromptEndsTheReadAndKeepsTheKeyring() async throws {
            let account = uniqueAccount()
            try await lockedWithItem(account)
            let owner = try await secretServiceOwner()
            let read = Task { try await KeychainStorage<String>(account: account).get() }
            try await Person.answer(.look)
            let cancelled = ContinuousClock.now
            read.cancel()
            do {
                _ = try await read.value
                Issue.record("the read was cancelled")
            } catch {
                #expect(error is CancellationError, "\(error)")
            }
            #expect(ContinuousClock.now - cancelled < .seconds(2), "at once")
            #expect(try await secretServiceOwner() == owner, "the provider is still running")
            if Harness.provider == "gnome-keyring" {
                #expect(try await Person.seesAPrompt(), "GNOME Keyring's unlock prompt stays on screen")
                try await Person.answer(.typePassword)
                #expect(try await KeychainStorage<String>(account: account).get() == "behind the prompt")
            } else {
                try Harness.ctl("restart")
            }
        }

        /// `ping-keyring unlock`, run without a display of its own, unlocks through the session's prompt.
        @Test func pingKeyringUnlockGoesThroughThePrompt() async throws {
            try await lockedWithItem(uniqueAccount())
            var environment = ProcessInfo.processInfo.environment
            environment["DISPLAY"] = nil
            async let person = Person.answer(.typePassword)
            let result = try await runPingKeyring(["unlock"], environment: environment, timeout: 120)
            _ = try await person
            #expect(result.status == 0, "\(result.output)\(result.stderr)")
            #expect(try await SecretServiceClient().collectionInfo(.default).isLocked == false)
        }

        /// Prompts turned off while another program's unlock prompt is on screen (secret-tool
        /// here): the read is `locked` at once, and GNOME Keyring survives. The client used to
        /// dismiss the unlock prompt it was given and did not show, and GNOME Keyring aborts on
        /// that while any unlock prompt is on screen.
        @Test(.enabled(if: Harness.provider == "gnome-keyring", "GNOME Keyring's unlock queue"))
        func promptsOffBesideAnotherProgramsPromptLeaveGnomeKeyringRunning() async throws {
            let account = uniqueAccount()
            try await lockedWithItem(account)
            let owner = try await secretServiceOwner()
            let theirs = Task { try await run("secret-tool", ["lookup", "service", KeychainConfiguration.defaultService,
                                                              "account", account], timeout: 120) }
            try await Person.answer(.look)
            let error = await keychainError {
                _ = try await KeychainStorage<String>(account: account, configuration: KeychainConfiguration(allowsPrompts: false)).get()
            }
            #expect(error?.kind == "locked", "\(String(describing: error))")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await secretServiceOwner() == owner, "GNOME Keyring is still running")
            try await Person.answer(.typePassword)
            let lookup = try await theirs.value
            #expect(lookup.status == 0, "secret-tool's own prompt was answered: \(lookup.stderr)")
        }
    }
}
