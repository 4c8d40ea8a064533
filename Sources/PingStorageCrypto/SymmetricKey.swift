#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
package import Gcrypt

/// A 256-bit AES key whose bytes are kept in the package's secret memory (locked when the system
/// allows, left out of core dumps) and wiped when the last copy is released.
///
/// Generate a new key with ``generate()`` (256 bits from libgcrypt's CSPRNG at its strongest level)
/// or rebuild a stored one with ``init(data:)``. The bytes are reachable only through
/// ``withUnsafeBytes(_:)`` and ``exportData()``; `description` and `debugDescription` never show
/// them. A `SymmetricKey` is a value: copies share one immutable buffer, wiped (`explicit_bzero`)
/// when the last copy goes away.
///
/// Thread-safety: `Sendable`; all members may be used from any thread concurrently.
public struct SymmetricKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The length of a key in bytes: 32 (AES-256).
    public static let byteCount = 32

    /// The package's one AES key type, over the key's bytes in secret memory.
    package let aesKey: AESKey

    /// The key's bytes.
    private var storage: SecretBytes { aesKey.bytes }

    /// A key over `bytes`, which are 32 bytes long.
    private init(storage bytes: SecretBytes) {
        aesKey = AESKey(bytes)
    }

    /// Generates a new random key from libgcrypt's CSPRNG (`gcry_randomize` with
    /// `GCRY_VERY_STRONG_RANDOM`, the level libgcrypt recommends for long-term keys).
    ///
    /// - Throws: ``EnvelopeError/cryptoUnavailable`` when ``CryptoLibrary/isAvailable`` is false.
    public static func generate() throws -> SymmetricKey {
        try CryptoLibrary.requireAvailable()
        return SymmetricKey(storage: SecretBytes(count: byteCount) { Random.fill($0, level: .veryStrong) })
    }

    /// Rebuilds a key from its 32 bytes, e.g. as read back from the keyring. The bytes are copied;
    /// wiping `data` afterwards is the caller's business.
    ///
    /// - Parameter data: exactly ``byteCount`` bytes.
    /// - Throws: ``EnvelopeError/invalidKeyLength(_:)`` when `data` is not 32 bytes long.
    public init(data: Data) throws {
        guard data.count == Self.byteCount else { throw EnvelopeError.invalidKeyLength(data.count) }
        self.init(storage: SecretBytes(copying: data))
    }

    /// A key over `secret` itself (no copy), e.g. the key a TPM-bound key item unwrapped to.
    /// - Throws: ``EnvelopeError/invalidKeyLength(_:)`` when `secret` is not 32 bytes long.
    package init(secret: SecretBytes) throws {
        guard secret.count == Self.byteCount else { throw EnvelopeError.invalidKeyLength(secret.count) }
        self.init(storage: secret)
    }

    /// Calls `body` with the key's 32 bytes. The pointer is valid only inside `body`; do not copy
    /// the bytes anywhere that is not wiped afterwards.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes(body)
    }

    /// Calls the asynchronous `body` with the key's 32 bytes; the pointer is valid until `body`
    /// returns (the key is kept alive meanwhile). Do not let it escape.
    package func withUnsafeBytesAsync<R, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) async throws(Failure) -> R
    ) async throws(Failure) -> R {
        let bytes = storage.withUnsafeBytes { $0 }
        defer { withExtendedLifetime(storage) {} }
        return try await body(bytes)
    }

    /// A copy of the key's 32 bytes, for storing the key (e.g. as the secret of its keyring item).
    ///
    /// Wipe the copy (`resetBytes`) as soon as it has been handed on; prefer ``withUnsafeBytes(_:)``
    /// when the destination can take a pointer.
    public func exportData() -> Data {
        storage.withUnsafeBytes { Data($0) }
    }

    /// The key's check value: the first 8 bytes of SHA-256 over `PingStorage key check v1`, a NUL
    /// and the key, as 16 lowercase hexadecimal digits. Kept next to the key (as an attribute of
    /// its keyring item) so that whoever loads the key can tell that the bytes are the ones the
    /// value was made from; like any hash of a 256-bit random key, it reveals nothing usable about it.
    public var checkValue: String {
        let label = Array("PingStorage key check v1\u{0}".utf8)
        let input = SecretBytes(count: label.count + Self.byteCount) { (buffer: inout SecretBytes.Writer) in
            buffer.write(label, at: 0)
            buffer.write(storage, at: label.count)
        }
        let digest = input.withUnsafeBytes { Hashing.sha256($0) }
        let hex = digest.prefix(8).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
        return hex.joined()
    }

    /// Whether `other` holds the same 32 bytes (compared in constant time).
    public func hasSameBytes(as other: SymmetricKey) -> Bool {
        storage.withUnsafeBytes { mine in
            other.storage.withUnsafeBytes { theirs in
                var difference: UInt8 = 0
                for index in 0..<Self.byteCount { difference |= mine[index] ^ theirs[index] }
                return difference == 0
            }
        }
    }

    /// `"SymmetricKey(256 bits)"`: never the key bytes.
    public var description: String { "SymmetricKey(\(Self.byteCount * 8) bits)" }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
