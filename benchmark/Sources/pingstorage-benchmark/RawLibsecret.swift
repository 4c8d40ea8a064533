import BenchmarkSupport
import CBenchmarkLibsecret
import Foundation
import Synchronization

/// Swift access to the C target: raw libsecret calls that block, plus their error handling.
/// Call only from a ``BlockingThread``.
enum RawLibsecret {
    /// Connects libsecret's shared service and opens its session.
    static func connect() throws {
        _ = try call { cbl_connect($0) }
    }

    /// `secret_password_storev_sync` of `secret` for (service, account) in `collection`.
    static func store(_ secret: String, account: String, collection: String = "default") throws {
        _ = try call { cbl_store(collection, Bench.service, account, secret, $0) }
    }

    /// Drops libsecret's cached service and connects again (after the provider restarted).
    static func reconnect() throws {
        _ = try call { cbl_reconnect($0) }
    }

    /// Stores `secrets[i]` for `accounts[i]` with the asynchronous API, at most `inFlight` at once
    /// (`cbl_store_concurrently`); returns when all finished.
    static func storeConcurrently(_ secrets: [String], accounts: [String], collection: String = "default",
                                  inFlight: Int) throws {
        let accountPointers = accounts.map { UnsafePointer(strdup($0)) }
        let secretPointers = secrets.map { UnsafePointer(strdup($0)) }
        defer {
            accountPointers.forEach { free(UnsafeMutableRawPointer(mutating: $0)) }
            secretPointers.forEach { free(UnsafeMutableRawPointer(mutating: $0)) }
        }
        _ = try call { error in
            cbl_store_concurrently(collection, Bench.service, accountPointers, secretPointers, accounts.count, inFlight, error)
        }
    }

    /// `secret_password_lookupv_binary_sync`; the secret's length, or nil when there is no item.
    /// One untimed lookup of `account` (the warm-up every contender gets), then `count` timed ones.
    /// - Throws: when a lookup fails or finds nothing.
    static func timedLookups(account: String, count: Int) throws -> [Duration] {
        _ = try lookup(account: account)
        return try (0..<count).map { _ in
            var length: Int?
            let elapsed = try timed { length = try lookup(account: account) }
            guard length != nil else { throw BenchmarkError("\(account): lookup found nothing") }
            return elapsed
        }
    }

    static func lookup(account: String) throws -> Int? {
        var length = 0
        let found = try call { cbl_lookup(Bench.service, account, &length, $0) }
        return found == 1 ? length : nil
    }

    /// `secret_password_clearv_sync`; whether something was deleted.
    static func clear(account: String) throws -> Bool {
        try call { cbl_clear(Bench.service, account, $0) } == 1
    }

    /// An item found once with `secret_service_search_sync`, for the floor.
    final class FoundItem: @unchecked Sendable {
        // @unchecked Sendable: the pointer is only used on the BlockingThread.
        fileprivate let pointer: OpaquePointer
        fileprivate init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { cbl_item_free(pointer) }
    }

    /// Finds the item of `account`.
    static func findItem(account: String) throws -> FoundItem {
        var message: UnsafeMutablePointer<CChar>?
        guard let item = cbl_find_item(Bench.service, account, &message) else {
            defer { cbl_free_string(message) }
            throw BenchmarkError(message.map { String(cString: $0) } ?? "cbl_find_item failed")
        }
        return FoundItem(item)
    }

    /// `secret_item_load_secret_sync` on a found item: one GetSecret round trip. The secret's length.
    static func loadSecret(_ item: FoundItem) throws -> Int {
        var length = 0
        guard try call({ cbl_item_load_secret(item.pointer, &length, $0) }) == 1 else {
            throw BenchmarkError("the floor item returned no secret (locked?)")
        }
        return length
    }

    private static func call(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32) throws -> Int32 {
        var message: UnsafeMutablePointer<CChar>?
        let result = body(&message)
        if result < 0 {
            defer { cbl_free_string(message) }
            throw BenchmarkError(message.map { String(cString: $0) } ?? "libsecret call failed")
        }
        return result
    }
}

