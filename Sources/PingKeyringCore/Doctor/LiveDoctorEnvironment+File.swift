#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PingStorage
import PingStorageCrypto
import SecretService

/// The live doctor's backend, Secret portal and file keyring, as KeychainStorage sees them with
/// the command line's settings.
extension LiveDoctorEnvironment {
    /// ``KeychainConfiguration/backendInUse()`` with the command line's settings; when it fails,
    /// the backend they aim at (``KeychainConfiguration/plannedBackend()``).
    func backend() async throws(BackendProblem) -> KeychainBackendChoice {
        let configuration = settings.configuration()
        let planned: KeychainBackendChoice
        do {
            planned = try settings.plannedBackend(configuration)
        } catch {
            throw BackendProblem(planned: nil, error: error)
        }
        do {
            return try await settings.backendInUse(configuration)
        } catch {
            throw BackendProblem(planned: planned, error: error)
        }
    }

    /// Asks the Secret portal for the app's secret and wipes it at once: only its size is kept.
    func portalSecretSize() async throws(ToolError) -> Int {
        // The connection and options FileKeychain asks the portal with.
        let configuration = settings.configuration()
        let client = ClientCalls.client(for: configuration, options: configuration.options)
        do {
            var secret = try await client.portalSecret()
            defer { secret.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
            return secret.count
        } catch {
            throw ToolError.from(error)
        }
    }

    /// The file keyring opened as KeychainStorage opens it, every item decrypted to count it and
    /// every damaged record named.
    func fileKeyring() async throws(ToolError) -> FileKeyringState {
        do {
            let inventory = try await openInventory()
            let state = try await inventory.state()
            return FileKeyringState(path: inventory.path, exists: state.exists, itemCount: state.itemCount,
                                    damaged: state.damaged.map {
                                        DamagedRecordFinding(number: $0.number, damage: $0.damage, problem: $0.problem,
                                                             hashedAttributeNames: $0.hashedAttributeNames)
                                    })
        } catch {
            throw ToolError.from(error)
        }
    }

    /// ``FileKeyringInventory/movedIn`` of the doctor's configuration (the default service).
    func movedIn() async -> MoveInFinding? {
        // Asked only after fileKeyring() opened the keyring: a failure here is that one's.
        guard let inventory = try? await openInventory(), let moveIn = inventory.movedIn else { return nil }
        return MoveInFinding(description: moveIn.description, error: moveIn.error.map { ToolError.from($0) })
    }

    /// The file keyring of the doctor's configuration.
    private func openInventory() async throws -> FileKeyringInventory {
        guard let inventory = try await FileKeyringInventory.open(for: settings.configuration()) else {
            throw ToolError(kind: "other", message: "the Secret Service is used, not a file keyring.")
        }
        return inventory
    }

    /// The key items of the file keyring, each measured and wiped.
    static func keys(in inventory: FileKeyringInventory) async throws -> [EncryptionKeyItem] {
        var items = try await inventory.items(matchingAny: [["xdg:schema": KeyringCommands.keySchemaName]])
        var keys: [EncryptionKeyItem] = []
        for index in items.indices {
            let info = items[index].info
            let keyID = info.attributes["key-id"].flatMap(KeyID.init(hexString:))?.hexString
            let binding = await KeyItemBinding.of(attributes: info.attributes, bytes: items[index].value.bytes)
            keys.append(EncryptionKeyItem(path: info.path.rawValue, keyID: keyID, byteCount: items[index].value.bytes.count,
                                          created: info.created, binding: binding, app: info.attributes[AppIdentity.attribute]))
            // Wiped where it lies in the array (a copy would be wiped instead of the bytes).
            items[index].value.bytes.wipeInPlace()
        }
        return keys
    }
}
