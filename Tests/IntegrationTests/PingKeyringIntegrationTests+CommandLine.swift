import Foundation
import PingStorage
import SecretService
import Testing

extension Integration.PingKeyring {
    // MARK: Command line

    @Test func helpForEveryCommandAndUsageErrors() async throws {
        let overview = try pingKeyring(["--help"])
        #expect(overview.status == 0)
        #expect(overview.output.contains("Exit status:"))
        for command in ["list", "get", "save", "delete", "doctor"] {
            #expect(overview.output.contains("  \(command) "))
            let help = try pingKeyring([command, "--help"])
            #expect(help.status == 0)
            #expect(help.output.hasPrefix("Usage: ping-keyring \(command)"))
            #expect(help.output.hasSuffix("See 'ping-keyring --help' for exit statuses.\n"))
        }
        for bad in [[], ["get"], ["frobnicate"], ["list", "--bogus"], ["get", "--account"], ["doctor", "extra"],
                    ["get", "--account", "A", "--timeout", "0"]] {
            let result = try pingKeyring(bad)
            #expect(result.status == 2, "\(bad)")
            #expect(result.stderr.hasPrefix("ping-keyring: error: usage:"), "\(bad): \(result.stderr)")
            #expect(result.output.isEmpty)
        }
        let json = try pingKeyring(["--json", "get"])
        #expect((try jsonObject(json)["error"] as? [String: Any])?["kind"] as? String == "usage")
        for flag in ["--version", "-V"] {
            let version = try pingKeyring([flag])
            #expect(version.status == 0)
            #expect(version.output.hasPrefix("ping-keyring ") && version.output.split(separator: "\n").count == 1)
        }
        let typo = try pingKeyring(["lst"])
        #expect(typo.stderr.hasPrefix("ping-keyring: error: usage: unknown command 'lst'; did you mean 'list'?"))
        #expect(try pingKeyring(["-j", "-g"]).stdout.isEmpty == false, "-j makes a usage error JSON too")
    }

    @Test func saveRefusesBadInputWithOrWithoutEncrypt() async throws {
        let account = uniqueAccount()
        for extra in [[], ["--encrypt"]] {
            let notJSON = try pingKeyring(["save", "--account", account] + extra, input: Data("plain text".utf8))
            #expect(notJSON.status == 2, "\(extra)")
            #expect(notJSON.stderr.contains("error: invalidInput: stdin is not JSON text"), "\(extra)")
        }
        #expect(try SecretTool.lookup(lookup(account)) == nil, "nothing was written")
    }

    @Test func collectionOption() async throws {
        let account = uniqueAccount()
        defer { try? SecretTool.clear(lookup(account)) }
        guard Harness.hasSessionCollection else {
            // One collection only (KeePassXC, KWallet): --collection by path reaches it, and a
            // missing alias is a clear error naming it.
            let path = Harness.defaultCollectionPath
            let saved = try jsonObject(try pingKeyring(asTestApp + ["save", "--account", account, "--collection", path, "--json"],
                                                       input: Data("1".utf8)))
            #expect(saved["collection"] as? String == path)
            #expect(try pingKeyring(["get", "--account", account, "--collection", path]).output == "1\n")
            let noSession = try pingKeyring(["list", "--collection", "session"])
            #expect(noSession.status == 3)
            #expect(noSession.stderr.contains("error: collectionNotFound:") && noSession.stderr.contains(path))
            return
        }
        let saved = try jsonObject(try pingKeyring(asTestApp + ["save", "--account", account, "--collection", Harness.scratchCollectionName, "--json"],
                                                   input: Data("1".utf8)))
        #expect(saved["collection"] as? String == "/org/freedesktop/secrets/collection/session")
        #expect(try SecretTool.lookup(lookup(account)) == Data("1".utf8))
        let inSession = try JSONDecoder().decode(
            ListJSON.self, from: try pingKeyring(["list", "--collection", Harness.scratchCollectionName, "--json"]).stdout)
        #expect(inSession.collection == "/org/freedesktop/secrets/collection/session")
        #expect(inSession.items.contains { $0.account == account })
        let inDefault = try JSONDecoder().decode(ListJSON.self, from: try pingKeyring(["list", "--json"]).stdout)
        #expect(!inDefault.items.contains { $0.account == account })
        #expect(try pingKeyring(["get", "--account", account]).status == 1, "not in the default collection")
        #expect(try pingKeyring(["get", "--account", account, "--collection", Harness.scratchCollectionName]).output == "1\n")

        let missing = try pingKeyring(["list", "--collection", "no-such-alias"])
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("error: collectionNotFound:"))
        #expect(!missing.stderr.contains("below"), "no promise of a list that is not there: \(missing.stderr)")
        #expect(missing.stderr.contains("\n  details: collections: ") && missing.stderr.contains(Harness.defaultCollectionPath),
                "the paths that exist, on the details line: \(missing.stderr)")
    }
}
