#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Secret bytes in the package's secret memory: locked in RAM when the system allows, left out of
/// core dumps, and wiped (`explicit_bzero`) when the last reference goes away (see
/// SecretPages.swift for the policy and what happens when `RLIMIT_MEMLOCK` refuses the lock).
///
/// The one container for secrets in the package: keys (``AESKey``, PingStorageCrypto's
/// `SymmetricKey`), the file keyring's master secret, its derived key and decrypted items.
///
/// `@unchecked Sendable`: the bytes are written only while an initialiser runs (through the
/// buffer or ``Writer`` it lends, neither of which can outlive it), before the object can be
/// shared; afterwards they are only read (every accessor hands out a read-only view), and the slot
/// is wiped and released only in `deinit`, when no other reference exists. Concurrent reads of
/// memory nobody writes are safe.
package final class SecretBytes: @unchecked Sendable {
    private let slot: SecretSlot
    /// The number of bytes.
    package let count: Int

    /// `count` bytes, zero until `initialize` writes them through the buffer it is lent (which must
    /// not escape it). If `initialize` throws, the bytes are wiped and released.
    package init<E: Error>(count: Int, initialize: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        slot = SecretPages.allocate(count)
        self.count = count
        try initialize(UnsafeMutableRawBufferPointer(start: slot.pointer, count: count))
    }

    /// `count` bytes, zero until `write` fills them through a bounds-checked ``Writer``.
    package convenience init<E: Error>(count: Int, writing write: (inout Writer) throws(E) -> Void) throws(E) {
        try self.init(count: count) { (buffer: UnsafeMutableRawBufferPointer) throws(E) in
            var writer = Writer(buffer: buffer)
            try write(&writer)
        }
    }

    /// A copy of `bytes`. Wiping the original is the caller's business.
    package convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { (buffer: inout Writer) in buffer.write(bytes, at: 0) }
    }

    /// A copy of `bytes` (a pointer the caller lends), e.g. a key on its way in from C or a test.
    package convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { (buffer: UnsafeMutableRawBufferPointer) in buffer.copyMemory(from: bytes) }
    }

    deinit { SecretPages.release(slot) }

    /// Whether the bytes' page is locked in RAM (`mlock` succeeded). Whatever the answer, it is
    /// left out of core dumps and wiped on release.
    package var isLocked: Bool { slot.isLocked }

    /// The address ranges of the pages that hold secrets now (for tests that scan the rest of the
    /// process's memory for copies).
    package static var liveAllocations: [Range<UInt>] { SecretPages.liveRanges }

    /// A new secret holding `self[range]`, copied memory to memory.
    package func slice(_ range: Range<Int>) -> SecretBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "SecretBytes slice out of range")
        return SecretBytes(count: range.count) { (buffer: UnsafeMutableRawBufferPointer) in
            guard !range.isEmpty else { return }
            buffer.baseAddress!.copyMemory(from: slot.pointer + range.lowerBound, byteCount: range.count)
        }
    }

    /// The byte at `index` (out of range is a programming error).
    package subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < count, "SecretBytes index out of range")
        return slot.pointer.load(fromByteOffset: index, as: UInt8.self)
    }

    /// Calls `body` with a read-only, bounds-checked view of the bytes.
    package func withSpan<R, E: Error>(_ body: (Span<UInt8>) throws(E) -> R) throws(E) -> R {
        let bytes = UnsafeBufferPointer(start: slot.pointer.assumingMemoryBound(to: UInt8.self), count: count)
        return try body(Span(_unsafeElements: bytes))
    }

    /// Calls `body` with the bytes, read-only, for handing them to C. The pointer must not escape.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: slot.pointer, count: count))
    }

    /// Whether both hold the same bytes, in time that depends only on the lengths.
    package func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<count { difference |= self[index] ^ other[index] }
        return difference == 0
    }

    /// Bounds-checked writes into a ``SecretBytes`` while its initialiser runs; it cannot be copied
    /// out of the closure it is lent to.
    package struct Writer: ~Copyable {
        private let buffer: UnsafeMutableRawBufferPointer

        fileprivate init(buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

        /// The number of bytes.
        package var count: Int { buffer.count }

        /// Copies `bytes` to `offset...`.
        package mutating func write(_ bytes: some Collection<UInt8>, at offset: Int) {
            precondition(offset >= 0 && offset + bytes.count <= buffer.count, "SecretBytes write out of range")
            var index = offset
            for byte in bytes {
                buffer[index] = byte
                index += 1
            }
        }

        /// Copies all of `source` to `offset...`, memory to memory.
        package mutating func write(_ source: SecretBytes, at offset: Int) {
            precondition(offset >= 0 && offset + source.count <= buffer.count, "SecretBytes write out of range")
            source.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress else { return }
                (buffer.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count)
            }
        }
    }
}
