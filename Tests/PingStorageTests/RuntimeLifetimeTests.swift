import Testing
@testable import PingStorage

/// A runtime other than the process's (a test's) frees what it opened once nothing uses it: a key
/// vault holds its place, so a place holding its vaults would have kept both, and the place's
/// connection, for the rest of the process (LeakSanitizer reported 33 places in the unit suite).
@Suite("What a runtime opened is freed with it")
struct RuntimeLifetimeTests {
    @Test func aPlaceWithAKeyVaultIsFreedWithItsRuntime() {
        weak var place: KeychainPlace?
        weak var vault: KeyVault?
        do {
            let runtime = KeychainRuntime(FakeSecretService())
            let configuration = KeychainConfiguration(backend: .secretService, app: "com.example.Lifetime", keyBinding: .none)
            vault = runtime.vault(for: configuration)
            place = runtime.place(for: configuration)
            #expect(place != nil && vault != nil)
        }
        #expect(place == nil, "the place is freed")
        #expect(vault == nil, "the vault is freed")
    }

    /// An encryptor outlives the runtime it was made from: its vault keeps what it needs.
    @Test func aVaultKeepsItsPlaceAfterTheRuntimeIsGone() async throws {
        let vault = KeyVault.on(FakeSecretService())
        let (id, _) = try await vault.currentKey()
        #expect(try await vault.confirm(id))
    }
}
