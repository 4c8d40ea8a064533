import FileKeyring
import Foundation
import Testing
import Waiting
@testable import PingStorage

private let service = KeychainConfiguration.defaultService

/// A keyring as ping-keyring's inventory sees it, on either store: what a test puts in and reads
/// back through the inventory alone, so the same test runs on both.
private struct InventoryBench: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let make: @Sendable () throws -> (inventory: () async throws -> KeyringInventory,
                                      put: @Sendable (String, [String: String], String) throws -> Void,
                                      expectedLocation: @Sendable (Int) -> String, done: @Sendable () -> Void)

    static let file = InventoryBench(testDescription: "file keyring") {
        let file = try TestFileKeyring()
        return ({ try await file.inventory() },
                { label, attributes, secret in
                    try file.keyring.store(label: label, attributes: attributes, secret: FileKeyringSecret(utf8: secret)) },
                { "/file/default/\($0)" }, { file.remove() })
    }

    static let secretService = InventoryBench(testDescription: "Secret Service") {
        let fake = FakeSecretService()
        let configuration = KeychainConfiguration(backend: .secretService)
        let runtime = KeychainRuntime(fake)
        return ({ try await KeyringInventory.open(for: configuration, in: runtime) },
                { label, attributes, secret in _ = fake.seed(attributes: attributes, secret: secret, label: label) },
                { "/org/freedesktop/secrets/collection/login/\($0)" }, {})
    }
}

@Suite("KeyringInventory: what ping-keyring reads, on either store through the one seam")
struct KeyringInventoryTests {
    @Test(arguments: [InventoryBench.file, .secretService])
    fileprivate func itReadsAnyToolsItemsWithTheirPlaceAndSecretsAsAsked(_ bench: InventoryBench) async throws {
        let (open, put, location, done) = try bench.make()
        defer { done() }
        try put("first (\(service))", ["service": service, "account": "first", "xdg:schema": KeychainStorageSchemas.item], "\"first\"")
        try put("other", ["service": "elsewhere", "account": "b"], "x")
        try put("key", ["xdg:schema": KeychainStorageSchemas.key, "key-id": "00"], String(repeating: "k", count: 32))
        let inventory = try await open()

        let ours = try await inventory.items(matchingAny: [["xdg:schema": KeychainStorageSchemas.item], ["service": service]],
                                             reading: .secrets)
        #expect(ours.map(\.info.location) == [location(1)], "once, though both queries match")
        #expect(ours.first?.info.label == "first (\(service))")
        #expect(ours.first?.info.attributes["account"] == "first")
        #expect(ours.first?.secret?.bytes == Data("\"first\"".utf8))
        #expect(ours.first?.secret?.contentType == "text/plain")
        let metadata = try await inventory.items(matchingAny: [["service": "elsewhere"]], reading: .metadata)
        #expect(metadata.map(\.info.location) == [location(2)])
        #expect(metadata.first?.secret == nil, "metadata only")
        #expect(try await inventory.items(matchingAny: [["service": "nowhere"]], reading: .secrets).isEmpty)
        #expect(try await inventory.collection().isLocked == false)
    }

    @Test(arguments: [InventoryBench.file, .secretService])
    fileprivate func encryptionKeysAreMeasuredNeverShown(_ bench: InventoryBench) async throws {
        let (open, put, location, done) = try bench.make()
        defer { done() }
        try put("key", ["xdg:schema": KeychainStorageSchemas.key, "key-id": String(repeating: "AB", count: 16)],
                String(repeating: "k", count: 32))
        try put("odd key", ["xdg:schema": KeychainStorageSchemas.key, "key-id": "not hex"], "short")
        let keys = try await open().encryptionKeys()
        #expect(keys.map(\.path) == [location(1), location(2)])
        #expect(keys.map(\.keyID) == [String(repeating: "ab", count: 16), nil], "lowercased; an invalid id is none")
        #expect(keys.map(\.byteCount) == [32, 5])
        #expect(keys.map(\.holdsAKey) == [true, false])
    }

    @Test func onTheSecretServiceLockedKeysAreReportedNotUnlocked() async throws {
        let fake = FakeSecretService()
        _ = fake.seed(attributes: ["xdg:schema": KeychainStorageSchemas.key, "key-id": "00"], secret: "k")
        fake.state.withLock { $0.collectionLocked = true }
        let inventory = try await KeyringInventory.open(for: KeychainConfiguration(backend: .secretService), in: KeychainRuntime(fake))
        await #expect { _ = try await inventory.encryptionKeys() } throws: { ($0 as? KeychainError)?.kind == "locked" }
        #expect(fake.state.withLock { $0.collectionLocked }, "nothing was unlocked")
        #expect(fake.reads == 0, "no secret read")
    }

