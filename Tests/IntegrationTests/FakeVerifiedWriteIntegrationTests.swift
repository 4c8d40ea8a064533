import Foundation
import PingStorage
import SecretService
import Testing

extension Integration {
    /// Writes through a session whose key the provider gets wrong (`miskeyed-session`, what KWallet
    /// 5.103 does in about 1 DH exchange of 600, PROVIDERS.md): the provider stores garbage and
    /// reports success, or refuses the write (SetSecret: the old secret kept; CreateItem: a ghost
    /// item with an empty secret left behind). The client reads each write back on the fake (a
    /// provider not known, like KWallet: ProviderQuirks.verifiesWrites) and writes again through a
    /// new session; what is stored is checked in the fake's state.
    @Suite("Verified writes through the fake Secret Service")
    struct FakeVerifiedWrites {
        let attributes = ["service": "S", "account": "A"]

        func items(_ fake: FakeSecretServiceInstance) throws -> [FakeState.Item] {
            try fake.state().items.filter { $0.attributes == attributes }
        }

        /// A client with a connection of its own: it opens its first session after the scenario is
        /// switched on, so that session is a mis-keyed one.
        func create(_ client: SecretServiceClient, _ value: String) async throws(SecretServiceError) -> ItemPath {
            try await client.createItem(in: .default, label: "mine", attributes: attributes,
                                        secret: SecretValue(bytes: Data(value.utf8)), replacing: false).path
        }

        @Test func aCorruptedCreateIsDetectedAndItsSecretWrittenAgain() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("miskeyed-session", "times=1", "writes=garbage")
            let value = "the secret as written"
            let item = try await create(fake.client(), value)
            let state = try fake.state()
            #expect(state.miskeyedLeft == 0, "the first session was mis-keyed")
            #expect(try items(fake).map(\.path) == [item.rawValue], "one item, no second one created: \(fake.log)")
            #expect(try items(fake).first?.secretBytes == Data(value.utf8), "the garbage was written over")
            #expect(state.calls["CreateItem"] == 1 && state.calls["SetSecret"] == 1, "\(state.calls)")
        }

        @Test func aCorruptedSetSecretIsDetectedAndWrittenAgain() async throws {
            let fake = try await FakeSecretServiceInstance()
            let item = try await create(fake.client(), "old")
            try fake.scenario("miskeyed-session", "times=1", "writes=garbage")
            try await fake.client().setSecret(SecretValue(bytes: Data("new".utf8)), of: item)
            #expect(try fake.state().miskeyedLeft == 0)
            #expect(try items(fake).map(\.secretBytes) == [Data("new".utf8)], "\(fake.log)")
            #expect(try fake.calls("SetSecret") == 2, "garbage, then the value through a new session")
        }

        /// KWallet refuses a SetSecret it cannot decrypt with UnknownObject "Can't find session":
        /// a session problem (written again on a new session), not an item that is gone.
        @Test func aRefusedSetSecretIsWrittenAgainNotReportedAsAMissingItem() async throws {
            let fake = try await FakeSecretServiceInstance()
            let item = try await create(fake.client(), "old")
            try fake.scenario("miskeyed-session", "times=1", "writes=refused")
            try await fake.client().setSecret(SecretValue(bytes: Data("new".utf8)), of: item)
            #expect(try items(fake).map(\.secretBytes) == [Data("new".utf8)], "\(fake.log)")
        }

