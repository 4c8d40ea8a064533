import Dispatch
import Foundation
import PingStorage
import SecretService
import Synchronization
import Testing

/// A task executor that runs one job at a time on one serial queue: if anything in a task on it
/// blocked, every other task on it would stop too.
final class SingleThreadExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "single-thread-executor")
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

extension Integration {
    @Suite("Faults: no bus, no provider, restarts, hangs, locks")
    struct Faults {
        @Test func noSessionBusIsATypedErrorNotAHang() async throws {
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(environment["DBUS_TEST_DIR"]!)/no-such-bus"
            environment["DISPLAY"] = nil
            let started = ContinuousClock.now
            let result = try await run(Harness.probePath, ["get", "any"], environment: environment, timeout: 30)
            #expect(result.status == 3)
            #expect(result.stderr.hasPrefix("error: noSessionBus:"), "\(result.stderr)")
            #expect(ContinuousClock.now - started < .seconds(10))

            // No address at all and no X11 to autolaunch one.
            environment["DBUS_SESSION_BUS_ADDRESS"] = nil
            environment["XDG_RUNTIME_DIR"] = environment["TMPDIR"]
            let unset = try await run(Harness.probePath, ["get", "any"], environment: environment, timeout: 30)
            #expect(unset.stderr.hasPrefix("error: noSessionBus:"), "\(unset.stderr)")
        }

        @Test func busWithoutASecretServiceIsATypedError() async throws {
            // A second private bus with the same configuration: nothing owns org.freedesktop.secrets
            // there and nothing can be activated.
            let config = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]! + "/session.conf"
            let result = try await run("dbus-run-session", ["--config-file=\(config)", "--", Harness.probePath, "get", "any"],
                                 timeout: 30)
            #expect(result.status == 3)
            #expect(result.stderr.contains("error: noSecretService:"), "\(result.stderr)")
            #expect(result.stderr.contains("Start your keyring"), "the message says what to do")
        }

