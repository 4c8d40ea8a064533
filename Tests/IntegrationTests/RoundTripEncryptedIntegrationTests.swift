import Foundation
@testable import PingStorage
import SecretService
import Testing

extension Integration.RoundTrips {
    /// SecuredKeyEncryptor's saves cost what plain ones do: an unchanged value is recognised by its
    /// plaintext (every envelope differs, GCM's nonce being random) and written not at all, and the
    /// key check after a write reads the known key item once instead of searching for it.
    @Test(arguments: Measured.providers)
    func encryptedOperationsCostWhatPlainOnesDo(on provider: String) async throws {
        let measured = try await Measured(provider)
        defer { withExtendedLifetime(measured) {} }  // the fake service runs until the test ends
        let (configuration, lockCheck, readBack, calls) = (measured.configuration, measured.lockCheck, measured.readBack, measured.calls)
        let encryptor = try #require(SecuredKeyEncryptor(configuration: configuration))
        let storage = KeychainStorage<String>(account: uniqueAccount(), encryptor: encryptor, configuration: configuration)
        // Connected, the session negotiated, a key in the collection and chosen.
        try await KeychainStorage<String>(account: uniqueAccount(), encryptor: encryptor, configuration: configuration).save(item: "key")
        _ = try await configuration.processClient.provider()
        #expect(try await storage.get() == nil)  // the collection's lock state known again after that creation
        _ = calls()

        try await storage.save(item: "one")
        #expect(calls().sorted() == (["CreateItem", "GetSecret", "SearchItems", "SearchItems", "SearchItems"] + readBack).sorted(),
                "save of a new account: the three searches at once, CreateItem, the key item's secret: 3 round trips (our own new item does not make the key be chosen again)")
        try await storage.save(item: "two")
        #expect(calls() == ["GetSecret"] + lockCheck + ["SetSecret"] + readBack + ["GetSecret"],
                "the next save: the key still chosen, 3 round trips")
        #expect(try await storage.get() == "two")
        #expect(calls() == ["GetSecret"], "get of the remembered item: 1 round trip")
        try await storage.save(item: "three")
        #expect(calls() == ["GetSecret"] + lockCheck + ["SetSecret"] + readBack + ["GetSecret"],
                "save of the remembered item: its secret, the write, the key item's secret: 3 round trips")
        try await storage.save(item: "three")
        #expect(calls() == ["GetSecret"], "an unchanged value is not written, nor the key checked: 1 round trip")
        #expect(try await storage.get() == "three")
        _ = calls()
        try await storage.delete()
        #expect(calls() == lockCheck + ["Delete"], "delete of the remembered item: 1 round trip")
    }
}
