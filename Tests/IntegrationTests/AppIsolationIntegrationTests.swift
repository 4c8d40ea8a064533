import Foundation
import PingStorage
import Testing

extension Integration {
    /// Apps that race stay apart: no secret is ever written into an item no app owns, so two apps
    /// saving the same account at the same moment over such an item (PingStorage 1.x's, or one that
    /// secret-tool or Python keyring wrote) each end with their own item, and neither reads the
    /// other's value at any moment. The apps are real processes (keychain-probe under two
    /// identities); what is in the keyring is seen through secret-tool, a client we did not write.
    @Suite("Apps stay apart when they race")
    struct AppIsolation {
        static let (appA, appB) = ("com.example.RaceA", "com.example.RaceB")

        /// 20 rounds, each on a fresh account holding an item no app owns: A and B save at once while
        /// a third process reads the account as A and as B in turn, again and again. No read as one
        /// app ever returns the other's value; after the round each reads its own, and the item no
        /// app owns is as it was.
        /// Three client processes at once, on purpose: KeePassXC 2.7.4 may crash (SIGSEGV) as they
        /// start, which is its own known bug (``Harness/withKnownKeePassXCCrashUnderConcurrentClients(_:)``).
        @Test func twoAppsSavingAtOnceOverAnItemNoAppOwnsNeverSeeEachOthersValue() async throws {
            try await Harness.withKnownKeePassXCCrashUnderConcurrentClients {
                try await Self.raceRounds(20, storeLegacy: { account, value in
                    try SecretTool.store(label: "\(account) (1.x)", attributes: lookup(account), secret: Data(value.utf8))
                }, itemsOf: { account in
                    try SecretTool.search(lookup(account)).map { ($0.storedAttributes[AppIdentity.attribute], $0.secret) }
                }, clear: { account in try SecretTool.clear(lookup(account)) })
            }
        }

        /// The race of two apps over an item no app owns (`raceRounds`): `storeLegacy` writes that
        /// item, `itemsOf` lists an account's items (app, secret) as a client we did not write sees
        /// them, `clear` removes them.
        static func raceRounds(_ rounds: Int, storeLegacy: (String, String) async throws -> Void,
                               itemsOf: (String) async throws -> [(app: String?, secret: String)],
                               clear: (String) async throws -> Void) async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("race-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var polledReads = 0
            for round in 0..<rounds {
                let account = uniqueAccount() + "-\(round)"
                let legacy = "\"legacy-\(round)\""
                try await storeLegacy(account, legacy)
                let (valueA, valueB) = ("A-\(round)", "B-\(round)")
                let stop = directory.appendingPathComponent("stop-\(round)").path
                async let poller = run(Harness.probePath, ["poll", account, stop, Self.appA, Self.appB], timeout: 60)
                async let saveA = AppIdentities.app(Self.appA, ["save", account, valueA])
                async let saveB = AppIdentities.app(Self.appB, ["save", account, valueB])
                let (savedA, savedB) = try await (saveA, saveB)
                _ = FileManager.default.createFile(atPath: stop, contents: nil)
                let polled = try await poller
                #expect(savedA.status == 0 && savedB.status == 0, "round \(round): \(savedA.stderr) \(savedB.stderr)")
                #expect(polled.status == 0, "round \(round): \(polled.stderr)")

                let reads = polled.output.split(separator: "\n").map(String.init)
                polledReads += reads.count
                let allowed = [Self.appA: ["legacy-\(round)", valueA], Self.appB: ["legacy-\(round)", valueB]]
                for read in reads {
                    let (app, value) = (String(read.prefix { $0 != "=" }), String(read.drop { $0 != "=" }.dropFirst()))
                    #expect(allowed[app]?.contains(value) == true, "round \(round): \(app) read \(value)")
                }
                #expect(reads.suffix(2) == ["\(Self.appA)=\(valueA)", "\(Self.appB)=\(valueB)"], "round \(round): the reads after both saves")
                #expect(try await AppIdentities.app(Self.appA, ["get", account]).output == valueA + "\n", "round \(round)")
                #expect(try await AppIdentities.app(Self.appB, ["get", account]).output == valueB + "\n", "round \(round)")

                let items = try await itemsOf(account)
                #expect(items.filter { $0.app == nil }.map(\.secret) == [legacy], "round \(round): the item no app owns, untouched: \(items)")
                #expect(Set(items.compactMap(\.app)) == [Self.appA, Self.appB] && items.count == 3, "round \(round): \(items)")
                try await clear(account)
            }
            #expect(polledReads >= rounds * 4, "the poller read during the rounds")
        }

