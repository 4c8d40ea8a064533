import FileKeyring
import PingStorageCrypto
import Foundation
import SecretService
import Testing
@testable import PingStorage
import Waiting

@Suite("Copying the host's items into the sandbox's file keyring")
struct HostMigrationTests {
    private let service = "com.pingidentity.keychainService"
    static let app = "org.example.Sandboxed"

    private func migration(_ host: FakeSecretService, _ keyring: FileKeyring, answers: Bool = true,
                           tpmReachable: Bool = false) -> HostMigration {
        HostMigration(host: SecretServiceHost(calls: host, collection: .default, answers: { _ in answers }), keyring: keyring,
                      service: service, app: Self.app, deadline: Deadline(timeout: .seconds(120)),
                      tpmReachable: { tpmReachable }, reached: { _ in })
    }

    /// The items and keys no app owns (PingStorage 1.x's, Python keyring's) are copied and stay on
    /// the host; the sandbox's own app's are moved (copied, then deleted on the host); another
    /// app's are neither copied nor touched. Once.
    @Test func theAppsOwnItemsMoveNoAppsAreCopiedAndAnotherAppsStay() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let app = AppIdentity.attribute
        host.seed(attributes: ["service": service, "account": "a", "username": "a", "xdg:schema": "com.pingidentity.PingStorage"],
                  secret: "\"token\"", label: "a (svc)")
        host.seed(attributes: ["service": service, "username": "py"], secret: "python", label: "python keyring")
        host.seed(attributes: ["xdg:schema": KeyVault.schema, "key-id": "00112233445566778899aabbccddeeff"],
                  secret: String(repeating: "k", count: 32), label: KeyVault.label)
        let own = host.seed(attributes: ["service": service, "account": "mine", app: Self.app], secret: "\"own\"")
        let ownKey = host.seed(attributes: ["xdg:schema": KeyVault.schema, "key-id": "ffeeddccbbaa99887766554433221100", app: Self.app],
                               secret: String(repeating: "o", count: 32), label: KeyVault.label)
        host.seed(attributes: ["service": service, "account": "theirs", app: "org.example.Other"], secret: "\"other app\"")
        host.seed(attributes: ["xdg:schema": KeyVault.schema, "key-id": "0123456789abcdef0123456789abcdef", app: "org.example.Other"],
                  secret: String(repeating: "x", count: 32), label: KeyVault.label)
        host.seed(attributes: ["service": "another.service", "account": "a"], secret: "not ours")
        let keyring = file.keyring

        let outcome = await migration(host, keyring).run()
        #expect(outcome == .copied(copied: 5, alreadyThere: 0, deletions: .init(moved: 2)))
        let items = try keyring.items()
        #expect(items.count == 6, "five items and the marker")
        let copied = try #require(items.first { $0.attributes["account"] == "a" })
        #expect(copied.secret == FileKeyringSecret(utf8: "\"token\""))
        #expect(copied.label == "a (svc)")
        #expect(copied.created == 1_700_000_000, "the host's times are kept")
        #expect(items.contains { $0.attributes["username"] == "py" && $0.secret == FileKeyringSecret(utf8: "python") })
        #expect(items.contains { $0.attributes["account"] == "mine" && $0.secret == FileKeyringSecret(utf8: "\"own\"") })
        #expect(items.filter { $0.attributes["xdg:schema"] == KeyVault.schema }.count == 2, "no app's key and the app's own")
        #expect(!items.contains { $0.attributes[app] == "org.example.Other" }, "another app's are not copied")
        #expect(Set(host.writes) == ["delete \(own)", "delete \(ownKey)"], "the app's own were deleted on the host, nothing else written")
        #expect(host.items.count == 6, "no app's, another app's and another service's stay on the host")

