import Foundation
import PingStorage
import SecretService
import Testing

extension Integration {
    @Suite("SecuredKeyEncryptor against the provider")
    struct Encryption {
        static let keySchema = ["xdg:schema": "com.pingidentity.PingStorage.SecuredKey"]

        struct TokenSet: Codable, Sendable, Equatable {
            var accessToken: String
            var refreshToken: String
            var idToken: String
        }

        @Test func noPlaintextOfTheTokenIsInAnyItem() async throws {
            let account = uniqueAccount()
            let tokens = TokenSet(accessToken: "ACCESS-\(UUID().uuidString)", refreshToken: "REFRESH-\(UUID().uuidString)",
                                  idToken: "ID-\(UUID().uuidString)")
            let storage = KeychainStorage<TokenSet>(account: account, encryptor: SecuredKeyEncryptor() ?? NoEncryptor())
            try await storage.save(item: tokens)
            #expect(try await storage.get() == tokens)
            // Read every secret of every item through libsecret's own client and look for the tokens.
            let dump = try SecretTool.retryingRejectedKeys {
                try run("secret-tool", ["search", "--all", "--unlock", "service", KeychainConfiguration.defaultService])
            }.stdout + (try SecretTool.retryingRejectedKeys {
                try run("secret-tool", ["search", "--all", "--unlock", "xdg:schema", "com.pingidentity.PingStorage.SecuredKey"])
            }.stdout)
            #expect(!dump.isEmpty)
            for secret in [tokens.accessToken, tokens.refreshToken, tokens.idToken] {
                #expect(dump.range(of: Data(secret.utf8)) == nil, "\(secret.prefix(7)) must not appear in clear")
            }
            let stored = try #require(try SecretTool.lookup(lookup(account)))
            #expect(stored.prefix(4) == Data([0x89, 0x50, 0x53, 0x45]), "an envelope")
            #expect(try SecretTool.search(Self.keySchema).count >= 1, "the key is an item of its own")
            try await storage.delete()
        }

        @Test func aFreshProcessDecryptsWhatAnotherWrote() async throws {
            let account = uniqueAccount()
            let write = try await run(Harness.probePath, ["--encrypt", "save", account, "written by the probe"])
            #expect(write.status == 0, "\(write.stderr)")
            let storage = KeychainStorage<String>(account: account, encryptor: SecuredKeyEncryptor()!)
            #expect(try await storage.get() == "written by the probe")
            try await storage.save(item: "written by the test")
            let read = try await run(Harness.probePath, ["--encrypt", "get", account])
            #expect(read.output == "written by the test\n", "\(read.stderr)")
            try await storage.delete()
        }

        @Test func processesRacingToCreateTheKeyCanAllDecryptEverything() async throws {
            try await Harness.withKnownKeePassXCCrashUnderConcurrentClients {
                // A collection without any key: a private alias path is not available, so clear keys
                // first (no encrypted data of other tests survives them: each test deletes its items).
                try SecretTool.clear(Self.keySchema)
                #expect(try SecretTool.search(Self.keySchema).isEmpty)
                let accounts = (0..<6).map { uniqueAccount("race\($0)") }
                let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
                    for account in accounts {
                        group.addTask { try run(Harness.probePath, ["--encrypt", "save", account, "value-\(account)"]) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for result in results { #expect(result.status == 0, "\(result.stderr)") }
                // Every process — a new one each time — decrypts every account.
                for account in accounts {
                    let read = try await run(Harness.probePath, ["--encrypt", "get", account])
                    #expect(read.output == "value-\(account)\n", "\(account): \(read.stderr)")
                }
                let keyCount = try SecretTool.search(Self.keySchema).count
                #expect(keyCount >= 1 && keyCount <= 6)
                // New data converges on one key: two fresh processes encrypt with the same key id.
                _ = try await run(Harness.probePath, ["--encrypt", "save", accounts[0], "again-0"])
                _ = try await run(Harness.probePath, ["--encrypt", "save", accounts[1], "again-1"])
                let first = try #require(try SecretTool.lookup(lookup(accounts[0])))
                let second = try #require(try SecretTool.lookup(lookup(accounts[1])))
                #expect(first[5..<21] == second[5..<21], "same key id after the race")
                for account in accounts { _ = try await run(Harness.probePath, ["delete", account]) }
            }
        }

        @Test func aDeletedKeyGivesTheDistinctErrorAndKeepsTheItem() async throws {
            let account = uniqueAccount()
            #expect(try await run(Harness.probePath, ["--encrypt", "save", account, "orphan"]).status == 0)
            let stored = try #require(try SecretTool.lookup(lookup(account)))
            let keyID = stored[5..<21].map { String(format: "%02x", $0) }.joined()
            try SecretTool.clear(["xdg:schema": "com.pingidentity.PingStorage.SecuredKey", "key-id": keyID])
            let read = try await run(Harness.probePath, ["--encrypt", "get", account])
            #expect(read.status == 4)
            #expect(read.stderr.contains("is not in the keyring"), "\(read.stderr)")
            #expect(try SecretTool.lookup(lookup(account)) == stored, "the item is untouched")
            // New saves still work (with a new key).
            #expect(try await run(Harness.probePath, ["--encrypt", "save", account, "fresh"]).status == 0)
            #expect(try await run(Harness.probePath, ["--encrypt", "get", account]).output == "fresh\n")
            _ = try await run(Harness.probePath, ["delete", account])
        }

        @Test func anItemCopiedByteForByteToAnotherAccountIsRejected() async throws {
            let victim = uniqueAccount("victim"), thief = uniqueAccount("thief")
            let storage = KeychainStorage<String>(account: victim, encryptor: SecuredKeyEncryptor()!)
            try await storage.save(item: "victim's token")
            let stored = try #require(try SecretTool.lookup(lookup(victim)))
            try await SecretTool.storeBinary(label: "copied", attributes: lookup(thief), secret: stored)
            #expect(try SecretTool.lookup(lookup(thief)) == stored, "a byte-exact copy")
            let copied = KeychainStorage<String>(account: thief, encryptor: SecuredKeyEncryptor()!)
            await #expect(throws: EncryptorError.failedToDecrypt) { _ = try await copied.get() }
            try await storage.delete()
            try await copied.delete()
        }
    }
}
