import Foundation
import PingStorage
import Testing

extension Integration {
    /// Many apps, one keyring: each app's items and key are its own, as on iOS. The apps are
    /// separate processes (keychain-probe), their items seen through secret-tool, a client we did
    /// not write.
    @Suite("App identities: each app's items and key its own")
    struct AppIdentities {
        /// keychain-probe as the app `app` (nil: an app that sets nothing, its executable's path).
        static func app(_ app: String?, _ arguments: [String], program: String = Harness.probePath) async throws -> ProcessResult {
            let environment = ProcessInfo.processInfo.environment.merging(["KEYCHAIN_PROBE_APP": app ?? ""]) { $1 }
            return try await run(program, arguments, environment: environment)
        }

        /// Two programs with different identities and the default configuration, one account: each
        /// reads its own value, and one's delete leaves the other's item.
        @Test func twoAppsKeepTheirOwnItemOfTheSameAccount() async throws {
            let account = uniqueAccount()
            #expect(try await Self.app("com.example.A", ["save", account, "from A"]).status == 0)
            #expect(try await Self.app("com.example.B", ["save", account, "from B"]).status == 0)
            #expect(try await Self.app("com.example.A", ["get", account]).output == "from A\n")
            #expect(try await Self.app("com.example.B", ["get", account]).output == "from B\n")
            let items = try SecretTool.search(lookup(account))
            #expect(Set(items.map { $0.storedAttributes[AppIdentity.attribute] }) == ["com.example.A", "com.example.B"],
                    "two items, one per app: \(items.map(\.storedAttributes))")

            #expect(try await Self.app("com.example.A", ["delete", account]).status == 0)
            #expect(try await Self.app("com.example.A", ["get", account]).status == 1, "A's is gone")
            #expect(try await Self.app("com.example.B", ["get", account]).output == "from B\n", "B's stays")
            #expect(try SecretTool.search(lookup(account)).map { $0.storedAttributes[AppIdentity.attribute] } == ["com.example.B"])
            _ = try await Self.app("com.example.B", ["delete", account])
        }

        /// The same with SecuredKeyEncryptor: two apps, two keys, each app's items sealed with its own.
        @Test func twoAppsEncryptWithTwoKeys() async throws {
            let account = uniqueAccount()
            let (appA, appB) = ("com.example.A.\(account)", "com.example.B.\(account)")
            #expect(try await Self.app(appA, ["--encrypt", "save", account, "sealed by A"]).status == 0)
            #expect(try await Self.app(appB, ["--encrypt", "save", account, "sealed by B"]).status == 0)
            #expect(try await Self.app(appA, ["--encrypt", "get", account]).output == "sealed by A\n")
            #expect(try await Self.app(appB, ["--encrypt", "get", account]).output == "sealed by B\n")
            let keyA = try SecretTool.search(["xdg:schema": "com.pingidentity.PingStorage.SecuredKey", AppIdentity.attribute: appA])
            let keyB = try SecretTool.search(["xdg:schema": "com.pingidentity.PingStorage.SecuredKey", AppIdentity.attribute: appB])
            #expect(keyA.count == 1 && keyB.count == 1, "one key per app")
            #expect(keyA.first?.storedAttributes["key-id"] != keyB.first?.storedAttributes["key-id"])
            for app in [appA, appB] { _ = try await Self.app(app, ["delete", account]) }
        }

        /// Two different executables that set nothing are two apps (their paths); the same
        /// executable, run again, is the same app.
        @Test func twoProgramsThatSetNothingAreTwoAppsAndOneProgramIsOneApp() async throws {
            let account = uniqueAccount()
            // A second program: the probe under another name in its directory (a hard link, so
            // its libraries are found as the probe's are).
            let other = Harness.probePath + "-other-\(account.suffix(8))"
            guard link(Harness.probePath, other) == 0 else { throw HarnessError("link failed: errno \(errno)") }
            defer { unlink(other) }
            #expect(try await Self.app(nil, ["save", account, "first program"]).status == 0)
            #expect(try await Self.app(nil, ["save", account, "second program"], program: other).status == 0)
            #expect(try await Self.app(nil, ["get", account]).output == "first program\n", "the same program, run again")
            #expect(try await Self.app(nil, ["get", account], program: other).output == "second program\n")
            let apps = Set(try SecretTool.search(lookup(account)).map { $0.storedAttributes[AppIdentity.attribute] })
            #expect(apps == [Harness.probePath, other], "each program's path is its identity: \(apps)")
            _ = try await Self.app(nil, ["delete", account])
            _ = try await Self.app(nil, ["delete", account], program: other)
        }

