#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import SecretService
import Waiting

extension KeychainConfiguration {
    /// What ``backendInUse()`` will answer, as far as the settings and the sandbox test tell
    /// without any I/O: the decided backend, or inside a sandbox with automatic selection the
    /// file keyring it aims at (the Secret portal has not been asked yet). For ping-keyring's
    /// doctor, which names the backend even when the portal fails.
    /// - Throws: ``KeychainError/Reason/invalidArgument(_:)`` as ``backendInUse()`` does (an unknown
    ///   `PINGSTORAGE_BACKEND`, no place for the file).
    package func plannedBackend() throws(KeychainError) -> KeychainBackendChoice {
        Self.planned(by: try BackendRule.current(backend))
    }

    /// The choice `rule` aims at.
    static func planned(by rule: BackendRule) -> KeychainBackendChoice {
        switch rule {
        case .decided(let choice):
            return choice
        case .sandboxed(let path):
            return KeychainBackendChoice(
                kind: .fileKeyring(path: path),
                reason: "in a Flatpak sandbox (\(BackendRule.sandboxMarker) exists): the file keyring, unlocked with "
                    + "the app's secret from the Secret portal")
        }
    }
}

/// What ping-keyring sees of a sandbox's file keyring: every item with its metadata and bytes,
/// the item an account reads, the file's state and the outcome of copying the host's items in.
/// The account rules are ``AccountRules``'s, chosen as ``FileKeyringStore`` chooses, so the tool
/// reads exactly what ``KeychainStorage`` reads. Reads only: writing and deleting go through
/// ``KeychainStorage`` itself.
///
/// Every call reads one consistent snapshot of the file (``FileKeyring/items(by:)``), on a thread
/// of its own, ending by the configuration's deadline. Thread-safety: `Sendable`.
package struct FileKeyringInventory: Sendable {
    /// An item of the file: its metadata (the path names the file and the item's position,
    /// `/file/NAME/N`, as ``KeychainStorage/itemInfo()`` does) and its secret, which the caller
    /// wipes once used.
    package struct Item: Sendable {
        /// Label, attributes, times and the `/file/NAME/N` path.
        package var info: SecretItemInfo
        /// The bytes and their content type (oo7's `xdg:content-type`, else guessed from the bytes
        /// as ``KeychainStorage`` does).
        package var value: SecretValue
    }

    /// What copying the host's items in did for the configuration's service (see ``HostMigration``).
    package struct MoveIn: Sendable {
        /// What happened, in a sentence that says where from (`from the host's Secret Service: 2
        /// item(s) copied in; …`, `the host's items were copied in before`, …).
        package var description: String
        /// Why it was not done, when it failed (it is retried by the next process).
        package var error: KeychainError?
    }

    /// The keyring file.
    package var path: String { keyring.path }
    private let keychain: FileKeychain
    private let keyring: FileKeyring
    private let configuration: KeychainConfiguration

    /// The file keyring `configuration`'s items are in, opened as ``KeychainStorage`` opens it
    /// (choosing the backend and asking the Secret portal at the first call of the process); nil
    /// when they are in the Secret Service.
    /// - Throws: ``KeychainError`` as ``KeychainConfiguration/backendInUse()`` and a storage's
    ///   first call (`.noSecretService` without the portal's secret, `.timedOut`); `CancellationError`.
    package static func open(for configuration: KeychainConfiguration) async throws -> FileKeyringInventory? {
        let deadline = Deadline(timeout: configuration.timeout)
        do throws(StorageFailure) {
            guard let keychain = try await KeychainPlaces.shared.fileKeychain(for: configuration, by: deadline) else { return nil }
            let keyring = try await keychain.keyring(by: deadline)
            return FileKeyringInventory(keychain: keychain, keyring: keyring, configuration: configuration)
        } catch {
            throw error.thrown
        }
    }

    /// Every item whose attributes include all pairs of at least one of `queries`, in file order.
    /// - Throws: ``KeychainError`` (`.corruptItem` for a file that cannot be decrypted or parsed,
    ///   or when a damaged record of it may match a query; `.providerError` when it cannot be read).
    package func items(matchingAny queries: [[String: String]]) async throws -> [Item] {
        let contents = try await read()
        // A damaged record one of the queries may match fails the call: the list would lack it.
        do throws(FileKeyringError) {
            var damaged: [FileKeyringDamagedRecord] = []
            for record in contents.damaged {
                for query in queries where try record.matches(query) {
                    damaged.append(record)
                    break
                }
            }
            if !damaged.isEmpty { throw FileKeyringError.damaged(damaged, path: keyring.path) }
        } catch {
            throw KeychainError(error)
        }
        let stored = contents.items
        return try stored.indices.filter { index in queries.contains { stored[index].matches($0) } }
            .map { try item(stored, at: $0) }
    }

    /// The item ``KeychainStorage/get()`` of `account` reads (the app's own, else one no app owns:
    /// Python keyring's and go-keyring's included; the newest of any duplicates), with its bytes;
    /// nil when there is none.
    /// - Throws: ``KeychainError`` (`.invalidArgument` for an empty account, else as ``items(matchingAny:)``).
    package func storedItem(account: String) async throws -> Item? {
        let rules = AccountRules(account: account, configuration: configuration)
        do { try rules.validate() } catch { throw error.thrown }
        let contents = try await read()
        do throws(FileKeyringError) {
            try FileKeyringStore.refuseDamaged(contents.damaged, of: rules, in: keyring,
                                               concerning: FileKeyringStore.readConcerns(contents.items, rules))
        } catch {
            throw KeychainError(error, account: account)
        }
        let stored = contents.items
        return try FileKeyringStore.readItem(in: stored, of: rules).map { try item(stored, at: $0) }
    }

    /// Whether the file exists, and how many readable items it holds (a file that cannot be
    /// decrypted or parsed throws as ``items(matchingAny:)``). An absent file is created by the
    /// first save.
    package func contents() async throws -> (exists: Bool, itemCount: Int) {
        let state = try await state()
        return (state.exists, state.itemCount)
    }

    /// A damaged record of the file (FileKeyring's `FileKeyringDamagedRecord`), as ping-keyring
    /// shows it: never a secret or an attribute value.
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

    /// Whether the file exists, how many readable items it holds and which records are damaged,
    /// from one read. Throws as ``contents()``.
    package func state() async throws -> (exists: Bool, itemCount: Int, damaged: [DamagedRecord]) {
        let contents = try await read()
        let count = contents.items.count + contents.damaged.count
        let damaged = contents.damaged.map {
            DamagedRecord(number: $0.index + 1, damage: $0.damage.rawValue, problem: $0.damage.description,
                          hashedAttributeNames: $0.hashedAttributeNames.map(FileKeyringDamagedRecord.printable))
        }
        return (count > 0 || FileManager.default.fileExists(atPath: keyring.path), contents.items.count, damaged)
    }

    /// What copying the host's items in did for the configuration's service in this process; nil
    /// when it did not run (the file keyring was chosen by a setting, not by automatic selection).
    package var movedIn: MoveIn? {
        keychain.migrations.withLock { $0[configuration.service] }.map { outcome in
            switch outcome {
            case .failed(let error): MoveIn(description: outcome.description, error: error)
            case .alreadyDone(let left):
                MoveIn(description: "the host's items were copied in before" + HostMigration.Deletions(left: left).leftText, error: nil)
            case .hostUnreachable, .finished: MoveIn(description: outcome.description, error: nil)
            case .copied: MoveIn(description: "from the host's Secret Service: \(outcome)", error: nil)
            }
        }
    }

    private func read() async throws -> FileKeyringContents {
        do {
            return try await keyring.contents(by: Deadline(timeout: configuration.timeout).instant)
        } catch {
            throw KeychainError(error)
        }
    }

    private func item(_ stored: [FileKeyringItem], at index: Int) throws -> Item {
        let item = stored[index]
        let path: ItemPath
        do { path = try FileKeyringStore.itemPath(keyring.path, index) } catch { throw error.thrown }
        return Item(info: item.info(path: path),
                    value: SecretValue(bytes: item.secret.copiedData(), contentType: item.contentType))
    }
}
