#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import FileKeyring
import Waiting

/// What ping-keyring's doctor asks beyond the items: the provider on the bus, the Secret portal,
/// and a file keyring's state and move-in, each in PingStorage's words.
extension KeyringInventory {
    /// A damaged record of a file keyring (FileKeyring's `FileKeyringDamagedRecord`), as
    /// ping-keyring shows it: never a secret or an attribute value.
    package struct DamagedRecord: Sendable, Equatable {
        /// Its position among the file's records, from 1.
        package var number: Int
        /// What is wrong: `failedMAC`, `invalidItem` or `inconsistentAttributes`.
        package var damage: String
        /// What is wrong, in words (`it fails its MAC check`).
        package var problem: String
        /// The names of its hashed attributes (control characters replaced, long ones cut).
        package var hashedAttributeNames: [String]
    }

    /// A file keyring's state: whether the file exists, how many readable items it holds, and
    /// which records are damaged.
    package struct FileState: Sendable, Equatable {
        package var path: String
        package var exists: Bool
        package var itemCount: Int
        package var damaged: [DamagedRecord]
    }

    /// What copying the host's items in did for the configuration's service (see ``HostMigration``).
    package struct MoveIn: Sendable {
        /// What happened, in a sentence that says where from (`from the host's Secret Service: 2
        /// item(s) copied in; …`, `the host's items were copied in before`, …).
        package var description: String
        /// Why it was not done, when it failed (it is retried by the next process).
        package var error: KeychainError?
    }

    /// The file keyring's state, from one read of the file (every record decrypted to count it);
    /// nil when the items are in the Secret Service.
    /// - Throws: ``KeychainError`` (`.corruptItem` for a file that cannot be decrypted or parsed,
    ///   `.providerError` when it cannot be read).
    package func fileState() async throws -> FileState? {
        let deadline = Deadline(timeout: configuration.timeout)
        let keyring: FileKeyring
        do throws(StorageFailure) {
            guard let keychain = try await place.fileKeychain(for: configuration, by: deadline) else { return nil }
            keyring = try await keychain.keyring(by: deadline)
        } catch {
            throw error.thrown
        }
        let contents: FileKeyringContents
        do {
            contents = try await keyring.contents(by: deadline.instant)
        } catch {
            throw KeychainError(error)
        }
        let count = contents.items.count + contents.damaged.count
        let damaged = contents.damaged.map {
            DamagedRecord(number: $0.index + 1, damage: $0.damage.rawValue, problem: $0.damage.description,
                          hashedAttributeNames: $0.hashedAttributeNames.map(FileKeyringDamagedRecord.printable))
        }
        return FileState(path: keyring.path, exists: count > 0 || FileManager.default.fileExists(atPath: keyring.path),
                         itemCount: contents.items.count, damaged: damaged)
    }

    /// What copying the host's items in did for the configuration's service in this process; nil
    /// when it did not run (the file keyring was chosen by a setting, or the Secret Service is used).
    package var movedIn: MoveIn? {
        place.movedIn(for: configuration).map { outcome in
            switch outcome {
            case .failed(let error): MoveIn(description: outcome.description, error: error)
            case .alreadyDone(let left):
                MoveIn(description: "the host's items were copied in before" + HostMigration.Deletions(left: left).leftText, error: nil)
            case .hostUnreachable, .finished: MoveIn(description: outcome.description, error: nil)
            case .copied: MoveIn(description: "from the host's Secret Service: \(outcome)", error: nil)
            }
        }
    }

    /// Who provides the Secret Service on `configuration`'s bus, and the transport negotiated
    /// (plain accepted here: it is reported, and nothing secret is sent). Opens no place: the
    /// doctor asks before it knows whether the Secret Service is usable.
    /// - Throws: ``KeychainError`` (`.noSessionBus`, `.noSecretService`, `.timedOut`, …).
    package static func provider(for configuration: KeychainConfiguration) async throws -> KeyringProvider {
        let place = KeychainRuntime.process.place(for: configuration)
        do throws(StorageFailure) {
            return try await place.secretService.provider(for: configuration, by: Deadline(timeout: configuration.timeout))
        } catch {
            throw error.thrown
        }
    }

    /// The size of the app's secret the Secret portal gives on `configuration`'s bus (the bytes
    /// are wiped at once). Opens no place: the doctor asks when opening one failed.
    /// - Throws: ``KeychainError`` (`.noSecretService` without a portal or its Secret backend,
    ///   `.promptDismissed`, `.timedOut`, `.noSessionBus`).
    package static func portalSecretSize(for configuration: KeychainConfiguration) async throws -> Int {
        let place = KeychainRuntime.process.place(for: configuration)
        do throws(StorageFailure) {
            var secret = try await place.secretService.portalSecret(by: Deadline(timeout: configuration.timeout))
            defer { secret.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
            return secret.count
        } catch {
            throw error.thrown
        }
    }
}

/// Who provides the Secret Service (``KeyringInventory/provider()``).
package struct KeyringProvider: Sendable, Equatable {
    /// The provider's name for people (`GNOME Keyring`, `KeePassXC`, …).
    package var name: String
    /// Its executable, when the bus tells.
    package var executable: String?
    package var processID: UInt32?
    /// Its unique bus name.
    package var uniqueName: String
    /// The session algorithm negotiated (`dh-ietf1024-sha256-aes128-cbc-pkcs7` or `plain`).
    package var transport: String
}
