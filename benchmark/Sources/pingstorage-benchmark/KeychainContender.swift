import BenchmarkSupport
import Foundation
import PingStorage
import SecretService
import Synchronization

/// PingStorage's `KeychainStorage<Token>` used the way an app uses it: one storage per account,
/// created once and kept for the whole run, on the `default` collection.
///
/// Every read or save batch starts with one untimed call on its account (the steady state an app
/// that reads its token on every request is in: the item is remembered). What a read costs right
/// after *any* client created or deleted an item — the remembered item must be found again — is
/// measured on its own row (`keychain.get.after-change`).
final class KeychainContender: Sendable {
    private let plain: [KeychainStorage<Token>]
    private let encrypted: [KeychainStorage<Token>]
    private let cached: KeychainStorage<Token>
    /// A cacheable storage whose every timed `get` comes more than 50 ms after its last: the
    /// cache's check (issue 37).
    private let checked: KeychainStorage<Token>
    /// The client of the rest of the run: the bus round trip KWallet's checks make.
    private let client: SecretServiceClient
    private let encryptor: SecuredKeyEncryptor
    private let sizes: BatchSizes
    private let versions = Atomic<Int>(1)
    /// Makes another client create and delete an item (untimed), e.g. through raw libsecret.
    private let churn: @Sendable () async throws -> Void

    /// Creates the storages (accounts `ks-*`, `enc-*`, `ks-cached`, `ks-checked`) and stores their
    /// first values.
    init(sizes: BatchSizes, client: SecretServiceClient, churn: @escaping @Sendable () async throws -> Void) async throws {
        guard let encryptor = SecuredKeyEncryptor(configuration: Bench.configuration) else {
            throw BenchmarkError("SecuredKeyEncryptor is unavailable (libgcrypt did not start)")
        }
        self.encryptor = encryptor
        self.sizes = sizes
        self.churn = churn
        self.client = client
        plain = Bench.accounts("ks", 8).map {
            KeychainStorage<Token>(account: $0, configuration: Bench.configuration)
        }
        encrypted = Bench.accounts("enc", 8).map {
            KeychainStorage<Token>(account: $0, encryptor: encryptor, configuration: Bench.configuration)
        }
        cached = KeychainStorage<Token>(account: "ks-cached", cacheStrategy: .CACHE, configuration: Bench.configuration)
        checked = KeychainStorage<Token>(account: "ks-checked", cacheStrategy: .CACHE, configuration: Bench.configuration)
        for storage in plain + encrypted + [cached, checked] {
            try await storage.save(item: Token.make(account: storage.account))
        }
    }

    private func nextVersion() -> Int {
        versions.add(1, ordering: .relaxed).newValue
    }

    private func storage(_ storages: [KeychainStorage<Token>], _ round: Int) -> KeychainStorage<Token> {
        storages[round % storages.count]
    }

    /// The rows of this contender.
    var operations: [Operation] {
        [
            Operation(id: "keychain.get", label: "KeychainStorage.get (NO_CACHE)", contender: "PingStorage",
                      kind: .read, isOurs: true) { [self] round in
                try await reads(storage(plain, round))
            },
            Operation(id: "keychain.save", label: "KeychainStorage.save (changed value)", contender: "PingStorage",
                      kind: .write, isOurs: true) { [self] round in
                try await saves(storage(plain, round + 3))
            },
            Operation(id: "keychain.save.unchanged", label: "KeychainStorage.save (same value)",
                      contender: "PingStorage", kind: .write, isOurs: true) { [self] round in
                try await unchangedSaves(storage(plain, round + 5))
            },
            Operation(id: "keychain.delete", label: "KeychainStorage.delete", contender: "PingStorage",
                      kind: .delete, isOurs: true) { [self] round in
                try await deletes(storage(plain, round + 6))
            },
            Operation(id: "keychain.get.cached", label: "KeychainStorage.get (CACHE)", contender: "PingStorage",
                      kind: .read, isOurs: true) { [self] _ in
                try await cachedReads()
            },
            Operation(id: "keychain.get.cached.checked", label: "KeychainStorage.get (CACHE), checked (50 ms on)",
                      contender: "PingStorage", kind: .read, isOurs: true) { [self] _ in
                try await reads(checked, pausedBetween: true)
            },
            Operation(id: "keychain.get.paused", label: "KeychainStorage.get (NO_CACHE), 50 ms on",
                      contender: "PingStorage", kind: .read, isOurs: true) { [self] round in
                try await reads(storage(plain, round + 2), pausedBetween: true)
            },
            Operation(id: "bus.round-trip", label: "hearAnnouncementsRoutedSoFar (KWallet's check)",
                      contender: "PingStorage", kind: .read, isOurs: true) { [self] _ in
                try await busRoundTrips()
            },
            Operation(id: "keychain.get.after-change", label: "KeychainStorage.get, after an item change",
                      contender: "PingStorage", kind: .read, isOurs: true) { [self] round in
                try await readsAfterChange(storage(plain, round + 1))
            },
            Operation(id: "keychain.encrypted.get", label: "KeychainStorage.get + SecuredKeyEncryptor",
                      contender: "PingStorage", kind: .read, isOurs: true) { [self] round in
                try await reads(storage(encrypted, round))
            },
            Operation(id: "keychain.encrypted.save", label: "KeychainStorage.save + SecuredKeyEncryptor",
                      contender: "PingStorage", kind: .write, isOurs: true) { [self] round in
                try await saves(storage(encrypted, round + 3))
            },
            Operation(id: "crypto.seal-open-4k", label: "AES-256-GCM encrypt+decrypt 4 KiB (no keyring)",
                      contender: "PingStorage", kind: .compute, isOurs: true) { [self] _ in
                try await sealAndOpen()
            },
        ]
    }

