import FileKeyring
import Foundation
import SecretService
import Testing
@testable import PingStorage

private let service = KeychainConfiguration.defaultService

@Suite("FileKeyringInventory: what ping-keyring reads of a file keyring, by KeychainStorage's rules")
struct KeychainInventoryTests {
    @Test func itListsItemsWithTheirPlaceInTheFileAndTheirBytes() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        try await file.storage(String.self, account: "inventory-list").save(item: "first")
        try file.keyring.store(label: "other", attributes: ["service": "elsewhere", "account": "b"], secret: FileKeyringSecret(utf8: "x"))
        try file.keyring.store(label: "key", attributes: ["xdg:schema": KeychainStorageSchemas.key, "key-id": "00"],
                               secret: FileKeyringSecret(copying: [UInt8](repeating: 7, count: 32)))

        let inventory = try #require(try await FileKeyringInventory.open(for: file.configuration))
        #expect(inventory.path == file.path)
        let ours = try await inventory.items(matchingAny: [["xdg:schema": KeychainStorageSchemas.item], ["service": service]])
        #expect(ours.count == 1)
        #expect(ours.first?.info.path.rawValue == "/file/default/1")
        #expect(ours.first?.info.label == "inventory-list (\(service))")
        #expect(ours.first?.info.attributes["account"] == "inventory-list")
        #expect(ours.first?.value.bytes == Data("\"first\"".utf8))
        #expect(ours.first?.value.contentType == "text/plain")
        let keys = try await inventory.items(matchingAny: [["xdg:schema": KeychainStorageSchemas.key]])
        #expect(keys.map(\.info.path.rawValue) == ["/file/default/3"])
        #expect(keys.first?.value.bytes.count == 32)
        #expect(try await inventory.items(matchingAny: [["service": "elsewhere"], ["account": "b"]]).count == 1, "once")
    }

    @Test func theStoredItemIsTheOneGetReads() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        // Python keyring's item (no account attribute) and an older duplicate of ours.
        try file.keyring.modify { items throws(FileKeyringError) in
            items.append(FileKeyringItem(label: "old", attributes: ["service": service, "account": "inventory"],
                                         secret: FileKeyringSecret(utf8: "\"old\""), created: 10, modified: 20))
            items.append(FileKeyringItem(label: "py", attributes: ["service": service, "username": "inventory"],
                                         secret: FileKeyringSecret(utf8: "\"newest\""), created: 30, modified: 40))
            items.append(FileKeyringItem(label: "bob's", attributes: ["service": service, "username": "inventory", "account": "bob"],
                                         secret: FileKeyringSecret(utf8: "\"bob\""), created: 50, modified: 60))
        }
        let inventory = try #require(try await FileKeyringInventory.open(for: file.configuration))
        let item = try #require(try await inventory.storedItem(account: "inventory"))
        #expect(item.value.bytes == Data("\"newest\"".utf8))
        #expect(item.info.path.rawValue == "/file/default/2")
        #expect(try await file.storage(String.self, account: "inventory").get() == "newest", "the same item KeychainStorage reads")
        #expect(try await inventory.storedItem(account: "nobody") == nil)
        await #expect(throws: KeychainError.self) { _ = try await inventory.storedItem(account: "") }
    }

    @Test func contentsTellAnAbsentFileFromAnEmptyOne() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let inventory = try #require(try await FileKeyringInventory.open(for: file.configuration))
        func contents() async throws -> String {
            let (exists, count) = try await inventory.contents()
            return "\(exists) \(count)"
        }
        #expect(try await contents() == "false 0")
        // Accounts of their own: the account lock is per service and account, whatever the file.
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
        let inventory = try #require(try await FileKeyringInventory.open(for: file.configuration))
        do {
            _ = try await inventory.contents()
            Issue.record("read a file the secret does not open")
        } catch let error as KeychainError {
            #expect(error.kind == "corruptItem")
        }
    }

    @Test func movingInIsReportedForTheConfigurationsService() async throws {
        let file = try TestFileKeyring()
        defer { file.remove() }
        let inventory = try #require(try await FileKeyringInventory.open(for: file.configuration))
        #expect(inventory.movedIn == nil, "a set backend moves nothing in")
        let keychain = FileKeychain.shared(path: file.path, configuration: file.configuration)
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

    @Test func onTheSecretServiceThereIsNoInventory() async throws {
        let configuration = KeychainConfiguration(backend: .secretService)
        #expect(try await FileKeyringInventory.open(for: configuration) == nil)
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
