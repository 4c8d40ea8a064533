#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import PingStorageCrypto
import Waiting

/// Moving an app's items from the host's Secret Service into its sandbox's file keyring, once,
/// when a sandboxed app can reach both (its manifest grants `--talk-name=org.freedesktop.secrets`).
///
/// - **The app's own items and keys** (`pingstorage-app` = the sandbox's app id, ``AppIdentity``:
///   the same app run outside the sandbox before) are moved: copied in, then deleted on the host
///   once the file holds them. They are provably this app's.
/// - **Items and keys no app owns** (the configuration's `service` without `pingstorage-app`:
///   PingStorage 1.x's, Python keyring's, secret-tool's; 1.x's keys) are copied and left on the
///   host: another app may still need them (a 1.x key above all: without it, everything that app
///   encrypted is lost). The doctor and the Flatpak article say how to remove them.
/// - **Another app's items and keys** are neither copied nor touched.
/// - **Keys bound to the host's TPM** (``BoundKey``), and the items they sealed, are neither copied
///   nor touched when the sandbox cannot reach the TPM (``tpmReachable``; Flatpak gives the device
///   only with `--device=all`): the sandbox could not open them, and the app outside the sandbox
///   still can. The sandboxed app starts without them (it signs in again), with an unbound key
///   of its own in the file keyring.
///
/// The copy is one transaction of the file: the items the file lacks (by exact attributes: an
/// item the file already has is left as the file has it, the sandbox's copy is the newer) and a
/// marker item (attributes `xdg:schema` = ``markerSchema``, `service` and the app) that records
/// that it was done, so it is done once, and either whole or not at all. The marker's secret
/// records the host deletions still to make (``MoveRecord``): each of the app's own host items
/// copied, by path and a digest of what was copied. Deleting them on the host comes after; a
/// process killed meanwhile leaves them recorded, and a later start completes them. A host item
/// changed since it was copied (its digest differs: the app outside the sandbox saved again) is
/// left where it is and reported, never deleted; one that cannot be deleted now (locked) stays
/// recorded for the next start. Nothing is lost either way.
package struct HostMigration: Sendable {
    /// The result, for ping-keyring's doctor.
    enum Outcome: Sendable, Hashable, CustomStringConvertible {
        /// The file already had the marker, and no host deletion was left to make; `left`: the host
        /// items that had changed since they were copied, left on the host.
        case alreadyDone(left: [String])
        /// The host's Secret Service is out of the app's reach (the usual Flatpak case); `pending`:
        /// host deletions of an earlier move still to make.
        case hostUnreachable(pending: Int)
        /// `copied` items were copied in; `alreadyThere` were not, the file had items with their
        /// attributes; then, as ``finished(_:)``, the app's own were removed from the host.
        case copied(copied: Int, alreadyThere: Int, deletions: Deletions)
        /// An earlier move's host deletions, made now (that move was interrupted).
        case finished(Deletions)
        /// Not done (the host was locked, a call failed): retried by the next process.
        case failed(KeychainError)

        var description: String {
            switch self {
            case .alreadyDone(let left): "done before" + Deletions(left: left).leftText
            case .hostUnreachable(let pending) where pending > 0:
                "\(pending) of the app's own item(s) copied in earlier wait to be removed from the host, which is out of "
                    + "reach now; the next process that reaches it removes them"
            case .hostUnreachable: "the host's Secret Service is out of reach: nothing to copy in"
            case .copied(let copied, let alreadyThere, let deletions):
                "\(copied) item(s) copied in" + (alreadyThere > 0 ? ", \(alreadyThere) not (the sandbox had its own)" : "")
                    + "; \(deletions.moved) of the app's own removed from the host, the others (no app's) stay there"
                    + deletions.pendingText + deletions.leftText
            case .finished(let deletions):
                "an interrupted move finished: \(deletions.moved) of the app's own item(s) removed from the host"
                    + deletions.pendingText + deletions.leftText
            case .failed(let error): "not done, retried next time: \(error.errorMessage)"
            }
        }
    }

    /// What the host deletions of a move did.
    struct Deletions: Sendable, Hashable {
        /// Removed from the host now.
        var moved = 0
        /// Still to remove (a deletion failed): the next start tries again.
        var pending = 0
        /// The host items changed since they were copied: left on the host (their paths), for good.
        var left: [String] = []

        var pendingText: String {
            pending > 0 ? "; \(pending) could not be removed now and wait for the next start" : ""
        }
        var leftText: String {
            left.isEmpty ? "" : "; \(left.count) host item(s) changed after they were copied in and stay on the host, "
                + "not moved (\(left.joined(separator: ", ")))"
        }
    }

    static let markerSchema = "com.pingidentity.PingStorage.MovedIn"

    /// The host's keyring: the Secret Service outside the sandbox.
    let host: any HostKeyring
    let keyring: FileKeyring
    let service: String
    /// The sandbox's app id (``AppIdentity/id``).
    let app: String
    let deadline: Deadline
    /// Whether the sandbox reaches a TPM (asked only when the host has bound keys of the app).
    var tpmReachable: @Sendable () async -> Bool = { false }
    /// Told each step of the move (1: the file holds the copies; 1 + N: the N-th host deletion was
    /// tried), for tests of an interrupted move (``KeychainRuntime/moveStepHook``).
    var reached: @Sendable (_ step: Int) -> Void = { _ in }

    /// Moves and copies the items in, unless the marker says it was done; completes the host
    /// deletions an earlier move left. Never throws: a failure is the outcome (the app goes on with
    /// the file keyring either way).
    func run() async -> Outcome {
        do {
            // `items` fails while a record of the file is damaged: it may be the marker or an item to
            // copy, and a copy beside it would be a duplicate. Not done then, and tried again.
            if let marker = try await keyring.items(by: deadline.instant).first(where: isMarker) {
                let record = MoveRecord(marker.secret)
                guard !record.pending.isEmpty else { return .alreadyDone(left: record.left) }
                guard await host.answers(by: deadline) else { return .hostUnreachable(pending: record.pending.count) }
                return .finished(try await completeDeletions(record.pending))
            }
            guard await host.answers(by: deadline) else { return .hostUnreachable(pending: 0) }
            let hostItems = await leavingBoundKeys(try await readHostItems())
            // The app's own are moved: each recorded, to be deleted on the host once the file holds it.
            let pending = hostItems.filter { $0.info.attributes[AppIdentity.attribute] == app }.map(\.deletion)
            let label = "PingStorage: the host's items of \(service) were copied in"
            let markerAttributes = ["xdg:schema": Self.markerSchema, "service": service, AppIdentity.attribute: app]
            let copied = try await keyring.modify(by: deadline.instant) { [isMarker] items throws(FileKeyringError) -> Int? in
                // Another process of the app copied them in since the check above.
                guard !items.contains(where: isMarker) else { return nil }
                let missing = hostItems.filter { item in !items.contains { $0.attributes == item.info.attributes } }
                for item in missing {
                    items.append(FileKeyringItem(
                        label: item.info.label, attributes: item.info.attributes, secret: item.secret,
                        created: Self.fileTime(item.info.created), modified: Self.fileTime(item.info.modified)))
                }
                items.append(FileKeyringItem(label: label, attributes: markerAttributes,
                                             secret: MoveRecord(pending: pending, left: []).secret))
                return missing.count
            }
            guard let copied else { return .alreadyDone(left: []) }
            reached(1)
            return .copied(copied: copied, alreadyThere: hostItems.count - copied, deletions: try await completeDeletions(pending))
        } catch let error as FileKeyringError {
            return .failed(KeychainError(error))
        } catch let error as StorageFailure {
            guard case .keychain(let error) = error else { return .failed(.failure(.providerError(.init(message: "cancelled")))) }
            return .failed(error)
        } catch {
            return .failed(.failure(.providerError(.init(message: "\(error)"))))
        }
    }

    /// Whether an item of the file is this service's marker for the app. A marker without an app
    /// was written before apps had identities, when everything was moved.
    var isMarker: @Sendable (FileKeyringItem) -> Bool {
        { [service, app] item in
            item.matches(["xdg:schema": Self.markerSchema, "service": service]) && AccountRules.isUsable(item.attributes, by: app)
        }
    }

    /// A provider's time as the file stores it (whole seconds since 1970, unsigned 64 bits),
    /// clamped: the provider's `Created` and `Modified` are whatever it says, and a value at or
    /// over 2^64 − 1024 seconds becomes 2^64 as a `Double`, which `UInt64` cannot hold.
    static func fileTime(_ date: Date) -> UInt64 {
        let seconds = date.timeIntervalSince1970
        guard seconds > 0 else { return 0 }  // before 1970, and NaN
        return seconds < 0x1p64 ? UInt64(seconds) : .max
    }

    private struct HostItem: Sendable {
        let info: KeychainItemInfo
        let secret: FileKeyringSecret
        /// The host deletion this item's move records (its location and what was copied).
        let deletion: MoveRecord.Deletion
        /// The id of the key, when this is a key item bound to a TPM (by its attribute or its bytes).
        let boundKey: KeyID?
        /// The key id the secret's envelope names, when it is one.
        let sealedWith: KeyID?
    }

    /// `items` without the bound keys and the items they sealed, unless the sandbox reaches a TPM.
    private func leavingBoundKeys(_ items: [HostItem]) async -> [HostItem] {
        let bound = Set(items.compactMap(\.boundKey))
        guard !bound.isEmpty, await !tpmReachable() else { return items }
        let left = items.filter { item in item.boundKey != nil || item.sealedWith.map(bound.contains) == true }
        Log.info("Moving into the sandbox: \(bound.count) key(s) bound to the host's TPM and the \(left.count - bound.count) item(s) they "
                 + "encrypted stay on the host: the sandbox cannot reach the TPM")
        return items.filter { item in item.boundKey == nil && item.sealedWith.map(bound.contains) != true }
    }

    /// The service's items and the key items on the host that are the app's or no app's, with
    /// their secrets.
    private func readHostItems() async throws(StorageFailure) -> [HostItem] {
        var items: [HostItem] = []
        for var found in try await host.items(of: service, app: app, by: deadline) {
            defer { found.secret.bytes.wipe() }
            let (info, value) = (found.info, found.secret.bytes)
            let keyID = info.attributes["key-id"].flatMap(KeyID.init(hexString:))
            let isBoundKey = info.attributes["xdg:schema"] == KeychainStorageSchemas.key
                && (BoundKey.isBound(info.attributes) || BoundKey.isBound(bytes: value))
            items.append(HostItem(info: info, secret: FileKeyringSecret(copying: value),
                                  deletion: .init(path: info.location, digest: MoveRecord.digest(attributes: info.attributes, secret: value)),
                                  boundKey: isBoundKey ? keyID : nil,
                                  sealedWith: Envelope.isEnvelope(value) ? (try? Envelope.header(of: value))?.keyID : nil))
        }
        return items
    }
}

/// The host's keyring as a move into a sandbox sees it: the Secret Service outside the sandbox,
/// reached when the app's manifest grants `--talk-name=org.freedesktop.secrets`.
protocol HostKeyring: Sendable {
    /// Whether it answers now.
    func answers(by deadline: Deadline) async -> Bool
    /// The items of `service` and the key items that are `app`'s or no app's (never another app's),
    /// with their secrets, which the caller wipes.
    func items(of service: String, app: String, by deadline: Deadline) async throws(StorageFailure)
        -> [(info: KeychainItemInfo, secret: StoredSecret)]
    /// Deletes the item `deletion` names when it still is what was copied (its digest); tells what it did.
    func delete(_ deletion: HostMigration.MoveRecord.Deletion, by deadline: Deadline) async -> HostMigration.DeletionResult
}