        /// Every session mis-keyed (more than the client's attempts): a typed error, never a
        /// success, and the item the client created (its path came back from its own CreateItem)
        /// is deleted rather than left holding garbage for a later read.
        @Test func aCreateThatNeverReadsBackIsATypedErrorAndLeavesNoItemHoldingGarbage() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("miskeyed-session", "times=3", "writes=garbage")
            let client = fake.client()
            let error = await secretServiceError { () async throws(SecretServiceError) in try await create(client, "never stored") }
            #expect(error?.code == .writeNotVerified, "\(String(describing: error))")
            let left = try items(fake)
            #expect(left.isEmpty, "the created item holding garbage was deleted: \(left.map(\.path))")
            #expect(try fake.calls("CreateItem") == 1 && fake.calls("SetSecret") == 2, "\(fake.log)")
            // The next session is a good one: the write then works.
            let item = try await create(client, "stored")
            #expect(try items(fake).map(\.path) == [item.rawValue])
            #expect(try items(fake).first?.secretBytes == Data("stored".utf8))
        }

        /// Another client writes the item between this client's SetSecret and its read-back (the
        /// fake answers GetSecret after 1 s): the read-back decrypts to the other value, twice,
        /// so the session's key is shared and the write was stored, then replaced. The newer
        /// value stays: the write is neither repeated over it nor reported as failed.
        @Test func aWriteReplacedByAnotherClientRightAfterIsNotWrittenAgain() async throws {
            let fake = try await FakeSecretServiceInstance()
            let item = try await create(fake.client(), "old")
            let (mine, theirs) = (fake.client(), fake.client())
            _ = try await (mine.provider(), theirs.provider())  // both sessions open before the race
            let setSecrets = try fake.calls("SetSecret")
            try fake.scenario("slow", "delay=1", "method=GetSecret")
            async let written = mine.setSecret(SecretValue(bytes: Data("mine".utf8)), of: item)
            _ = try await fake.awaitCalls("SetSecret", atLeast: setSecrets + 1)
            try await theirs.setSecret(SecretValue(bytes: Data("theirs".utf8)), of: item)
            _ = try await written
            #expect(try fake.calls("SetSecret") == setSecrets + 2, "one write each: \(fake.log)")
            #expect(try items(fake).map(\.secretBytes) == [Data("theirs".utf8)], "the last writer's value stays")
        }

        /// Through KeychainStorage, as an app saves: a corrupted save is written again, and another
        /// process's get reads the value.
        @Test func keychainStorageSavesThroughAMiskeyedSession() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("miskeyed-session", "times=1", "writes=garbage")
            let account = uniqueAccount()
            try await fake.storage(account).save(item: "saved")
            let stored = try fake.state().items.filter { $0.attributes["account"] == account }
            #expect(stored.map(\.secretBytes) == [storedJSON("saved")], "\(fake.log)")
            let other = try await run(Harness.probePath, ["get", account], environment: fake.environment, timeout: 30)
            #expect(other.status == 0 && other.output == "saved\n", "\(other.output) \(other.stderr)")
        }

        /// KWallet's CreateItem through a mis-keyed session creates the item with an empty secret
        /// and then fails ("Can't find session"), telling neither its path nor (no ItemCreated)
        /// that it exists: the client cannot prove it its own and leaves it. The save is written
        /// again through a new session, and a later get, in another process, returns the value
        /// saved, never the ghost's empty secret.
        @Test func aGhostLeftByARefusedCreateIsNeverReturnedByALaterGet() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("miskeyed-session", "times=1", "writes=refused")
            let account = uniqueAccount()
            try await fake.storage(account).save(item: "saved")
            let stored = try fake.state().items.filter { $0.attributes["account"] == account }
            #expect(stored.map(\.secretBytes).sorted { $0.count < $1.count } == [Data(), storedJSON("saved")],
                    "the ghost, and the item saved: \(fake.log)")
            let other = try await run(Harness.probePath, ["get", account], environment: fake.environment, timeout: 30)
            #expect(other.status == 0 && other.output == "saved\n", "\(other.output) \(other.stderr)")
        }

        /// Every session mis-keyed, through KeychainStorage: the save fails, and another process's
        /// get finds no value (the item created holding garbage was deleted), never the garbage.
        @Test func aSaveThatNeverReadsBackFailsAndALaterGetFindsNothing() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("miskeyed-session", "times=3", "writes=garbage")
            let account = uniqueAccount()
            let error = await keychainError { try await fake.storage(account).save(item: "never stored") }
            #expect(error != nil, "the save is not reported as done")
            #expect(try fake.state().items.filter { $0.attributes["account"] == account }.isEmpty, "\(fake.log)")
            let other = try await run(Harness.probePath, ["get", account], environment: fake.environment, timeout: 30)
            #expect(other.status == 1 && other.output.isEmpty, "no value: status \(other.status), \(other.output) \(other.stderr)")
        }

        /// Every CreateItem refused: the save fails and leaves only ghosts, which the client
        /// cannot prove its own. Another process's get does not return their empty secret as a
        /// value (KeychainStorage reports a corrupt item), and the next save, through a good
        /// session, collapses them onto one item holding the value.
        @Test func ghostsAloneAreNeverReturnedAsAValueAndTheNextSaveHealsThem() async throws {
            let fake = try await FakeSecretServiceInstance()
            try fake.scenario("miskeyed-session", "times=3", "writes=refused")
            let account = uniqueAccount()
            let error = await keychainError { try await fake.storage(account).save(item: "never stored") }
            #expect(error != nil, "the save is not reported as done")
            let stored = try fake.state().items.filter { $0.attributes["account"] == account }
            #expect(!stored.isEmpty && stored.allSatisfy { $0.secretBytes.isEmpty }, "ghosts only: \(stored.map(\.path))")
            let other = try await run(Harness.probePath, ["get", account], environment: fake.environment, timeout: 30)
            #expect(other.status != 0 && other.output.isEmpty, "no value: status \(other.status), \(other.output) \(other.stderr)")
            try await fake.storage(account).save(item: "saved")
            let healed = try fake.state().items.filter { $0.attributes["account"] == account }
            #expect(healed.map(\.secretBytes) == [storedJSON("saved")], "\(healed.map(\.path))")
        }
    }
}