        /// A program started through the dynamic loader (`ld-linux-x86-64.so.2 PROGRAM`) is that
        /// program, not the loader: two programs started so are two apps.
        @Test func aProgramStartedThroughTheDynamicLoaderIsItselfNotTheLoader() async throws {
            let loader = try #require(["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"].first {
                FileManager.default.fileExists(atPath: $0)
            })
            let account = uniqueAccount()
            let identity = try await Self.app(nil, [Harness.probePath, "identity"], program: loader)
            #expect(identity.output == "\(Harness.probePath) (executable)\n", "\(identity.output) \(identity.stderr)")
            #expect(try await Self.app(nil, [Harness.probePath, "save", account, "through the loader"], program: loader).status == 0)
            let apps = try SecretTool.search(lookup(account)).map { $0.storedAttributes[AppIdentity.attribute] }
            #expect(apps == [Harness.probePath])
            #expect(try await Self.app(nil, ["get", account]).output == "through the loader\n", "the same program, started directly")
            _ = try await Self.app(nil, ["delete", account])
        }

        /// Sandbox variables inherited from a parent, without the sandbox's own evidence, change
        /// nothing: the program is still its path.
        @Test func inheritedSandboxVariablesAreIgnoredOnTheHost() async throws {
            let environment = ProcessInfo.processInfo.environment.merging([
                "KEYCHAIN_PROBE_APP": "", "FLATPAK_ID": "org.example.IDE", "SNAP_NAME": "snappy",
                "APPIMAGE": "/home/u/Tool.AppImage", "APPDIR": FileManager.default.temporaryDirectory.path,
            ]) { $1 }
            let identity = try await run(Harness.probePath, ["identity"], environment: environment)
            #expect(identity.output == "\(Harness.probePath) (executable)\n", "\(identity.output) \(identity.stderr)")
        }

        /// An item PingStorage 1.x wrote (its schema, no app) is read by every app that has no item
        /// of its own for the account. A save creates the app's own item and leaves the 1.x item
        /// as it was (never written into or adopted); the other apps still read the 1.x item. Once an
        /// app deletes the account (its own item and the items no app owns), no app reads it again.
        @Test func aLegacyItemIsReadUntilAnAppHasItsOwnAndDeletedForGood() async throws {
            let account = uniqueAccount()
            let legacy = lookup(account).merging(["username": account, "xdg:schema": "com.pingidentity.PingStorage"]) { $1 }
            try SecretTool.store(label: "\(account) (1.x)", attributes: legacy, secret: Data("\"from 1.x\"".utf8))
            #expect(try await Self.app("com.example.A", ["get", account]).output == "from 1.x\n")
            #expect(try await Self.app("com.example.B", ["get", account]).output == "from 1.x\n", "read by every app without its own")

            #expect(try await Self.app("com.example.A", ["save", account, "A's now"]).status == 0)
            let items = try SecretTool.search(lookup(account))
            #expect(items.count == 2, "the app's own item created beside it: \(SecretTool.describeItems(matching: lookup(account)))")
            let unowned = items.filter { $0.storedAttributes[AppIdentity.attribute] == nil }
            #expect(unowned.map(\.secret) == ["\"from 1.x\""] && unowned.first?.label == "\(account) (1.x)", "the 1.x item as it was")
            #expect(try await Self.app("com.example.A", ["get", account]).output == "A's now\n")
            #expect(try await Self.app("com.example.B", ["get", account]).output == "from 1.x\n", "B has none of its own yet")

            #expect(try await Self.app("com.example.A", ["delete", account]).status == 0)
            for app in ["com.example.A", "com.example.B", "com.example.C"] {
                #expect(try await Self.app(app, ["get", account]).status == 1, "\(app) reads nothing after the delete")
            }
            #expect(try SecretTool.search(lookup(account)).isEmpty)
        }

        /// A legacy item deleted by the first app that uses the account is gone for every app
        /// (a delete takes what the app reads).
        @Test func aLegacyItemDeletedBeforeAnySaveIsGoneForEveryApp() async throws {
            let account = uniqueAccount()
            let legacy = lookup(account).merging(["username": account, "xdg:schema": "com.pingidentity.PingStorage"]) { $1 }
            try SecretTool.store(label: "\(account) (1.x)", attributes: legacy, secret: Data("\"from 1.x\"".utf8))
            #expect(try await Self.app("com.example.A", ["delete", account]).status == 0)
            #expect(try await Self.app("com.example.B", ["get", account]).status == 1)
            #expect(try SecretTool.search(lookup(account)).isEmpty)
        }
    }
}