    @Test func theSecretServicesCollectionLocksAndUnlocksAndTheFileHasNoLock() async throws {
        let fake = FakeSecretService()
        let inventory = try await KeyringInventory.open(for: KeychainConfiguration(backend: .secretService), in: KeychainRuntime(fake))
        try await inventory.setLocked(true)
        #expect(try await inventory.collection().isLocked)
        try await inventory.setLocked(false)
        #expect(try await inventory.collection().isLocked == false)
        #expect(try await inventory.fileState() == nil, "no file")
        #expect(inventory.movedIn == nil)

        let file = try TestFileKeyring()
        defer { file.remove() }
        await #expect { try await file.inventory().setLocked(true) } throws: { ($0 as? KeychainError)?.kind == "invalidArgument" }
    }

    @Test func theFilesStateTellsAnAbsentFileFromAnEmptyOne() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let inventory = try await file.inventory()
        func contents() async throws -> String {
            let state = try #require(try await inventory.fileState())
            return "\(state.exists) \(state.itemCount)"
        }
        #expect(try await contents() == "false 0")
        try await file.storage(String.self, account: "inventory-contents").save(item: "x")
        #expect(try await contents() == "true 1")
        try await file.storage(String.self, account: "inventory-contents").delete()
        #expect(try await contents() == "true 0", "an empty keyring remains")
    }

    @Test func aFileTheSecretDoesNotOpenIsCorrupt() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        try FileKeyring(path: file.path, masterSecret: FileKeyringSecret(utf8: "another secret"))
            .store(label: "x", attributes: ["a": "b"], secret: FileKeyringSecret(utf8: "y"))
        let inventory = try await file.inventory()
        await #expect { _ = try await inventory.fileState() } throws: { ($0 as? KeychainError)?.kind == "corruptItem" }
        await #expect { _ = try await inventory.items(matchingAny: [["a": "b"]], reading: .secrets) } throws: {
            ($0 as? KeychainError)?.kind == "corruptItem"
        }
    }

    @Test func movingInIsReportedForTheConfigurationsService() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let inventory = try await file.inventory()
        #expect(inventory.movedIn == nil, "a set backend moves nothing in")
        let keychain = try #require(try await inventory.place.fileKeychain(for: inventory.configuration, by: Deadline(timeout: .seconds(5))))
        keychain.migrations.withLock { $0[service] = .copied(copied: 2, alreadyThere: 0, deletions: .init(moved: 1)) }
        #expect(inventory.movedIn?.description == "from the host's Secret Service: 2 item(s) copied in; 1 of the app's own removed from the host, the others (no app's) stay there")
        #expect(inventory.movedIn?.error == nil)
        keychain.migrations.withLock { $0[service] = .alreadyDone(left: []) }
        #expect(inventory.movedIn?.description == "the host's items were copied in before")
        keychain.migrations.withLock { $0[service] = .alreadyDone(left: ["/org/freedesktop/secrets/collection/login/7"]) }
        #expect(inventory.movedIn?.description == "the host's items were copied in before; 1 host item(s) changed after they were "
            + "copied in and stay on the host, not moved (/org/freedesktop/secrets/collection/login/7)")
        keychain.migrations.withLock { $0[service] = .hostUnreachable(pending: 0) }
        #expect(inventory.movedIn?.description == "the host's Secret Service is out of reach: nothing to copy in")
        keychain.migrations.withLock { $0[service] = .hostUnreachable(pending: 2) }
        #expect(inventory.movedIn?.description == "2 of the app's own item(s) copied in earlier wait to be removed from the host, "
            + "which is out of reach now; the next process that reaches it removes them")
        keychain.migrations.withLock { $0[service] = .finished(.init(moved: 1, pending: 1)) }
        #expect(inventory.movedIn?.description == "an interrupted move finished: 1 of the app's own item(s) removed from the host; "
            + "1 could not be removed now and wait for the next start")
        keychain.migrations.withLock { $0[service] = .failed(.unableToRetrieve(.locked(.init(message: "The host's keyring is locked.")))) }
        #expect(inventory.movedIn?.error?.kind == "locked")
    }

    @Test func thePlannedBackendIsTheFileKeyringBeforeThePortalIsAsked() throws {
        let planned = KeychainConfiguration.planned(by: .sandboxed(path: "/d/keyrings/default.keyring"))
        #expect(planned.kind == .fileKeyring(path: "/d/keyrings/default.keyring"))
        #expect(planned.reason.contains("Flatpak sandbox (/.flatpak-info exists)"))
        #expect(planned.reason.contains("Secret portal"))
        let decided = KeychainBackendChoice(kind: .secretService, reason: "set in KeychainConfiguration")
        #expect(KeychainConfiguration.planned(by: .decided(decided)) == decided)
        #expect(try KeychainConfiguration(backend: .secretService).plannedBackend() == decided)
    }
}
