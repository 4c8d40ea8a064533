import FileKeyring
import Foundation
import SecretService
import Testing
@testable import PingStorage

@Suite("Moving the host's items into the sandbox's file keyring")
struct HostMigrationTests {
    private let service = "com.pingidentity.keychainService"

    private func migration(_ host: FakeSecretService, _ keyring: FileKeyring, answers: Bool = true) -> HostMigration {
        HostMigration(host: host, hostAnswers: { answers }, keyring: keyring, service: service, collection: .default,
                      deadline: Deadline(timeout: .seconds(120)))
    }

    @Test func theServicesItemsAndTheKeysMoveInOnceAndOthersStay() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        host.seed(attributes: ["service": service, "account": "a", "username": "a", "xdg:schema": "com.pingidentity.PingStorage"],
                  secret: "\"token\"", label: "a (svc)")
        host.seed(attributes: ["service": service, "username": "py"], secret: "python", label: "python keyring")
        host.seed(attributes: ["xdg:schema": KeyVault.schema, "key-id": "00112233445566778899aabbccddeeff"],
                  secret: String(repeating: "k", count: 32), label: KeyVault.label)
        host.seed(attributes: ["service": "another.app", "account": "a"], secret: "not ours")
        let keyring = file.keyring

        let outcome = await migration(host, keyring).run()
        #expect(outcome == .moved(moved: 3, kept: 0))
        let items = try keyring.items()
        #expect(items.count == 4, "three items and the marker")
        let moved = try #require(items.first { $0.attributes["account"] == "a" })
        #expect(moved.secret == FileKeyringSecret(utf8: "\"token\""))
        #expect(moved.label == "a (svc)")
        #expect(moved.created == 1_700_000_000, "the host's times are kept")
        #expect(items.contains { $0.attributes["username"] == "py" && $0.secret == FileKeyringSecret(utf8: "python") })
        #expect(host.items.count == 1, "only the other app's item is left on the host")
        #expect(host.items.values.first?.attributes["service"] == "another.app")

        host.seed(attributes: ["service": service, "account": "late"], secret: "late")
        let again = await migration(host, keyring).run()
        #expect(again == .alreadyDone, "once")
        #expect(host.items.count == 2)
        // KeychainStorage reads what moved in.
        #expect(try await file.storage(String.self, account: "a").get() == "token")
    }

    @Test func aHostItemIsDeletedOnlyWhenTheFileHoldsTheSameSecret() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let host = FakeSecretService()
        let attributes = ["service": service, "account": "a"]
        host.seed(attributes: attributes, secret: "host value")
        let keyring = file.keyring
        try keyring.store(label: "sandbox's", attributes: attributes, secret: FileKeyringSecret(utf8: "sandbox value"))
        let outcome = await migration(host, keyring).run()
        #expect(outcome == .moved(moved: 0, kept: 1))
        #expect(host.items.count == 1, "kept on the host: the file has other bytes for it")
        #expect(try keyring.items().first { $0.attributes == attributes }?.secret == FileKeyringSecret(utf8: "sandbox value"))
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
        #expect(await migration(host, file.keyring, answers: false).run() == .hostUnreachable)
        #expect(try file.keyring.items().isEmpty, "no marker: a later process with access moves the items in")
    }
}
