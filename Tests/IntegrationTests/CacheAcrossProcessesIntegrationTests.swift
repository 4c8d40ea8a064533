import Foundation
import PingStorage
import Testing

/// Two processes of one app (keychain-probe under one identity): A holds a cacheable storage and
/// runs its steps from stdin; B saves and deletes the account in between, as another instance of
/// the app or its command-line helper would.
enum CacheAcrossProcesses {
    /// How long after B's call returned A reads: what the cache promises (at once where the
    /// keyring announces it, within CacheStamp's 50 ms where it does not).
    static let within: Duration = .milliseconds(100)

    /// A's steps, each waiting for the test's go between B's calls; `between` runs B's calls (and
    /// whatever the test does meanwhile) for each pause, in order. Returns A's output lines.
    static func run(account: String, pauses: [() async throws -> Void]) async throws -> [String] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var steps = "save a1\nget\n"
        for index in pauses.indices { steps += "touch \(directory)/ready-\(index)\nawait \(directory)/go-\(index)\nget\n" }
        let processA = Task.detached {
            try IntegrationTests.run(Harness.probePath, ["--cache", "steps", account], input: Data(steps.utf8), timeout: 120)
        }
        for (index, pause) in pauses.enumerated() {
            while !FileManager.default.fileExists(atPath: "\(directory)/ready-\(index)") {
                try await Task.sleep(for: .milliseconds(10))
            }
            try await pause()
            try await Task.sleep(for: within)
            _ = FileManager.default.createFile(atPath: "\(directory)/go-\(index)", contents: nil)
        }
        let result = try await processA.value
        #expect(result.status == 0, "\(result.stderr)")
        return result.output.split(separator: "\n").map(String.init).filter { $0 != "ok" }
    }

    /// B: keychain-probe `save ACCOUNT VALUE` or `delete ACCOUNT`, in a process of its own.
    static func processB(_ arguments: [String]) throws {
        let result = try IntegrationTests.run(Harness.probePath, arguments, timeout: 60)
        #expect(result.status == 0, "B \(arguments): \(result.stderr)")
    }

    /// B saves a new value, deletes the account (a logout), and creates it again after A read nil:
    /// A's cached get returns what the keyring holds each time.
    static func saveDeleteAndCreate() async throws {
        let account = uniqueAccount()
        let lines = try await run(account: account, pauses: [
            { try processB(["save", account, "b1"]) },
            { try processB(["delete", account]) },
            { try processB(["save", account, "c1"]) },
        ])
        #expect(lines == ["a1", "b1", "nil", "c1"], "A's gets: its own save, B's save, B's delete, B's new save")
        try? processB(["delete", account])
    }
}

extension Integration {
    @Suite("A cache that stays true across processes of one app")
    struct CacheAcrossProcessesSuite {
        @Test func anotherProcesssSaveAndLogoutReachACachedStorage() async throws {
            try await CacheAcrossProcesses.saveDeleteAndCreate()
        }

        /// The provider restarts between A's save and B's: A never returns a value the keyring no
        /// longer holds (announcements may have been missed: the cache is checked).
        @Test func aProviderRestartNeverLeavesAStaleCache() async throws {
            let account = uniqueAccount()
            let lines = try await CacheAcrossProcesses.run(account: account, pauses: [
                {
                    try await Harness.waitUntilPersisted()
                    try Harness.ctl("kill")
                    try Harness.ctl("start")
                    try CacheAcrossProcesses.processB(["save", account, "b1"])
                },
                { try CacheAcrossProcesses.processB(["delete", account]) },
            ])
            #expect(lines == ["a1", "b1", "nil"], "A's gets after the restart: B's save, then B's delete")
        }
    }
}

extension SandboxIntegration.FileKeyringThroughThePortal {
    /// The same in a sandbox's file keyring, which the app's processes share: the file is watched.
    @Test func anotherProcesssSaveAndLogoutReachACachedStorage() async throws {
        try await CacheAcrossProcesses.saveDeleteAndCreate()
    }
}
