#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import SecretService

/// Moving an app's items from the host's Secret Service into its sandbox's file keyring, once,
/// when a sandboxed app can reach both (its manifest grants `--talk-name=org.freedesktop.secrets`),
/// as oo7 offers: the items of the configuration's `service` (whoever wrote them) and
/// SecuredKeyEncryptor's keys.
///
/// Nothing is deleted from the host until the copy is verified: the items are copied into the
/// file in one transaction (an item whose exact attributes the file already has is left as the
/// file has it: the sandbox's copy is the newer), the file is read back, and only the host items
/// whose copy holds the same secret are deleted. A marker item in the file (attributes
/// `xdg:schema` = ``markerSchema`` and `service`) records that the service moved in; it is
/// written last, so a move that stopped half way is resumed by the next process.
struct HostMigration: Sendable {
    /// The result, for ping-keyring's doctor.
    enum Outcome: Sendable, Hashable, CustomStringConvertible {
        /// The file already had the marker.
        case alreadyDone
        /// The host's Secret Service is out of the app's reach (the usual Flatpak case).
        case hostUnreachable
        /// `moved` items were copied and deleted from the host; `kept` stayed there (their copy
        /// differs: the sandbox already had newer ones).
        case moved(moved: Int, kept: Int)
        /// Not done (the host was locked, a call failed): retried by the next process.
        case failed(KeychainError)

        var description: String {
            switch self {
            case .alreadyDone: "done before"
            case .hostUnreachable: "the host's Secret Service is out of reach: nothing to move in"
            case .moved(let moved, let kept): "\(moved) item(s) moved in" + (kept > 0 ? ", \(kept) left on the host (the sandbox had its own)" : "")
            case .failed(let error): "not done, retried next time: \(error.errorMessage)"
            }
        }
    }

    static let markerSchema = "com.pingidentity.PingStorage.MovedIn"

    /// The host's Secret Service.
    let host: any KeychainBackend
    /// Whether the host's Secret Service answers (asked only when the marker is missing).
    let hostAnswers: @Sendable () async -> Bool
    let keyring: FileKeyring
    let service: String
    let collection: CollectionReference
    let deadline: Deadline

    /// Moves the items in, unless the marker says it was done. Never throws: a failure is the
    /// outcome (the app goes on with the file keyring either way).
    func run() async -> Outcome {
        do {
            let marker = ["xdg:schema": Self.markerSchema, "service": service]
            if try await keyring.items(by: deadline.instant).contains(where: { $0.matches(marker) }) { return .alreadyDone }
            guard await hostAnswers() else { return .hostUnreachable }
            let hostItems = try await readHostItems()
            try await copy(hostItems)
            // Verified from the file as written: a host item goes only when the file holds the same
            // item (copied now, or by a process that stopped before deleting).
            let stored = try await keyring.items(by: deadline.instant)
            var moved = 0
            for item in hostItems {
                guard let copy = stored.first(where: { $0.attributes == item.info.attributes }), copy.secret == item.secret else {
                    continue
                }
                _ = try await host.ending(by: deadline).deleteItem(item.info.path)
                moved += 1
            }
            try await keyring.modify(by: deadline.instant) { items throws(FileKeyringError) in
                items.append(FileKeyringItem(
                    label: "PingStorage: the items of \(service) were moved in from the host keyring", attributes: marker,
                    secret: FileKeyringSecret(utf8: "")))
            }
            return .moved(moved: moved, kept: hostItems.count - moved)
        } catch let error as FileKeyringError {
            return .failed(KeychainError(error))
        } catch let error as SecretServiceError {
            return .failed(KeychainError(error))
        } catch {
            return .failed(.providerError(.init(message: "\(error)")))
        }
    }

    private struct HostItem: Sendable {
        let info: SecretItemInfo
        let secret: FileKeyringSecret
    }

    /// The service's items and every key item on the host, with their secrets.
    private func readHostItems() async throws(SecretServiceError) -> [HostItem] {
        let client = host.ending(by: deadline)
        var paths = try await client.findItems(matching: ["service": service], in: collection).all
        for path in try await client.findItems(matching: ["xdg:schema": KeychainStorageSchemas.key], in: collection).all
        where !paths.contains(path) {
            paths.append(path)
        }
        var items: [HostItem] = []
        for path in paths {
            let info = try await client.itemInfo(path)
            var value = try await client.secret(of: path).value.bytes
            defer { value.wipe() }
            items.append(HostItem(info: info, secret: FileKeyringSecret(copying: value)))
        }
        return items
    }

    /// Copies what the file lacks (by exact attributes), times and label kept.
    private func copy(_ hostItems: [HostItem]) async throws(FileKeyringError) {
        let missing = { @Sendable (items: [FileKeyringItem]) in
            hostItems.filter { item in !items.contains { $0.attributes == item.info.attributes } }
        }
        guard try await !missing(keyring.items(by: deadline.instant)).isEmpty else { return }
        try await keyring.modify(by: deadline.instant) { items throws(FileKeyringError) in
            for item in missing(items) {
                items.append(FileKeyringItem(
                    label: item.info.label, attributes: item.info.attributes, secret: item.secret,
                    created: UInt64(max(0, item.info.created.timeIntervalSince1970)),
                    modified: UInt64(max(0, item.info.modified.timeIntervalSince1970))))
            }
        }
    }
}
