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
        do throws(ToolError) {
            return settings.backend(of: try await settings.inventory(configuration))
        } catch {
            throw BackendProblem(planned: planned, error: error)
        }
    }

    /// Asks the Secret portal for the app's secret and wipes it at once: only its size is kept.
    func portalSecretSize() async throws(ToolError) -> Int {
        // The connection the file keyring asks the portal on.
        do {
            return try await KeyringInventory.portalSecretSize(for: settings.configuration())
        } catch {
            throw ToolError.from(error)
        }
    }

    /// The file keyring opened as KeychainStorage opens it, every item decrypted to count it and
    /// every damaged record named.
    func fileKeyring() async throws(ToolError) -> FileKeyringState {
        do {
            guard let state = try await settings.inventory(settings.configuration()).fileState() else {
                throw ToolError(kind: "other", message: "the Secret Service is used, not a file keyring.")
            }
            return FileKeyringState(path: state.path, exists: state.exists, itemCount: state.itemCount,
                                    damaged: state.damaged.map {
                                        DamagedRecordFinding(number: $0.number, damage: $0.damage, problem: $0.problem,
                                                             hashedAttributeNames: $0.hashedAttributeNames)
                                    })
        } catch {
            throw ToolError.from(error)
        }
    }

    /// ``KeyringInventory/movedIn`` of the doctor's configuration (the default service).
    func movedIn() async -> MoveInFinding? {
        // Asked only after fileKeyring() opened the keyring: a failure here is that one's.
        guard let inventory = try? await settings.inventory(settings.configuration()), let moveIn = inventory.movedIn else { return nil }
        return MoveInFinding(description: moveIn.description, error: moveIn.error.map { ToolError.from($0) })
    }
}