        @Test func daemonKilledAndRestartedCostsNoFailedCall() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account)
            // Saved once no save is under way and then saved: the provider is ended below.
            try await Harness.waitUntilPersisted()
            try await storage.save(item: "before the restart")
            try await Harness.waitUntilPersisted()
            try Harness.ctl("kill")
            try Harness.ctl("start")
            // The cached session and proxies are stale; the call reconnects and succeeds.
            #expect(try await storage.get() == "before the restart")
            try await storage.save(item: "after the restart")
            #expect(try SecretTool.lookup(lookup(account)) == Data("\"after the restart\"".utf8))
            try await storage.delete()
        }

        @Test func daemonGoneFailsFastThenRecoversWhenItIsBack() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account)
            // Saved once no save is under way and then saved: the provider is ended below.
            try await Harness.waitUntilPersisted()
            try await storage.save(item: "kept")
            try await Harness.waitUntilPersisted()
            try Harness.ctl("stop")
            let started = ContinuousClock.now
            let error = await keychainError { _ = try await storage.get() }
            try Harness.ctl("start")
            #expect(error?.kind == "noSecretService", "\(String(describing: error))")
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(try await storage.get() == "kept")
            try await storage.delete()
        }

        @Test func stoppedDaemonTimesOutAtTheDeadlineWithoutBlockingOtherTasks() async throws {
            let account = uniqueAccount()
            try await KeychainStorage<String>(account: account).save(item: "survives SIGSTOP")
            let executor = SingleThreadExecutor()
            let ticks = Atomic<Int>(0)
            let configuration = KeychainConfiguration(timeout: .seconds(2))
            let storage = KeychainStorage<String>(account: account, configuration: configuration)

            try Harness.ctl("suspend")
            let ticker = Task(executorPreference: executor) {
                while !Task.isCancelled {
                    ticks.add(1, ordering: .relaxed)
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            let started = ContinuousClock.now
            let stuck = Task(executorPreference: executor) { try await storage.get() }
            let ticksAtStart = ticks.load(ordering: .relaxed)
            let result = await stuck.result
            let elapsed = ContinuousClock.now - started
            let ticksDuringCall = ticks.load(ordering: .relaxed) - ticksAtStart
            ticker.cancel()
            try Harness.ctl("resume")

            switch result {
            case .success(let value): Issue.record("expected a timeout, got \(String(describing: value))")
            case .failure(let error): #expect((error as? KeychainError)?.kind == "timedOut", "\(error)")
            }
            #expect(elapsed >= .milliseconds(1900) && elapsed < .seconds(6), "ended at the deadline: \(elapsed)")
            // 2 s of 10 ms ticks on the same one-at-a-time executor: only possible if the keyring
            // call never held it.
            #expect(ticksDuringCall >= 50, "other tasks kept running: \(ticksDuringCall) ticks")
            // After SIGCONT the daemon answers again and nothing was lost.
            #expect(try await KeychainStorage<String>(account: account).get() == "survives SIGSTOP")
            try await KeychainStorage<String>(account: account).delete()
        }

        /// Reads of a known item share one deadline timer: a call with a shorter deadline started
        /// after longer ones must still end at its own deadline, and each of the others at theirs.
        @Test func concurrentReadsWithDifferentDeadlinesEachEndAtTheirOwn() async throws {
            // One account each: calls on the same account wait for each other.
            let deadlines: [Double] = [8, 8, 2, 5]
            let accounts = deadlines.map { _ in uniqueAccount() }
            let storages = zip(accounts, deadlines).map { account, seconds in
                KeychainStorage<String>(account: account, configuration: KeychainConfiguration(timeout: .seconds(seconds)))
            }
            for storage in storages {
                try await storage.save(item: "deadlines")
                _ = try await storage.get()  // remembered: reads take the one-round-trip path
            }
            try Harness.ctl("suspend")
            let started = ContinuousClock.now
            let results = await withTaskGroup(of: (Double, Duration, String?).self) { group in
                for (storage, seconds) in zip(storages, deadlines) {
                    group.addTask {
                        let kind = await keychainError { _ = try await storage.get() }?.kind
                        return (seconds, ContinuousClock.now - started, kind)
                    }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            try Harness.ctl("resume")
            for (seconds, elapsed, kind) in results {
                #expect(kind == "timedOut", "\(seconds) s: \(String(describing: kind))")
                #expect(elapsed >= .seconds(seconds) - .milliseconds(100) && elapsed < .seconds(seconds) + .milliseconds(2500),
                        "the \(seconds) s call ended after \(elapsed)")
            }
            for storage in storages {
                #expect(try await storage.get() == "deadlines")
                try await storage.delete()
            }
        }

        @Test func cancellingATaskEndsAStuckCall() async throws {
            let storage = KeychainStorage<String>(account: uniqueAccount())
            _ = try await storage.get()
            try Harness.ctl("suspend")
            let task = Task { try await storage.get() }
            try await Task.sleep(for: .milliseconds(200))
            let started = ContinuousClock.now
            task.cancel()
            let result = await task.result
            try Harness.ctl("resume")
            if case .failure(let error) = result {
                #expect(error is CancellationError, "\(error)")
            } else {
                Issue.record("expected CancellationError")
            }
            #expect(ContinuousClock.now - started < .seconds(5), "at once, not at the 25 s deadline")
        }

        @Test func lockedKeyringWithPromptsDisabledFailsAtOnceAndTouchesNothing() async throws {
            let account = uniqueAccount()
            // Saved once no save is under way (see Harness.waitUntilPersisted): killed below.
            try await Harness.waitUntilPersisted()
            try await KeychainStorage<String>(account: account).save(item: "locked away")
            // Read once: the item is remembered, so the calls below take the known-item paths.
            #expect(try await KeychainStorage<String>(account: account).get() == "locked away")
            // The provider is killed below (KeePassXC and KWallet would also ignore SIGTERM behind
            // their invisible unlock dialogs): what they have not saved yet would be lost.
            try await Harness.waitUntilPersisted()
            try Harness.ctl("lock")
            defer { try? Harness.ctl("restart") }
            let neverPrompt = KeychainStorage<String>(
                account: account, configuration: KeychainConfiguration(allowsPrompts: false))
            let started = ContinuousClock.now
            #expect(await keychainError { _ = try await neverPrompt.get() }?.kind == "locked")
            #expect(await keychainError { try await neverPrompt.save(item: "overwrite") }?.kind == "locked")
            #expect(await keychainError { try await neverPrompt.delete() }?.kind == "locked")
            // A missing account in a locked keyring is "locked" too, never "not found".
            let missing = KeychainStorage<String>(
                account: uniqueAccount(), configuration: KeychainConfiguration(allowsPrompts: false))
            #expect(await keychainError { _ = try await missing.get() }?.kind == "locked")
            #expect(ContinuousClock.now - started < .seconds(10), "four calls at once, none at the 25 s deadline")

            // With prompts allowed, no prompt can be shown here, and the call says so at once with
            // its cause: GNOME Keyring completes its prompt dismissed with no prompter on the bus;
            // KWallet and KeePassXC run on Qt's offscreen platform, where their dialog would wait
            // unseen for the prompt timeout (PromptVisibility).
            if !Harness.hasPrompter {
                var configuration = KeychainConfiguration(timeout: .seconds(5))
                configuration.promptTimeout = .seconds(60)
                let prompting = KeychainStorage<String>(account: account, configuration: configuration)
                let (error, elapsed) = await timedKeychainError { _ = try await prompting.get() }
                #expect(error?.kind == "promptDismissed", "\(String(describing: error))")
                #expect(error?.errorMessage.hasPrefix("The keyring could not show its prompt: ") == true, "\(String(describing: error))")
                #expect(elapsed < .seconds(5), "at once, not at the prompt timeout: \(elapsed)")
            }

            // Killed once the store is on disk, as in doctorWithALockedCollection.
            try Harness.ctl("kill")
            try Harness.ctl("start")
            #expect(try SecretTool.lookup(lookup(account)) == Data("\"locked away\"".utf8), "nothing was changed")
            #expect(try SecretTool.search(lookup(account)).count == 1)
            try await KeychainStorage<String>(account: account).delete()
        }
    }

    @Suite("Concurrency")
    struct Concurrency {
        /// KeePassXC 2.7.4 itself crashes (SIGSEGV in a pooled thread) under this load: 4 runs in 10
        /// with this library, 6 in 10 with the library before its redesign (measured here).
        @Test(.enabled(if: Harness.provider != "keepassxc", "KeePassXC 2.7.4 crashes under concurrent clients"))
        func thousandConcurrentOperationsOnSharedAndSeparateAccounts() async throws {
            let accounts = (0..<10).map { uniqueAccount("concurrent\($0)") }
            // A call's deadline includes its wait for the account (about 100 calls queue on each)
            // and gnome-keyring writes one item at a time: under ThreadSanitizer on 2 busy cores the
            // last calls waited past 25 s. The point here is that nothing is lost or torn, so the
            // deadline is generous.
            let configuration = KeychainConfiguration(timeout: .seconds(180))
            let storages = accounts.map { KeychainStorage<String>(account: $0, configuration: configuration) }
            // A second instance for the first account: instances share nothing but the keyring.
            let twin = KeychainStorage<String>(account: accounts[0], configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<1000 {
                    let slot = index % 10
                    let storage = slot == 0 && index % 20 == 0 ? twin : storages[slot]
                    group.addTask {
                        if index % 3 == 2 {
                            if let value = try await storage.get() {
                                #expect(value.hasPrefix("\(slot)-"), "no torn or foreign value: \(value)")
                            }
                        } else {
                            try await storage.save(item: "\(slot)-\(index)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            for (slot, account) in accounts.enumerated() {
                let items = try SecretTool.search(lookup(account))
                #expect(items.count == 1, "\(account): \(items.count) items")
                let value = try #require(try await storages[slot].get())
                #expect(value.hasPrefix("\(slot)-"))
                try await storages[slot].delete()
            }
        }
    }
}

extension Integration.Faults {
    /// The trap of Debian's normal session bus: after the daemon died, the next call makes the bus
    /// start a new gnome-keyring by itself — with the login keyring locked. That must surface as
    /// "locked", never as "not found", and touch no data. A gnome-keyring fault: with KeePassXC or
    /// KWallet as the provider, the bus would not start gnome-keyring in their place.
    @Test(.enabled(if: Harness.provider == "gnome-keyring", "gnome-keyring's auto-activation trap"))
    func busAutoActivatingALockedDaemonIsLockedNotMissing() async throws {
        let account = uniqueAccount()
        try await KeychainStorage<String>(account: account).save(item: "survives activation")
        let directory = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]!
        let serviceFile = directory + "/services/org.freedesktop.secrets.service"
        try """
            [D-BUS Service]
            Name=org.freedesktop.secrets
            Exec=/usr/bin/gnome-keyring-daemon --start --foreground --components=secrets

            """.write(toFile: serviceFile, atomically: true, encoding: .utf8)
        try await run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                          "--method", "org.freedesktop.DBus.ReloadConfig"])
        try await Harness.waitUntilPersisted()
        try Harness.ctl("kill")
        defer {
            try? FileManager.default.removeItem(atPath: serviceFile)
            _ = try? run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                                   "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.ReloadConfig"])
            _ = try? run("pkill", ["-KILL", "-f", "gnome-keyring-daemon --start --foreground"])
            try? Harness.ctl("start")
        }
        let neverPrompt = KeychainStorage<String>(account: account, configuration: KeychainConfiguration(
            timeout: .seconds(10), allowsPrompts: false))
        #expect(await keychainError { _ = try await neverPrompt.get() }?.kind == "locked")
        #expect(await keychainError { try await neverPrompt.save(item: "overwrite") }?.kind == "locked")
        let provider = try await SecretServiceClient().provider()
        #expect(provider.executable?.hasSuffix("/gnome-keyring-daemon") == true, "an activated daemon answered")

        _ = try await run("pkill", ["-KILL", "-f", "gnome-keyring-daemon --start --foreground"])
        try FileManager.default.removeItem(atPath: serviceFile)
        try await run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                          "--method", "org.freedesktop.DBus.ReloadConfig"])
        try Harness.ctl("start")
        #expect(try await KeychainStorage<String>(account: account).get() == "survives activation", "no data touched")
        try await KeychainStorage<String>(account: account).delete()
    }
}
