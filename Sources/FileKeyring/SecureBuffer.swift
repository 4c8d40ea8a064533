#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one place (with Gcrypt.swift and POSIX.swift) where this module touches raw memory: a
// buffer for secret bytes that is wiped with explicit_bzero when released, and the public secret
// type built on it. Everything else reads these bytes through `Span` or the bounds-checked
// subscript, and writes them through the methods below.

/// A fixed-size, zero-initialised byte buffer for secret data, wiped (`explicit_bzero`) in `deinit`.
///
/// Not `Sendable`: one owner at a time writes it (serialisers, the cipher in place). The memory is
/// an ordinary heap allocation: it is not `mlock`ed (a keyring holds one small buffer per item, and
/// a page each would exhaust `RLIMIT_MEMLOCK`), so it can reach swap like any other heap page.
final class SecureBuffer {
    private let storage: UnsafeMutableRawBufferPointer
    /// The number of bytes.
    let count: Int

    /// Allocates `count` zero bytes.
    init(count: Int) {
        precondition(count >= 0, "a buffer cannot have a negative size")
        self.count = count
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
    }

    /// A copy of `bytes`.
    convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count)
        var index = 0
        for byte in bytes {
            storage[index] = byte
            index += 1
        }
    }

    deinit {
        explicit_bzero(storage.baseAddress!, storage.count)
        storage.deallocate()
    }

    /// The byte at `index` (bounds-checked: out of range is a programming error).
    subscript(index: Int) -> UInt8 {
        get {
            precondition(index >= 0 && index < count, "SecureBuffer index out of range")
            return storage[index]
        }
        set {
            precondition(index >= 0 && index < count, "SecureBuffer index out of range")
            storage[index] = newValue
        }
    }

    /// Copies `bytes` to `offset...`.
    func write(_ bytes: some Collection<UInt8>, at offset: Int) {
        precondition(offset >= 0 && offset + bytes.count <= count, "SecureBuffer write out of range")
        var index = offset
        for byte in bytes {
            storage[index] = byte
            index += 1
        }
    }

    /// Copies `source[range]` to `offset...` (buffer to buffer, no intermediate copy).
    func write(_ source: SecureBuffer, range: Range<Int>, at offset: Int) {
        precondition(range.lowerBound >= 0 && range.upperBound <= source.count, "SecureBuffer source out of range")
        precondition(offset >= 0 && offset + range.count <= count, "SecureBuffer write out of range")
        guard !range.isEmpty else { return }
        (storage.baseAddress! + offset).copyMemory(
            from: source.storage.baseAddress! + range.lowerBound, byteCount: range.count)
    }

    /// A new buffer holding `self[range]`.
    func slice(_ range: Range<Int>) -> SecureBuffer {
        let result = SecureBuffer(count: range.count)
        result.write(self, range: range, at: 0)
        return result
    }

    /// Calls `body` with a read-only, bounds-checked view of the bytes.
    func withSpan<R, E: Error>(_ body: (Span<UInt8>) throws(E) -> R) throws(E) -> R {
        let bytes = UnsafeBufferPointer(start: storage.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
        return try body(Span(_unsafeElements: bytes))
    }

    /// Calls `body` with the raw bytes, for the libgcrypt and POSIX wrappers only.
    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: storage.baseAddress!, count: count))
    }

    /// Calls `body` with the raw bytes, writable, for the libgcrypt wrappers only.
    func withUnsafeMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: storage.baseAddress!, count: count))
    }

    /// Whether both hold the same bytes, in time that depends only on the lengths.
    func constantTimeEquals(_ other: SecureBuffer) -> Bool {
        guard count == other.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<count { difference |= storage[index] ^ other.storage[index] }
        return difference == 0
    }
}

/// Secret bytes (an item's secret, or the master secret) held in memory that is wiped with
/// `explicit_bzero` when the last reference goes away.
///
/// Copies of a `FileKeyringItem` share one `FileKeyringSecret`; the bytes are wiped once nobody
/// holds it. To wipe early, drop every reference. `description` never shows the bytes.
///
/// Thread-safety: immutable after `init`, so any number of threads may read it at once.
/// (`@unchecked Sendable` for that reason: the underlying buffer is written only while the
/// initialiser runs, before the object can be shared, and freed only in `deinit`.)
public final class FileKeyringSecret: @unchecked Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    let buffer: SecureBuffer

    init(buffer: SecureBuffer) {
        self.buffer = buffer
    }

    /// A secret holding a copy of `bytes`. The caller remains responsible for its own copy; see
    /// ``init(wiping:)`` to have it zeroed.
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(buffer: SecureBuffer(copying: bytes))
    }

    /// A secret holding the UTF-8 bytes of `string` (no terminating NUL), as libsecret stores a
    /// text password and reads `SECRET_FILE_TEST_PASSWORD`.
    public convenience init(utf8 string: String) {
        self.init(buffer: SecureBuffer(copying: string.utf8))
    }

    /// A secret holding the bytes of `bytes`, which are then overwritten with zeros in place.
    /// (Best effort: copies Swift made of the array earlier are not reachable from here.)
    public convenience init(wiping bytes: inout [UInt8]) {
        self.init(buffer: SecureBuffer(copying: bytes))
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
