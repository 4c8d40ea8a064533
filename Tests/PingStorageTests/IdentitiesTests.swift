import Foundation
import Testing
@testable import PingStorage

/// An old identity's items found and moved to the current one, the same on both stores.
@Suite("App identities: listing them and moving an old one's items")
struct IdentitiesTests {
    static let service = KeychainConfiguration.defaultService
    static let (old, new) = ("/opt/old/place/tool", "com.example.Tool")

    static func item(_ account: String, _ app: String?) -> [String: String] {
        ["service": service, "account": account].merging(app.map { [AppIdentity.attribute: $0] } ?? [:]) { $1 }
    }

    static func key(_ id: String, _ app: String) -> [String: String] {
        ["xdg:schema": KeyVault.schema, "key-id": id, AppIdentity.attribute: app]
    }

    /// The old identity's items of accounts the new one has none of take the new identity; an
    /// account the new one has stays the old one's (never overwritten); the old one's keys the new
    /// one lacks are copied (both have them); another app's items and items no app owns are not
    /// touched.
    @Test(arguments: StoreKind.allCases)
    func anOldIdentitysItemsMoveToTheNewOneAndNothingElseIsTouched(_ kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        defer { subject.cleanUp() }
        let deadline = StoreUnderTest.deadline
        try await subject.seed("a", Self.item("a", Self.old), "old a", 1, 1)
        try await subject.seed("b", Self.item("b", Self.old), "old b", 1, 1)
        try await subject.seed("b", Self.item("b", Self.new), "new b", 2, 2)
        try await subject.seed("key", Self.key("00112233445566778899aabbccddeeff", Self.old), "k", 1, 1)
        try await subject.seed("other", Self.item("a", "com.example.Other"), "other a", 1, 1)
        try await subject.seed("legacy", Self.item("c", nil), "legacy c", 1, 1)
        let before = try await subject.contents()

        let listed = try await subject.store.identityItems(service: Self.service, by: deadline)
        #expect(listed.count == 6)
        #expect(listed.filter { $0.app == Self.old }.compactMap(\.account).sorted() == ["a", "b"])
        #expect(listed.contains { $0.app == Self.old && $0.keyID == "00112233445566778899aabbccddeeff" })

        let move = try await subject.store.moveItems(service: Self.service, from: Self.old, to: Self.new, by: deadline)
        #expect(move == KeychainIdentities.Move(moved: ["a"], skipped: ["b"], keysCopied: ["00112233445566778899aabbccddeeff"]))
        let after = try await subject.contents()
        #expect(after.contains { $0.attributes == Self.item("a", Self.new) && $0.secret == "old a" }, "moved: \(after)")
        #expect(after.contains { $0.attributes == Self.item("b", Self.old) && $0.secret == "old b" }, "skipped, as it was")
        #expect(after.contains { $0.attributes == Self.item("b", Self.new) && $0.secret == "new b" }, "the new one's, as it was")
        #expect(after.filter { $0.attributes["key-id"] == "00112233445566778899aabbccddeeff" }.compactMap { $0.attributes[AppIdentity.attribute] }
                    .sorted() == [Self.new, Self.old].sorted(), "the key copied, both have it")
        for untouched in before where [nil, "com.example.Other"].contains(untouched.attributes[AppIdentity.attribute]) {
            #expect(after.contains(untouched), "\(untouched.label) as it was")
        }
        let again = try await subject.store.moveItems(service: Self.service, from: Self.old, to: Self.new, by: deadline)
        #expect(again == KeychainIdentities.Move(moved: [], skipped: ["b"], keysCopied: []), "nothing more to move")
    }

    @Test func movingFromTheAppItselfIsRefused() async throws {
        let configuration = KeychainConfiguration(backend: .secretService, app: Self.new)
        let inventory = try await KeyringInventory.open(for: configuration, in: KeychainRuntime(FakeSecretService()))
        await #expect(throws: KeychainError.self) { try await inventory.move(from: Self.new) }
    }
}