        /// An item that becomes the app's own while a process of the app runs (another program
        /// gave it the app's attributes, as `ping-keyring apps move` does; KWallet and KeePassXC
        /// set a new item's attributes after announcing it) is what that process reads next, not
        /// the item no app owns that it read before. The provider announces only ItemChanged; the
        /// attributes are set by Python's SecretStorage, a client we did not write.
        @Test func anItemThatBecomesTheAppsOwnIsWhatARunningProcessReadsNext() async throws {
            let account = uniqueAccount()
            let service = KeychainConfiguration.defaultService
            let elsewhere = account + "-elsewhere"
            try SecretTool.store(label: "\(account) (1.x)", attributes: lookup(account), secret: Data(#""no app's""#.utf8))
            try SecretTool.store(label: "elsewhere", attributes: lookup(elsewhere), secret: Data(#""the app's own""#.utf8))
            defer { try? SecretTool.clear(lookup(account)); try? SecretTool.clear(lookup(elsewhere)) }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("becomes-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let steps = "get\ntouch \(directory)/ready\nawait \(directory)/go\nget\n"
            let environment = ProcessInfo.processInfo.environment.merging(["KEYCHAIN_PROBE_APP": Self.appA]) { $1 }
            async let process = run(Harness.probePath, ["steps", account], input: Data(steps.utf8), environment: environment, timeout: 60)
            while !FileManager.default.fileExists(atPath: "\(directory)/ready") { try await Task.sleep(for: .milliseconds(10)) }
            let attributes = ["service": service, "account": account, "username": account, AppIdentity.attribute: Self.appA]
            let given = try await run("/usr/bin/python3", ["-c", """
                import secretstorage, sys
                collection = secretstorage.get_default_collection(secretstorage.dbus_init())
                items = list(collection.search_items({'service': \(pythonLiteral(service)), 'account': \(pythonLiteral(elsewhere))}))
                if len(items) != 1: sys.exit('found %d items' % len(items))
                items[0].set_attributes({\(attributes.map { "\(pythonLiteral($0.key)): \(pythonLiteral($0.value))" }.joined(separator: ", "))})
                """])
            #expect(given.status == 0, "\(given.stderr)")
            _ = FileManager.default.createFile(atPath: "\(directory)/go", contents: nil)
            let result = try await process
            #expect(result.output.split(separator: "\n").filter { $0 != "ok" } == ["no app's", "the app's own"], "\(result.stderr)")
            try? SecretTool.clear(["service": service, "account": account])
        }

        /// After the app has saved, an item no app owns that is newer (Python keyring's, or
        /// secret-tool's with an attribute of its own) is not what the app reads, and the app's next
        /// save does not write into it; one that is not JSON breaks nothing for the app, whose
        /// delete then takes both.
        @Test(arguments: [Stray.pythonKeyring("\"stray value\""), .pythonKeyring("not json at all"),
                          .secretTool("\"stray value\""), .secretTool("not json at all")])
        func theAppsOwnItemBeatsANewerItemNoAppOwns(_ stray: Stray) async throws {
            let account = uniqueAccount()
            let service = KeychainConfiguration.defaultService
            #expect(try await AppIdentities.app(Self.appA, ["save", account, "A's own"]).status == 0)
            try stray.store(service: service, account: account)
            let read = try await AppIdentities.app(Self.appA, ["get", account])
            #expect(read.output == "A's own\n", "\(read.stderr)")
            #expect(try await AppIdentities.app(Self.appA, ["save", account, "A's newer"]).status == 0)
            #expect(try await AppIdentities.app(Self.appA, ["get", account]).output == "A's newer\n")
            let unowned = try SecretTool.search(["service": service, "username": account]).filter {
                $0.storedAttributes[AppIdentity.attribute] == nil
            }
            #expect(unowned.map(\.secret) == [stray.value], "the stray item as it was: \(SecretTool.describeItems(matching: ["service": service]))")
            // An app without an item of its own reads the stray one (as it would 1.x's).
            let other = try await AppIdentities.app(Self.appB, ["get", account])
            #expect(stray.value.hasPrefix("\"") ? other.output == "stray value\n" : other.status == 3, "\(other.output) \(other.stderr)")
            #expect(try await AppIdentities.app(Self.appA, ["delete", account]).status == 0)
            #expect(try SecretTool.search(["service": service, "username": account]).isEmpty, "A's delete takes its own and the stray one")
        }

        /// An item no app owns written after the app's own, by a client we did not write.
        enum Stray: Sendable, CustomTestStringConvertible {
            /// `keyring.set_password(service, account, value)`: `service` + `username`, no `account`.
            case pythonKeyring(String)
            /// `secret-tool store` with `service`, `account` and `username`, and an attribute of its
            /// own. Without one, GNOME Keyring would replace the app's item itself: libsecret stores
            /// with `replace`, which replaces the first item that has all the given attributes.
            case secretTool(String)

            var value: String {
                switch self {
                case .pythonKeyring(let value), .secretTool(let value): value
                }
            }
            var testDescription: String {
                switch self {
                case .pythonKeyring(let value): "Python keyring: \(value)"
                case .secretTool(let value): "secret-tool: \(value)"
                }
            }

            func store(service: String, account: String) throws {
                switch self {
                case .pythonKeyring(let value):
                    _ = try python("keyring.set_password(\(pythonLiteral(service)), \(pythonLiteral(account)), \(pythonLiteral(value)))")
                case .secretTool(let value):
                    try SecretTool.store(label: "stray", attributes: ["service": service, "account": account, "username": account,
                                                                     "stored-by": "secret-tool"], secret: Data(value.utf8))
                }
            }
        }
    }
}
