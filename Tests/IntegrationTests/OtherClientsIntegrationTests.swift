import Foundation
import PingStorage
import SecretService
import Testing

/// Runs Python code with Debian's Python and its `keyring` package, on the test's bus, with
/// keyring's Secret Service backend.
func python(_ code: String) throws -> ProcessResult {
    var environment = ProcessInfo.processInfo.environment
    environment["PYTHON_KEYRING_BACKEND"] = "keyring.backends.SecretService.Keyring"
    let result = try run("/usr/bin/python3", ["-c", "import keyring, sys\n" + code], environment: environment, timeout: 60)
    guard result.status == 0 else { throw HarnessError("python keyring failed: \(result.stderr)") }
    return result
}

func pythonLiteral(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
}

extension Integration {
    /// Python keyring and go-keyring write `service` + `username` and no `account`: such an item
    /// is the same account for KeychainStorage, an item no app owns (read while the app has none
    /// of its own, never written into, removed on delete); an item whose `account` says otherwise
    /// is never taken.
    @Suite("Items of Python keyring and go-keyring")
    struct OtherClients {
        @Test func anItemPythonKeyringWroteIsTheSameAccountAndNeverWrittenInto() async throws {
            let account = uniqueAccount(), service = "org.example.python-\(UUID().uuidString.prefix(8))"
            _ = try python("keyring.set_password(\(pythonLiteral(service)), \(pythonLiteral(account)), '\"from python\"')")
            let written = try SecretTool.search(["service": service])
            try #require(written.count == 1)
            #expect(written[0].attributes["account"] == nil, "Python keyring writes no account attribute")
            #expect(written[0].attributes["username"] == account)

            let storage = KeychainStorage<String>(account: account, configuration: KeychainConfiguration(service: service))
            #expect(try await storage.get() == "from python", "get reads it while the app has no item of its own")

            try await storage.save(item: "ours")
            let items = try SecretTool.search(["service": service])
            try #require(items.count == 2, "the app's own item beside it: \(SecretTool.describeItems(matching: ["service": service]))")
            let theirs = try #require(items.first { $0.path == written[0].path })
            // Each part apart, with both sides, so that a failure says what changed.
            #expect(theirs.secret == written[0].secret, "Python keyring's secret as it was")
            #expect(theirs.attributes == written[0].attributes, "Python keyring's attributes as they were")
            #expect(theirs.label == written[0].label, "Python keyring's label as it was")
            let ours = try #require(items.first { $0.path != written[0].path })
            #expect(ours.storedAttributes[AppIdentity.attribute] == AppIdentity.current.id)
            #expect(ours.storedAttributes["username"] == account, "Python keyring finds ours by username too")
            #expect(try await storage.get() == "ours", "from now on the app's own")

            try await storage.delete()
            #expect(try SecretTool.search(["service": service]).isEmpty)
            let afterDelete = try python("print(keyring.get_password(\(pythonLiteral(service)), \(pythonLiteral(account))))")
            #expect(afterDelete.output == "None\n", "nothing comes back after delete")
        }

        @Test func anItemWhoseAccountSaysOtherwiseIsNeverAdopted() async throws {
            let account = uniqueAccount(), service = "org.example.other-\(UUID().uuidString.prefix(8))"
            try SecretTool.store(label: "someone else's",
                                 attributes: ["service": service, "username": account, "account": "someone-else"],
                                 secret: Data("\"theirs\"".utf8))
            let storage = KeychainStorage<String>(account: account, configuration: KeychainConfiguration(service: service))
            #expect(try await storage.get() == nil)
            try await storage.save(item: "ours")
            let items = try SecretTool.search(["service": service])
            #expect(items.count == 2, "a second item, theirs untouched")
            #expect(items.contains { $0.attributes["account"] == "someone-else" && $0.secret == "\"theirs\"" })
            try await storage.delete()
            #expect(try SecretTool.search(["service": service]).map { $0.attributes["account"] } == ["someone-else"])
            try SecretTool.clear(["service": service])
        }
    }
}
