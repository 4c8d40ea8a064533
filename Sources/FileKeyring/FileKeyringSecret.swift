#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import Gcrypt

/// Secret bytes (an item's secret, or the master secret) held in the package's secret memory:
/// locked in RAM when the system allows, left out of core dumps, and wiped with `explicit_bzero`
/// when the last reference goes away.
///
/// Copies of a `FileKeyringItem` share one `FileKeyringSecret`; the bytes are wiped once nobody
/// holds it. To wipe early, drop every reference. `description` never shows the bytes.
///
/// Thread-safety: `Sendable`, immutable after `init`; any number of threads may read it at once.
public final class FileKeyringSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    let buffer: SecretBytes

    init(buffer: SecretBytes) {
        self.buffer = buffer
    }

    /// A secret holding a copy of `bytes`. The caller remains responsible for its own copy; see
    /// ``init(wiping:)`` to have it zeroed.
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(buffer: SecretBytes(copying: bytes))
    }

    /// A secret holding the UTF-8 bytes of `string` (no terminating NUL), as libsecret stores a
    /// text password and reads `SECRET_FILE_TEST_PASSWORD`.
    public convenience init(utf8 string: String) {
        self.init(buffer: SecretBytes(copying: string.utf8))
    }

    /// A secret holding the bytes of `bytes`, which are then overwritten with zeros in place.
    /// (Best effort: copies Swift made of the array earlier are not reachable from here.)
    public convenience init(wiping bytes: inout [UInt8]) {
        self.init(buffer: SecretBytes(copying: bytes))
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
        }
    }

    /// The number of bytes.
    public var count: Int { buffer.count }

    /// Whether the secret has no bytes.
    public var isEmpty: Bool { buffer.count == 0 }

    /// Calls `body` with a read-only view of the bytes. The view must not escape `body`.
    public func withBytes<R, E: Error>(_ body: (Span<UInt8>) throws(E) -> R) throws(E) -> R {
        try buffer.withSpan(body)
    }

    /// Calls `body` with a pointer to the bytes, for handing them to C. The pointer must not escape
    /// `body`, and the bytes must not be written.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try buffer.withUnsafeBytes(body)
    }

    /// Whether both hold the same bytes; the comparison takes time that depends only on the lengths.
    public static func == (lhs: FileKeyringSecret, rhs: FileKeyringSecret) -> Bool {
        lhs === rhs || lhs.buffer.constantTimeEquals(rhs.buffer)
    }

    /// `FileKeyringSecret(N bytes)`: never the bytes themselves.
    public var description: String { "FileKeyringSecret(\(count) bytes)" }

    /// The same as ``description``.
    public var debugDescription: String { description }
}
