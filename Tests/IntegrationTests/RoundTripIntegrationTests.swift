import Foundation
@testable import PingStorage
import DBusTransport
import SecretService
import Testing

extension Integration {
    /// What each KeychainStorage operation asks of the provider, call by call. Calls listed
    /// together go out at once (one round trip).
    @Suite("Round trips of each operation")
    struct RoundTrips {
        /// On the fake service, and on GNOME Keyring (the provider the figures are given for; other
        /// providers announce changes their own way).
        @Test(arguments: Measured.providers)
        func eachOperationCostsWhatItShould(on provider: String) async throws {
            let measured = try await Measured(provider)
            defer { withExtendedLifetime(measured) {} }  // the fake service runs until the test ends
            let (configuration, lockCheck, readBack, calls) = (measured.configuration, measured.lockCheck, measured.readBack, measured.calls)
            let storage = KeychainStorage<String>(account: uniqueAccount(), configuration: configuration)
            // Connecting, reading the alias: once per process.
            #expect(try await KeychainStorage<String>(account: uniqueAccount(), configuration: configuration).get() == nil)
            // The transport session is negotiated in the background; a get that finds nothing does
            // not wait for it. Waiting here keeps its OpenSession in this step's calls.
            _ = try await configuration.processClient.provider()
            if provider == "fake" {
                // A fresh connection (who owns the name, and its process), then, in any order, the
                // session and the two searches at once, which share one read of the alias.
                let first = calls().filter { $0 != "GetAll" && $0 != "Close" }  // Close: SessionCrypto's 1 in 256
                #expect(first.prefix(2) == ["GetNameOwner", "GetConnectionCredentials"])
                #expect(first.dropFirst(2).filter { $0 != "OpenSession" } == ["ReadAlias", "SearchItems", "SearchItems", "SearchItems"],
                        "first get: one ReadAlias, the three searches at once (the empty collection's lock state aside): \(first)")
                #expect(first.contains("OpenSession"))
            } else {
                _ = calls()
            }

            try await storage.save(item: "one")
            #expect(calls().sorted() == (["CreateItem", "SearchItems", "SearchItems", "SearchItems"] + readBack).sorted(),
                    "save of a new account, the collection known unlocked: the three searches at once (the app's items, by account, by username), CreateItem: 2 round trips")
            #expect(try await storage.get() == "one")
            #expect(calls() == ["GetSecret"], "get of the remembered item: 1 round trip")
            try await storage.save(item: "two")
            #expect(calls() == ["GetSecret"] + lockCheck + ["SetSecret"] + readBack, "save of the remembered item: 2 round trips")
            try await storage.save(item: "two")
            #expect(calls() == ["GetSecret"], "an unchanged value is not written")

            // Another client creates an item: nothing remembered is trusted any more.
            _ = try await SecretServiceClient(bus: BusAddress(configuration.bus)).createItem(in: .default, label: "other", attributes: ["x": "y"],
                                                       secret: SecretValue(bytes: Data("z".utf8)), replacing: false)
            #expect(try await storage.get() == "two")
            #expect(calls().sorted() == ["GetAll", "GetSecret", "SearchItems", "SearchItems", "SearchItems"],
                    "get after a change: the three searches at once, then the item and its secret at once: 2 round trips")
            try await storage.delete()
            #expect(calls() == lockCheck + ["Delete"], "delete of the remembered item: 1 round trip")
            try await KeychainStorage<String>(account: uniqueAccount(), configuration: configuration).save(item: "x")
            #expect(calls().sorted() == (["CreateItem", "GetAll", "SearchItems", "SearchItems", "SearchItems"] + readBack).sorted(),
                    "save of a new account after a change: the three searches, the collection's lock state, CreateItem: 3")

            // An account with an item no app owns (1.x's): the app's first save creates its own
            // item beside it, never writing into it (it wrote into it, then added its attributes,
            // before).
            let legacy = uniqueAccount()
            _ = try await SecretServiceClient(bus: BusAddress(configuration.bus)).createItem(
                in: .default, label: "1.x", attributes: ["service": configuration.service, "account": legacy],
                secret: SecretValue(bytes: Data("\"1.x\"".utf8)), replacing: false)
            _ = calls()
            try await KeychainStorage<String>(account: legacy, configuration: configuration).save(item: "own")
            #expect(calls().sorted() == (["CreateItem", "GetAll", "GetAll", "SearchItems", "SearchItems", "SearchItems"] + readBack).sorted(),
                    "first save over an item no app owns: the three searches, that item's attributes, the collection's lock state, CreateItem")
        }
    }
}

extension Integration.RoundTrips {
    /// The provider a round-trip test measures, and the calls its client sent.
    struct Measured {
        /// The fake service, and GNOME Keyring (the provider the figures are given for; other
        /// providers announce changes their own way).
        static let providers = Harness.provider == "gnome-keyring" ? ["fake", "gnome-keyring"] : ["fake"]

        /// A private fake service, started for each test (the harness's provider is used for
        /// "gnome-keyring"); kept for the test's life.
        let fake: PrivateProvider
        let configuration: KeychainConfiguration
        /// A provider not known to answer IsLocked (the fake) has an item's lock state read before
        /// each write to it (ProviderQuirks.checksLockBeforeWriting); GNOME Keyring does not.
        let lockCheck: [String]
        /// A provider whose writes a mis-keyed session can corrupt, or not known (the fake), has
        /// each written secret read back (ProviderQuirks.verifiesWrites); GNOME Keyring does not.
        let readBack: [String]

        init(_ provider: String) async throws {
            fake = try await PrivateProvider()
            configuration = provider == "fake" ? fake.configuration : KeychainConfiguration()
            lockCheck = provider == "fake" ? ["GetAll"] : []
            readBack = provider == "fake" ? ["GetSecret"] : []
        }

        /// The methods called since the last call of this.
        var calls: @Sendable () -> [String] {
            { [configuration] in configuration.processClient.takeCallLog() }
        }
    }
}

extension KeychainConfiguration {
    /// The client on the connection this process's storages of the configuration use.
    var processClient: SecretServiceClient {
        KeychainRuntime.process.place(for: self).secretService.client!
    }
}