/// The raw libsecret contender — what a C program calling `secret_password_*v_sync` gets — and
/// the floor, `secret_item_load_secret_sync` on an item found once (one GetSecret round trip).
/// All calls run on a dedicated thread, since they block; timing happens on that thread.
final class RawLibsecretContender: Sendable {
    private let worker: BlockingThread
    private let accounts = Bench.accounts("raw", 8)
    private let floorItems: [RawLibsecret.FoundItem]
    private let sizes: BatchSizes
    private let versions = Atomic<Int>(1)

    /// Connects, stores the values of accounts `raw-*` and `floor-*`, and finds the floor items.
    init(worker: BlockingThread, sizes: BatchSizes) async throws {
        self.worker = worker
        self.sizes = sizes
        let accounts = accounts
        floorItems = try await worker.run {
            try RawLibsecret.connect()
            for account in accounts {
                try RawLibsecret.store(Token.make(account: account).json, account: account)
            }
            return try Bench.accounts("floor", 8).map { account in
                try RawLibsecret.store(Token.make(account: account).json, account: account)
                return try RawLibsecret.findItem(account: account)
            }
        }
    }

    /// Another client creating and deleting an item (in the in-memory `session` collection, so it
    /// costs no file rewrite): used to measure a get right after an item change.
    func churn() async throws {
        try await worker.run {
            try RawLibsecret.store(Token.make(account: "churn").json, account: "churn", collection: "session")
            _ = try RawLibsecret.clear(account: "churn")
        }
    }

    /// The rows of this contender.
    var operations: [Operation] {
        [
            Operation(id: "libsecret.lookup", label: "libsecret secret_password_lookupv_binary_sync",
                      contender: "libsecret", kind: .read, isOurs: false) { [self] round in
                try await lookups(accounts[round % accounts.count])
            },
            Operation(id: "libsecret.store", label: "libsecret secret_password_storev_sync", contender: "libsecret",
                      kind: .write, isOurs: false) { [self] round in
                try await stores(accounts[(round + 3) % accounts.count])
            },
            Operation(id: "libsecret.clear", label: "libsecret secret_password_clearv_sync", contender: "libsecret",
                      kind: .delete, isOurs: false) { [self] round in
                try await clears(accounts[(round + 6) % accounts.count])
            },
            Operation(id: "floor.load-secret", label: "floor: secret_item_load_secret_sync", contender: "floor",
                      kind: .read, isOurs: false) { [self] round in
                try await floor(floorItems[round % floorItems.count])
            },
        ]
    }

    private func lookups(_ account: String) async throws -> [Duration] {
        let count = sizes.reads
        return try await worker.run {
            try RawLibsecret.timedLookups(account: account, count: count)
        }
    }

    private func stores(_ account: String) async throws -> [Duration] {
        let token = Token.make(account: account)
        let values = (0...sizes.writes).map { _ in
            token.with(version: versions.add(1, ordering: .relaxed).newValue).json
        }
        return try await worker.run {
            try RawLibsecret.store(values[0], account: account)  // warm-up
            return try values.dropFirst().map { value in
                try timed { try RawLibsecret.store(value, account: account) }
            }
        }
    }

    private func clears(_ account: String) async throws -> [Duration] {
        let token = Token.make(account: account)
        let values = (0..<sizes.writes).map { _ in
            token.with(version: versions.add(1, ordering: .relaxed).newValue).json
        }
        return try await worker.run {
            try values.map { value in
                var cleared = false
                let elapsed = try timed { cleared = try RawLibsecret.clear(account: account) }
                guard cleared else { throw BenchmarkError("\(account): clear found nothing") }
                try RawLibsecret.store(value, account: account)  // re-create, untimed
                return elapsed
            }
        }
    }

    private func floor(_ item: RawLibsecret.FoundItem) async throws -> [Duration] {
        let count = sizes.reads
        return try await worker.run {
            _ = try RawLibsecret.loadSecret(item)  // warm-up
            return try (0..<count).map { _ in
                try timed { _ = try RawLibsecret.loadSecret(item) }
            }
        }
    }
}
