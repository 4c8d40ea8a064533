#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import PingStorage

/// The item every contender stores: an OIDC-like token set whose JSON is about `size` bytes
/// (2 KiB by default). `version` changes on every save so that a save really writes.
///
/// A library target of its own so that the benchmark and the helper processes it starts read
/// and write the very same items.
public struct Token: Codable, Sendable, Equatable {
    public var accessToken: String
    public var refreshToken: String
    public var idToken: String
    public var tokenType: String
    public var scope: String
    public var expiresIn: Int
    public var version: Int

    /// A token for `account` whose JSON is close to `size` bytes; the same arguments give the
    /// same token.
    public static func make(account: String, version: Int = 0, size: Int = 2048) -> Token {
        // FNV-1a of the account: String.hashValue is seeded per process.
        let seed = account.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        func random(_ count: Int) -> String {
            String((0..<max(count, 1)).map { _ in alphabet[Int(generator.next() % 64)] })
        }
        let overhead = 170  // keys, punctuation and the short fields
        let payload = max(size - overhead, 64)
        return Token(
            accessToken: random(payload * 40 / 100), refreshToken: random(payload * 15 / 100),
            idToken: random(payload * 45 / 100), tokenType: "Bearer", scope: "openid profile email offline_access",
            expiresIn: 3600, version: version)
    }

    /// The token's compact JSON, as KeychainStorage stores it.
    public var json: String {
        String(decoding: try! JSONEncoder().encode(self), as: UTF8.self)
    }

    /// The same token with another version: a different value of the same size.
    public func with(version: Int) -> Token {
        var copy = self
        copy.version = version
        return copy
    }
}

/// Names and settings shared by all contenders. Every contender works on accounts of its own
/// (same service, same collection), so none disturbs another's items.
public enum Bench {
    /// The `service` attribute of every item the benchmark writes.
    public static let service = "com.pingidentity.benchmark"

    /// The app identity every benchmark program shares (an app and its helpers sharing on
    /// purpose): the benchmark saves the items the cold-start programs read.
    public static let app = "com.pingidentity.benchmark"

    /// KeychainStorage configuration on the keyring under test (the `default` collection).
    public static let configuration = KeychainConfiguration(service: service, collection: .default, app: app)

    /// Accounts of one contender: `prefix-0` … `prefix-(count-1)`.
    public static func accounts(_ prefix: String, _ count: Int) -> [String] {
        (0..<count).map { "\(prefix)-\($0)" }
    }

    /// Accounts that only make the keyring bigger (the population every write rewrites).
    public static let fillerAccounts = accounts("pop", 40)
}

/// A small, seedable random number generator (SplitMix64), so a run's order can be reproduced.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Resident set size of this process in bytes, from /proc/self/statm.
public func residentSetSize() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * sysconf(Int32(_SC_PAGESIZE))
}
