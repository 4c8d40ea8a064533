#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import SecretService
import Waiting

/// Copying an app's items from the host's Secret Service into its sandbox's file keyring, once,
/// when a sandboxed app can reach both (its manifest grants `--talk-name=org.freedesktop.secrets`):
/// the items of the configuration's `service` (whoever wrote them) and SecuredKeyEncryptor's keys.
///
/// **Nothing is deleted or changed on the host.** One keyring serves every app of the user: the
/// configuration's service is shared by every app that keeps the default
/// (`com.pingidentity.keychainService`), and key items carry no service at all, so a host item
/// cannot be proven to be this app's own, and another app may still need it (its key above all:
/// without it, everything that app encrypted is lost). The host's copies stay; the doctor and the
/// Flatpak article say how to remove them.
///
/// The copy is one transaction of the file: the items the file lacks (by exact attributes: an
/// item the file already has is left as the file has it, the sandbox's copy is the newer) and a
/// marker item (attributes `xdg:schema` = ``markerSchema`` and `service`) that records that it
/// was done, so it is done once, and either whole or not at all.
struct HostMigration: Sendable {
    /// The result, for ping-keyring's doctor.
    enum Outcome: Sendable, Hashable, CustomStringConvertible {
        /// The file already had the marker.
        case alreadyDone
        /// The host's Secret Service is out of the app's reach (the usual Flatpak case).
        case hostUnreachable
        /// `copied` items were copied in; `alreadyThere` were not, the file had items with their
        /// attributes. The host keeps all of them.
        case copied(copied: Int, alreadyThere: Int)
        /// Not done (the host was locked, a call failed): retried by the next process.
        case failed(KeychainError)

        var description: String {
            switch self {
            case .alreadyDone: "done before"
            case .hostUnreachable: "the host's Secret Service is out of reach: nothing to copy in"
            case .copied(let copied, let alreadyThere):
                "\(copied) item(s) copied in" + (alreadyThere > 0 ? ", \(alreadyThere) not (the sandbox had its own)" : "")
                    + "; the host's copies stay where they are"
            case .failed(let error): "not done, retried next time: \(error.errorMessage)"
            }
        }
    }

    static let markerSchema = "com.pingidentity.PingStorage.MovedIn"

    /// The host's Secret Service, read only.
    let host: any SecretServiceCalls
    /// Whether the host's Secret Service answers (asked only when the marker is missing).
    let hostAnswers: @Sendable () async -> Bool
    let keyring: FileKeyring
    let service: String
    let collection: CollectionReference
    let deadline: Deadline

    /// Copies the items in, unless the marker says it was done. Never throws: a failure is the
    /// outcome (the app goes on with the file keyring either way).
    func run() async -> Outcome {
        do {
            let marker = ["xdg:schema": Self.markerSchema, "service": service]
            if try await keyring.items(by: deadline.instant).contains(where: { $0.matches(marker) }) { return .alreadyDone }
            guard await hostAnswers() else { return .hostUnreachable }
            let hostItems = try await readHostItems()
            let label = "PingStorage: the host's items of \(service) were copied in"
            let copied = try await keyring.modify(by: deadline.instant) { items throws(FileKeyringError) -> Int? in
                // Another process of the app copied them in since the check above.
                guard !items.contains(where: { $0.matches(marker) }) else { return nil }
                let missing = hostItems.filter { item in !items.contains { $0.attributes == item.info.attributes } }
                for item in missing {
                    items.append(FileKeyringItem(
                        label: item.info.label, attributes: item.info.attributes, secret: item.secret,
                        created: Self.fileTime(item.info.created), modified: Self.fileTime(item.info.modified)))
                }
                items.append(FileKeyringItem(label: label, attributes: marker, secret: FileKeyringSecret(utf8: "")))
                return missing.count
            }
            guard let copied else { return .alreadyDone }
            return .copied(copied: copied, alreadyThere: hostItems.count - copied)
        } catch let error as FileKeyringError {
            return .failed(KeychainError(error))
        } catch let error as SecretServiceError {
            return .failed(KeychainError(error))
        } catch {
            return .failed(.failure(.providerError(.init(message: "\(error)"))))
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
}
