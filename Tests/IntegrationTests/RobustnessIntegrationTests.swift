import Foundation
import PingStorage
import SecretService
import Testing

extension Integration {
    @Suite("Robustness: scale, bad input, transport")
    struct Robustness {
        /// Not against KeePassXC 2.7.4: it crashes (SIGSEGV in a Qt pool thread) under a few
        /// clients creating, reading and deleting items at once, whoever the clients are — four
        /// loops of `secret-tool store/lookup/clear` on distinct accounts crash it within seconds
        /// too (dbus-test/providers/PROVIDERS.md).
        @Test(.enabled(if: Harness.provider != "keepassxc", "KeePassXC 2.7.4 crashes under concurrent clients"))
        func fourProcessesOfMixedOperationsLeaveOneRightItemPerAccount() async throws {
            let prefix = uniqueAccount("scale")
            let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
                for seed in 1...4 {
                    group.addTask { try run(Harness.probePath, ["mixed", prefix, "100", "250", "\(seed)"], timeout: 300) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for result in results { #expect(result.status == 0, "\(result.stderr)") }
            for index in 0..<100 {
                let account = "\(prefix)-\(index)"
                let items = try SecretTool.search(lookup(account))
                #expect(items.count == 1, "\(account): \(items.count) items")
                let value = try #require(try SecretTool.lookup(lookup(account)))
                let text = String(decoding: value, as: UTF8.self)
                #expect(text.hasSuffix("-\(account)\""), "\(account) holds a value written to it: \(text)")
            }
            for index in 0..<100 { try SecretTool.clear(lookup("\(prefix)-\(index)")) }
        }

        @Test func awkwardAccountNamesAreStoredExactly() async throws {
            let base = UUID().uuidString.prefix(6)
            for account in ["tab\there-\(base)", "newline\nand\u{1B}escape-\(base)", String(repeating: "k", count: 10 * 1024) + base] {
                let storage = KeychainStorage<String>(account: account)
                try await storage.save(item: "odd")
                #expect(try await storage.get() == "odd")
                #expect(try SecretTool.search(lookup(account)).count == 1)
                try await storage.delete()
                #expect(try await storage.get() == nil)
            }
        }

        @Test func sixteenMebibyteItemRoundTrips() async throws {
            let account = uniqueAccount()
            var bytes = [UInt8](repeating: 0, count: 16 << 20)
            for index in stride(from: 0, to: bytes.count, by: 4096) { bytes[index] = UInt8(truncatingIfNeeded: index >> 12) }
            let storage = KeychainStorage<Data>(account: account, configuration: KeychainConfiguration(timeout: .seconds(60)))
            let value = Data(bytes)
            try await storage.save(item: value)
            #expect(try await storage.get() == value)
            try await Harness.waitUntilSavedBeforeDeletingABigItem()
            try await storage.delete()
        }

        @Test func storedBytesOfTheWrongShapeAreCorruptAndUntouched() async throws {
            let cases: [(String, Data)] = [
                ("invalid UTF-8", Data([0xFF, 0xFE, 0x00, 0xC3])),
                ("not JSON", Data("plain text token".utf8)),
                ("JSON of another type", Data(#"[1, 2, 3]"#.utf8)),
                ("empty", Data()),
            ]
            for (name, stored) in cases {
                let account = uniqueAccount("shape")
                if String(data: stored, encoding: .utf8) == nil {
                    try await SecretTool.storeBinary(label: name, attributes: lookup(account), secret: stored)
                } else {
                    try SecretTool.store(label: name, attributes: lookup(account), secret: stored)
                }
                let storage = KeychainStorage<TestItem>(account: account)
                #expect(await keychainError { _ = try await storage.get() }?.kind == "corruptItem", "\(name)")
                #expect(try SecretTool.lookup(lookup(account)) == stored, "\(name) left as it was")
                try await storage.delete()
            }
        }

        /// Captures the session bus while saving and reading a token: the secret's bytes never
        /// cross the bus in clear (the session is encrypted), though our method calls do.
        @Test func secretsNeverCrossTheBusInClear() async throws {
            let capture = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"]! + "/capture-\(UUID().uuidString).pcap"
            let monitor = try BackgroundProcess(["dbus-monitor", "--session", "--pcap"], stdoutPath: capture)
            try await Task.sleep(for: .milliseconds(300))
            let marker = "SECRET-MARKER-\(UUID().uuidString)"
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: marker)
            #expect(try await storage.get() == marker)
            _ = try await SecretServiceClient().provider()
            try await Task.sleep(for: .milliseconds(300))
            monitor.stop()
            let captured = try Data(contentsOf: URL(fileURLWithPath: capture))
            #expect(captured.range(of: Data("GetSecret".utf8)) != nil, "the capture saw our calls")
            #expect(captured.range(of: Data(account.utf8)) != nil, "attributes are visible (they are not secret)")
            #expect(captured.range(of: Data(marker.utf8)) == nil, "the secret never appears in clear")
            #expect(try await SecretServiceClient().provider().transportAlgorithm == "dh-ietf1024-sha256-aes128-cbc-pkcs7")
            try await storage.delete()
        }
    }
}

/// A process running in the background until `stop()`, with stdout sent to a file.
final class BackgroundProcess: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; stop() only signals the process.
    private let pid: pid_t

    init(_ argv: [String], stdoutPath: String, environment: [String: String]? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let pid = try spawnWithCleanSignals(argv, environment: environment, actions: &actions)
        self.pid = pid
    }

    func stop(signal: Int32 = SIGTERM) {
        kill(pid, signal)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

extension Integration.Robustness {
    @Test func uniqueItemIsAmbiguousWhenSeveralItemsMatch() async throws {
        let account = uniqueAccount()
        let client = SecretServiceClient()
        #expect(try await client.uniqueItem(matching: lookup(account), in: .default) == nil)
        try SecretTool.store(label: "one", attributes: lookup(account).merging(["copy": "1"]) { $1 }, secret: Data("1".utf8))
        let single = try await client.uniqueItem(matching: lookup(account), in: .default)
        #expect(single?.rawValue.hasPrefix("/org/freedesktop/secrets/collection/") == true)
        try SecretTool.store(label: "two", attributes: lookup(account).merging(["copy": "2"]) { $1 }, secret: Data("2".utf8))
        do {
            _ = try await client.uniqueItem(matching: lookup(account), in: .default)
            Issue.record("expected .ambiguous")
        } catch {
            #expect(error.code == .ambiguous)
            #expect(error.message.contains("2 items match"))
        }
        try SecretTool.clear(lookup(account))
    }
}
