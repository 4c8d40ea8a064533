import Foundation
import PingStorage
import Testing

extension Integration {
    /// The remembered-item and skipped-write fast paths never return a stale or deleted value.
    @Suite("Fast paths against other clients")
    struct FastPaths {
        @Test func anotherProcessReplacingTheItemIsSeen() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: "ours")
            #expect(try await storage.get() == "ours")
            #expect(try await storage.get() == "ours")   // now read through the remembered item

            // Same item, new secret (SetSecret by another process).
            #expect(try await run(Harness.probePath, ["save", account, "theirs"]).status == 0)
            #expect(try await storage.get() == "theirs")

            // Deleted and created again at a new path by another process.
            #expect(try await run(Harness.probePath, ["delete", account]).status == 0)
            #expect(try await run(Harness.probePath, ["save", account, "recreated"]).status == 0)
            #expect(try await storage.get() == "recreated")

            // Deleted by another process: nil, never the old value.
            #expect(try await run(Harness.probePath, ["delete", account]).status == 0)
            #expect(try await storage.get() == nil)
        }

        /// A newer item of the app's own, written by another program of the app (here secret-tool,
        /// with the app's attribute), is what the next read returns.
        @Test func aNewerDuplicateWrittenByAnotherProgramOfTheAppIsSeen() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: "older")
            #expect(try await storage.get() == "older")
            try await Task.sleep(for: .milliseconds(1100))  // the keyring keeps whole seconds
            try SecretTool.store(label: "dup", attributes: lookup(account).merging(["by": "secret-tool",
                                                                                    AppIdentity.attribute: AppIdentity.current.id]) { $1 },
                                 secret: Data(#""newer""#.utf8))
            #expect(try await storage.get() == "newer")
            try await storage.delete()
            #expect(try SecretTool.search(lookup(account)).isEmpty)
        }

        @Test func savingTheStoredValueDoesNotRewriteTheKeyring() async throws {
            let account = uniqueAccount()
            let storage = KeychainStorage<String>(account: account)
            try await storage.save(item: "unchanged")
            let keyring = Harness.storageFile
            // Some providers write their file a while after a change (KWallet; KeePassXC 0.1-0.3 s
            // later, also for a change an earlier test made): wait until it stayed the same for 1 s.
            var before = try Data(contentsOf: keyring)
            var (quiet, polls) = (0, 0)
            while quiet < 5 && polls < 100 {
                try await Task.sleep(for: .milliseconds(200))
                let now = try Data(contentsOf: keyring)
                (quiet, polls) = (now == before ? quiet + 1 : 0, polls + 1)
                before = now
            }
            try await storage.save(item: "unchanged")
            try await storage.save(item: "unchanged")
            #expect(try Data(contentsOf: keyring) == before, "no write reached the keyring file")
            #expect(try SecretTool.lookup(lookup(account)) == Data(#""unchanged""#.utf8))
            try await storage.save(item: "changed")
            var changed = false
            for _ in 0..<50 where !changed {
                changed = try Data(contentsOf: keyring) != before
                if !changed { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(changed, "a real change is written")
            #expect(try SecretTool.lookup(lookup(account)) == Data(#""changed""#.utf8))
            try await storage.delete()
        }
    }
}