        host.seed(attributes: ["service": service, "account": "late"], secret: "late")
        let again = await migration(host, keyring).run()
        #expect(again == .alreadyDone(left: []), "once")
        #expect(try keyring.items().count == 6, "an item the host gets later is not copied")
        #expect(try await file.storage(String.self, account: "a").get() == "token", "KeychainStorage reads what was copied in")
    }

    @Test func anItemTheFileHasIsLeftAsTheFileHasItAndTheHostsToo() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let attributes = ["service": service, "account": "a"]
        host.seed(attributes: attributes, secret: "host value")
        let keyring = file.keyring
        try keyring.store(label: "sandbox's", attributes: attributes, secret: FileKeyringSecret(utf8: "sandbox value"))
        let outcome = await migration(host, keyring).run()
        #expect(outcome == .copied(copied: 0, alreadyThere: 1, deletions: .init()))
        #expect(host.items.count == 1 && host.writes.isEmpty, "the host keeps its item as it was")
        #expect(try keyring.items().first { $0.attributes == attributes }?.secret == FileKeyringSecret(utf8: "sandbox value"))
    }

    /// A provider's `Created` and `Modified` are whatever it says: 2^64 − 1 seconds becomes 2^64 as
    /// a `Double`, which trapped the conversion to the file's `UInt64`.
    @Test func aProviderTimeNoFileCanHoldDoesNotStopTheCopy() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let clock = 1_700_000_000.0
        host.seed(attributes: ["service": service, "account": "far"], secret: "far", modifiedOffset: Double(UInt64.max) - clock,
                  createdOffset: Double(UInt64.max) - clock)
        host.seed(attributes: ["service": service, "account": "early"], secret: "early", modifiedOffset: -clock - 10)
        #expect(await migration(host, file.keyring).run() == .copied(copied: 2, alreadyThere: 0, deletions: .init()))
        let far = try #require(try file.keyring.items().first { $0.attributes["account"] == "far" })
        #expect(far.created == .max && far.modified == .max)
        let early = try #require(try file.keyring.items().first { $0.attributes["account"] == "early" })
        #expect(early.created == 0 && early.modified == 0, "before 1970: the file's earliest time")
        #expect(HostMigration.fileTime(Date(timeIntervalSince1970: .nan)) == 0)
        #expect(HostMigration.fileTime(Date(timeIntervalSince1970: 0x1p64 - 2048)) == UInt64.max - 2047)
    }

    @Test func nothingIsDeletedWhenTheCopyCannotBeWritten() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        host.seed(attributes: ["service": service, "account": "a"], secret: "value")
        // The keyring's directory is a file: nothing can be written there.
        try FileManager.default.createDirectory(atPath: file.directory, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: file.directory + "/keyrings"))
        guard case .failed = await migration(host, file.keyring).run() else {
            Issue.record("expected a failure")
            return
        }
        #expect(host.items.count == 1)
        #expect(host.writes.isEmpty, "nothing was deleted on the host")
    }

    @Test func aHostOutOfReachIsNotAFailure() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        host.seed(attributes: ["service": service, "account": "a"], secret: "value")
        #expect(await migration(host, file.keyring, answers: false).run() == .hostUnreachable(pending: 0))
        #expect(try file.keyring.items().isEmpty, "no marker: a later process with access moves the items in")
    }

    /// A key bound to the host's TPM is not moved into a sandbox that cannot reach the TPM, nor are
    /// the items it sealed: the sandbox could not open them, and the app outside still can. They
    /// stay on the host untouched; the unbound key and its items move as before. A sandbox that
    /// reaches the TPM takes them all.
    @Test(arguments: [false, true])
    func boundKeysAndTheirItemsStayOnTheHostUnlessTheSandboxReachesTheTPM(tpmReachable: Bool) async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let app = AppIdentity.attribute
        let boundID = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", plainID = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
        func envelope(_ id: String) throws -> Data {
            try Envelope.seal(Data("\"token\"".utf8), key: SymmetricKey.generate(), keyID: #require(KeyID(hexString: id)),
                              associatedData: Data())
        }
        host.seed(attributes: ["xdg:schema": KeyVault.schema, "key-id": boundID, BoundKey.attribute: BoundKey.tpm, app: Self.app],
                  bytes: Data(BoundKey.magic.unpinned) + Data(repeating: 7, count: 200), label: KeyVault.label)
        host.seed(attributes: ["service": service, "account": "sealed-bound", app: Self.app], bytes: try envelope(boundID))
        host.seed(attributes: ["xdg:schema": KeyVault.schema, "key-id": plainID, app: Self.app],
                  secret: String(repeating: "k", count: 32), label: KeyVault.label)
        host.seed(attributes: ["service": service, "account": "sealed-plain", app: Self.app], bytes: try envelope(plainID))
        host.seed(attributes: ["service": service, "account": "plain", app: Self.app], secret: "\"plain\"")

        let outcome = await migration(host, file.keyring, tpmReachable: tpmReachable).run()
        let moved = tpmReachable ? 5 : 3
        #expect(outcome == .copied(copied: moved, alreadyThere: 0, deletions: .init(moved: moved)))
        let items = try file.keyring.items()
        #expect(items.contains { $0.attributes["key-id"] == plainID } && items.contains { $0.attributes["account"] == "sealed-plain" })
        #expect(items.contains { $0.attributes["key-id"] == boundID } == tpmReachable)
        #expect(items.contains { $0.attributes["account"] == "sealed-bound" } == tpmReachable)
        #expect(host.items.count == 5 - moved, "what stays is left on the host as it was")
        #expect(host.items.values.allSatisfy { $0.attributes["key-id"] == boundID || $0.attributes["account"] == "sealed-bound" })
    }

    // MARK: A move that finishes

    /// The state a process killed after the copy leaves: the copies and a marker recording the
    /// host deletions of the app's own items, none made yet.
    private func interruptedMove(_ host: FakeSecretService, _ keyring: FileKeyring,
                                 own paths: [ItemPath]) throws -> [HostMigration.MoveRecord.Deletion] {
        let deletions = paths.map { path in
            let item = host.items[path]!
            return HostMigration.MoveRecord.Deletion(
                path: path.rawValue, digest: HostMigration.MoveRecord.digest(attributes: item.attributes, secret: item.secret.bytes))
        }
        try keyring.modify { items throws(FileKeyringError) in
            for path in paths {
                let item = host.items[path]!
                items.append(FileKeyringItem(label: item.label, attributes: item.attributes, secret: FileKeyringSecret(copying: item.secret.bytes)))
            }
            items.append(FileKeyringItem(label: "marker", attributes: ["xdg:schema": HostMigration.markerSchema, "service": service,
                                                                       AppIdentity.attribute: Self.app],
                                         secret: HostMigration.MoveRecord(pending: deletions, left: []).secret))
        }
        return deletions
    }

    /// A move killed between its host deletions finishes at a later start: the app's own host
    /// items still as they were copied are deleted; one already gone is done; one changed since the
    /// copy (the app outside the sandbox saved again) stays on the host and is reported, for good;
    /// another app's and no app's are never touched.
    @Test func aMoveInterruptedBetweenItsHostDeletionsFinishesAtALaterStart() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let app = AppIdentity.attribute
        let own = (1...3).map { host.seed(attributes: ["service": service, "account": "own\($0)", app: Self.app], secret: "\"v\($0)\"") }
        let others = [host.seed(attributes: ["service": service, "account": "theirs", app: "org.example.Other"], secret: "\"x\""),
                      host.seed(attributes: ["service": service, "account": "legacy"], secret: "\"1.x\"")]
        _ = try interruptedMove(host, file.keyring, own: own)
        _ = try await host.deleteItem(own[0])                                   // deleted before the kill
        _ = try await host.setSecret(SecretValue(bytes: Data("\"saved again\"".utf8)), of: own[2])  // changed since the copy
        let writes = host.writes.count

        #expect(await migration(host, file.keyring, answers: false).run() == .hostUnreachable(pending: 3), "pending, out of reach")
        let outcome = await migration(host, file.keyring).run()
        #expect(outcome == .finished(.init(moved: 1, pending: 0, left: [own[2].rawValue])), "\(outcome)")
        #expect(Array(host.writes.dropFirst(writes)) == ["delete \(own[1])"], "only the unchanged own item")
        #expect(Set(host.items.keys) == Set(others + [own[2]]))
        #expect(await migration(host, file.keyring).run() == .alreadyDone(left: [own[2].rawValue]), "done, the changed one still reported")
        #expect(outcome.description.contains(own[2].rawValue))
    }

    /// A host deletion that fails (the host locked meanwhile) stays recorded, and the next start
    /// makes it.
    @Test func aHostDeletionThatFailsStaysRecordedForTheNextStart() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let own = (1...2).map { host.seed(attributes: ["service": service, "account": "own\($0)", AppIdentity.attribute: Self.app],
                                          secret: "\"v\($0)\"") }
        host.state.withLock { $0.failNext["delete"] = SecretServiceError(.locked, operation: "delete item", message: "locked") }
        let outcome = await migration(host, file.keyring).run()
        #expect(outcome == .copied(copied: 2, alreadyThere: 0, deletions: .init(moved: 1, pending: 1)), "\(outcome)")
        #expect(host.items.count == 1)
        #expect(await migration(host, file.keyring).run() == .finished(.init(moved: 1)))
        #expect(host.items.isEmpty && Set(host.writes) == Set(own.map { "delete \($0)" }))
    }

    /// A marker whose record does not parse (another program wrote it) deletes nothing.
    @Test func aMarkerThatDoesNotParseDeletesNothing() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let own = host.seed(attributes: ["service": service, "account": "own", AppIdentity.attribute: Self.app], secret: "\"v\"")
        _ = try interruptedMove(host, file.keyring, own: [own])
        try file.keyring.modify { items throws(FileKeyringError) in
            let index = items.firstIndex { $0.attributes["xdg:schema"] == HostMigration.markerSchema }!
            items[index].secret = FileKeyringSecret(utf8: #"{"pending": [{"path": "/org/x", "digest": 7}]"#)
        }
        #expect(await migration(host, file.keyring).run() == .alreadyDone(left: []))
        #expect(host.writes.isEmpty)
    }
}
