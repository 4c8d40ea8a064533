import Locking
import Waiting

/// The one object that hands out the places where configurations keep their items: one
/// ``KeychainPlace`` per (backend, bus, collection), each owning what it needs (its Secret Service
/// connection, its file keyring, its opened stores, account locks and bound-key memo), and the key
/// vault of each configuration that encrypts (``vault(for:)``), which holds its place.
///
/// The process has one, ``process``, which every storage and encryptor uses unless given another;
/// besides it, PingStorage keeps no process-wide state but the app identity (``AppIdentity/set(_:)``)
/// and the log's observers. Tests build runtimes of their own, with a Secret Service and a Secret
/// portal they control.
///
/// Thread-safety: `Sendable`; places are made under a lock, once each.
package final class KeychainRuntime: Sendable {
    /// The runtime of the process.
    static let process = KeychainRuntime()

    /// The Secret Service of a place's bus: a connection of its own to that bus, opened on first
    /// use (tests give an in-memory one).
    let makeSecretService: @Sendable (KeychainConfiguration.Bus) -> SecretServiceConnection
    /// For tests of an interrupted move into the sandbox: called in the moving process at each step
    /// of a move (``HostMigration``); nothing by default.
    let moveStepHook = Locked<@Sendable (Int) -> Void>({ _ in })

    private struct PlaceKey: Hashable {
        let backend: KeychainConfiguration.Backend
        let bus: KeychainConfiguration.Bus
        let collection: KeychainConfiguration.Collection
    }
    private let places = Locked<[PlaceKey: KeychainPlace]>([:])
    /// Kept here, not in the place: a vault holds its place, and a place holding its vaults would
    /// never be freed (a test's runtime, and everything it opened, would live until the process ends).
    private let vaults = Locked<[KeychainConfiguration: KeyVault]>([:])

    /// A runtime whose places reach the Secret Service through `makeSecretService`.
    init(makeSecretService: @escaping @Sendable (KeychainConfiguration.Bus) -> SecretServiceConnection = SecretServiceConnection.init(bus:)) {
        self.makeSecretService = makeSecretService
    }

    /// The place of `configuration`'s items. No I/O: it is opened by its first call
    /// (``KeychainPlace/openStore(for:by:)``).
    func place(for configuration: KeychainConfiguration) -> KeychainPlace {
        let key = PlaceKey(backend: configuration.backend, bus: configuration.bus, collection: configuration.collection)
        return places.withLock { places in
            if let existing = places[key] { return existing }
            let created = KeychainPlace(backend: key.backend, bus: key.bus, collection: key.collection, runtime: self)
            places[key] = created
            return created
        }
    }

    /// The key vault of `configuration` (its app, binding and policies: a resolved configuration)
    /// in its place, shared by every encryptor using it (keys load once).
    func vault(for configuration: KeychainConfiguration) -> KeyVault {
        let place = place(for: configuration)
        return vaults.withLock { vaults in
            if let vault = vaults[configuration] { return vault }
            let vault = KeyVault(place: place, configuration: configuration)
            vaults[configuration] = vault
            return vault
        }
    }
}

extension KeychainRuntime {
    /// Ends the process at `step` of a move into the sandbox, as a kill there would (for
    /// keychain-probe's `--exit-in-move STEP`): 1 once the file holds the copies, 1 + N after the
    /// N-th host deletion.
    package static func exitInMove(atStep step: Int, _ exit: @escaping @Sendable () -> Never) {
        process.moveStepHook.withLock { $0 = { if $0 == step { exit() } } }
    }
}