    /// `pausedBetween`: 60 ms untimed before each get. On a cacheable storage each get is then
    /// past the 50 ms in which the cache trusts what it has not heard of, so it checks the item (on
    /// GNOME Keyring, a read); on an uncached one it is that check's baseline (a process that
    /// waited wakes slower than one that reads back to back).
    private func reads(_ storage: KeychainStorage<Token>, pausedBetween: Bool = false) async throws -> [Duration] {
        _ = try await storage.get()  // warm-up: the item is remembered from here on
        var samples: [Duration] = []
        for _ in 0..<sizes.reads {
            if pausedBetween { try await Task.sleep(for: .milliseconds(60)) }
            var value: Token?
            samples.append(try await timed { value = try await storage.get() })
            guard value != nil else { throw BenchmarkError("\(storage.account): get returned nil") }
        }
        return samples
    }

    private func saves(_ storage: KeychainStorage<Token>) async throws -> [Duration] {
        let token = Token.make(account: storage.account)
        try await storage.save(item: token.with(version: nextVersion()))  // warm-up
        var samples: [Duration] = []
        for _ in 0..<sizes.writes {
            let changed = token.with(version: nextVersion())
            samples.append(try await timed { try await storage.save(item: changed) })
        }
        return samples
    }

    private func unchangedSaves(_ storage: KeychainStorage<Token>) async throws -> [Duration] {
        let token = Token.make(account: storage.account).with(version: nextVersion())
        try await storage.save(item: token)  // stores the value the timed saves repeat
        var samples: [Duration] = []
        for _ in 0..<sizes.writes {
            samples.append(try await timed { try await storage.save(item: token) })
        }
        return samples
    }

    private func deletes(_ storage: KeychainStorage<Token>) async throws -> [Duration] {
        let token = Token.make(account: storage.account)
        var samples: [Duration] = []
        for _ in 0..<sizes.writes {
            samples.append(try await timed { try await storage.delete() })
            try await storage.save(item: token.with(version: nextVersion()))  // re-create, untimed
        }
        return samples
    }

    private func cachedReads() async throws -> [Duration] {
        let iterations = sizes.cachedIterations
        var samples: [Duration] = []
        for _ in 0..<sizes.reads {
            var found = 0
            let total = try await timed {
                for _ in 0..<iterations {
                    if try await cached.get() != nil { found += 1 }
                }
            }
            guard found == iterations else { throw BenchmarkError("cached get returned nil") }
            samples.append(total / iterations)
        }
        return samples
    }

    /// The round trip to the bus daemon (`GetId`) a cached storage's check makes on KWallet,
    /// which announces every change, before it trusts that nothing was announced.
    private func busRoundTrips() async throws -> [Duration] {
        var samples: [Duration] = []
        for _ in 0..<sizes.reads {
            samples.append(try await timed { try await client.hearAnnouncementsRoutedSoFar() })
        }
        return samples
    }

    private func readsAfterChange(_ storage: KeychainStorage<Token>) async throws -> [Duration] {
        _ = try await storage.get()
        var samples: [Duration] = []
        for _ in 0..<sizes.writes {
            try await churn()  // another client creates and deletes an item: remembered items are re-checked
            var value: Token?
            samples.append(try await timed { value = try await storage.get() })
            guard value != nil else { throw BenchmarkError("\(storage.account): get returned nil") }
        }
        return samples
    }

    private func sealAndOpen() async throws -> [Duration] {
        let json = Token.make(account: "crypto", size: 4096).json
        let plaintext = Data(json.utf8)
        let context = EncryptionContext(service: Bench.service, account: "crypto")
        _ = try await encryptor.encrypt(data: plaintext, context: context)  // the key is in memory from here on
        let iterations = sizes.cryptoIterations
        var samples: [Duration] = []
        for _ in 0..<max(sizes.reads / 2, 1) {
            var intact = true
            let total = try await timed {
                for _ in 0..<iterations {
                    let sealed = try await encryptor.encrypt(data: plaintext, context: context)
                    intact = try await encryptor.decrypt(data: sealed, context: context) == plaintext && intact
                }
            }
            guard intact else { throw BenchmarkError("AES-GCM round trip changed the data") }
            samples.append(total / iterations)
        }
        return samples
    }

    /// Storages for the concurrency runs: accounts `conc-0` … `conc-15`, each with a value stored.
    static func concurrencyStorages(count: Int) async throws -> [KeychainStorage<Token>] {
        var storages: [KeychainStorage<Token>] = []
        for account in Bench.accounts("conc", count) {
            let storage = KeychainStorage<Token>(account: account, configuration: Bench.configuration)
            try await storage.save(item: Token.make(account: account))
            storages.append(storage)
        }
        return storages
    }
}

/// A failure of the benchmark itself (not of a target).
struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
