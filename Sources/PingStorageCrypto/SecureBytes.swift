#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Locking

/// Overwrites `buffer` with zeros in a way the optimiser cannot remove (`explicit_bzero`), even
/// when the memory is about to be freed. Package-level so tests can check it.
package func zeroize(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    explicit_bzero(base, buffer.count)
}

/// Zeroes the bytes of `data` in place. `data` must be uniquely referenced (freshly allocated by
/// the caller), or copy-on-write would zero a copy instead.
func zeroize(_ data: inout Data) {
    data.withUnsafeMutableBytes { zeroize($0) }
}

/// A fixed-size buffer for secret bytes, owned by this object and wiped when it is released.
///
/// The bytes live in their own page-aligned allocation, which is `mlock`ed (kept out of swap) and
/// marked `MADV_DONTDUMP` (kept out of core dumps) when the system allows it; both are best effort
/// and their failure is not an error. `deinit` zeroes the allocation with `explicit_bzero` before
/// unlocking and freeing it. Memory is deliberately not taken from libgcrypt's secure heap: its
/// allocator is process-global, and a library the app loads (libsecret) may replace it later in
/// the process (see `CryptoLibrary.swift`).
///
/// `@unchecked Sendable`: the buffer is written only in `init`, before the object is shared, and is
/// read-only afterwards (``withUnsafeBytes(_:)`` hands out an immutable view); it is freed only in
/// `deinit`, when no other reference exists. Concurrent reads of immutable memory are safe.
package final class SecureBytes: @unchecked Sendable {
    /// The whole allocation (whole pages).
    private let allocation: UnsafeMutableRawBufferPointer
    /// Whether `mlock` succeeded, so `deinit` knows to `munlock`.
    private let isLocked: Bool
    /// The number of meaningful bytes at the start of `allocation`.
    let count: Int

    /// Where the live allocations are, so that a test can look for copies of secrets everywhere
    /// else in the process's memory.
    private static let live = Locked<[ObjectIdentifier: Range<UInt>]>([:])

    /// The address ranges of every live SecureBytes allocation (for tests).
    package static var liveAllocations: [Range<UInt>] { live.withLock { Array($0.values) } }

    /// Allocates `count` bytes and lets `initialize` fill them. Whatever `initialize` leaves is kept;
    /// bytes it does not write are zero.
    package init(count: Int, initialize: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(count >= 0)
        let pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        let size = max(pageSize, (count + pageSize - 1) / pageSize * pageSize)
        allocation = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: pageSize)
        allocation.initializeMemory(as: UInt8.self, repeating: 0)
        isLocked = mlock(allocation.baseAddress!, size) == 0
        #if os(Linux)
        _ = madvise(allocation.baseAddress!, size, MADV_DONTDUMP)
        #endif
        self.count = count
        let start = UInt(bitPattern: allocation.baseAddress!)
        Self.live.withLock { $0[ObjectIdentifier(self)] = start..<start + UInt(size) }
        initialize(UnsafeMutableRawBufferPointer(rebasing: allocation[0..<count]))
    }

    deinit {
        _ = Self.live.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
        zeroize(allocation)
        if isLocked { _ = munlock(allocation.baseAddress!, allocation.count) }
        allocation.deallocate()
    }

    /// Calls `body` with a read-only view of the bytes. Do not let the pointer escape `body`.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: allocation[0..<count]))
    }
}
