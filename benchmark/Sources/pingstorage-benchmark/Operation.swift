import Foundation

/// What an operation does to the keyring; picks the raw libsecret call it is compared with.
enum OperationKind: String, Codable, Sendable {
    /// Reads a secret (compared with `secret_password_lookupv_sync`).
    case read
    /// Writes a secret (compared with `secret_password_storev_sync`).
    case write
    /// Deletes an item (compared with `secret_password_clearv_sync`).
    case delete
    /// No keyring involved (pure computation); no ratio.
    case compute
}

/// One row of the latency table: an operation of one contender, measured in batches (one batch
/// per round; rounds interleave all operations in a shuffled order).
struct Operation: Sendable {
    /// Stable identifier, used as the key in the JSON file (e.g. `keychain.get`).
    let id: String
    /// What the table shows.
    let label: String
    /// Who performs it: `PingStorage`, `libsecret`, `floor`, `secret-tool`, `python-keyring`.
    let contender: String
    let kind: OperationKind
    /// Whether this is one of ours (gets ratio columns in the table, and targets).
    let isOurs: Bool
    /// Runs one batch for `round` and returns the timed samples (setup and warm-up excluded).
    let batch: @Sendable (_ round: Int) async throws -> [Duration]
}

/// How much work one batch does; the defaults keep the whole run within a few minutes on 2 cores.
struct BatchSizes: Sendable {
    /// Reads per batch (fast operations, ~0.3–1 ms).
    var reads = 24
    /// Saves or deletes per batch (each rewrites the keyring file, ~2–15 ms).
    var writes = 6
    /// Operations per batch of the external contenders (a process or a Python call each).
    var external = 3
    /// Cached gets timed together for one sample (they take ~1 µs each).
    var cachedIterations = 2000
    /// Encrypt+decrypt pairs timed together for one sample.
    var cryptoIterations = 50
}
