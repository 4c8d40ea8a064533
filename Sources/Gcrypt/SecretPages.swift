#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Locking

// The secret-memory policy, in the one place that touches the pages: every byte of a secret this
// package holds sits in anonymous pages of their own (mmap), which are
// - locked in RAM (mlock), so they never reach swap. Best effort: when RLIMIT_MEMLOCK (often
//   8 MiB, 64 KiB in some containers) refuses, the pages stay unlocked and everything else holds;
//   `SecretBytes.isLocked` tells which;
// - left out of core dumps (madvise MADV_DONTDUMP), which needs no limit;
// - wiped (explicit_bzero) when a secret is released, before its slot is reused or its page unmapped.
// Small secrets share pages (one slot each, of a power-of-two size), so a keyring of many items
// costs a few locked pages rather than one per item. The raw addresses do not leave this file and
// SecretBytes.swift.

/// One slot of secret memory: where it is, how large, and whether its page is locked.
struct SecretSlot: Sendable {
    /// The first byte (page-aligned for a slot that has its own mapping).
    let address: UInt
    /// The slot's size, at least what was asked for.
    let capacity: Int
    /// Whether `mlock` succeeded for the slot's page(s).
    let isLocked: Bool

    var pointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: address)! }
}

/// The process-wide pool of secret pages. Thread-safe: its state is behind one lock.
enum SecretPages {
    /// A shared page of equal slots (at most 64: one bit each in `used`).
    private struct Page: Sendable {
        let address: UInt
        let slotSize: Int
        let slotCount: Int
        let isLocked: Bool
        var used: UInt64 = 0
        var isFull: Bool { used == (slotCount == 64 ? UInt64.max : (1 << UInt64(slotCount)) - 1) }
    }

    private struct State: Sendable {
        /// Shared pages, by address.
        var pages: [UInt: Page] = [:]
        /// Mappings of their own (secrets larger than half a page): address → length.
        var large: [UInt: Int] = [:]
    }

    private static let state = Locked(State())

    static let pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
    /// The smallest slot: a 16-byte key, an HMAC key, a short password.
    private static let smallestSlot = 32

    /// A zeroed slot of at least `count` bytes (one byte for an empty secret).
    static func allocate(_ count: Int) -> SecretSlot {
        precondition(count >= 0, "a secret cannot have a negative size")
        let wanted = max(count, 1)
        guard wanted <= pageSize / 2 else {
            let length = (wanted + pageSize - 1) / pageSize * pageSize
            let (address, isLocked) = map(length)
            state.withLock { $0.large[address] = length }
            return SecretSlot(address: address, capacity: length, isLocked: isLocked)
        }
        var slotSize = smallestSlot
        while slotSize < wanted { slotSize *= 2 }
        return state.withLock { state in
            if let page = state.pages.values.first(where: { $0.slotSize == slotSize && !$0.isFull }) {
                return take(from: page, in: &state)
            }
            let (address, isLocked) = map(pageSize)
            let page = Page(address: address, slotSize: slotSize, slotCount: min(pageSize / slotSize, 64), isLocked: isLocked)
            return take(from: page, in: &state)
        }
    }

    /// Wipes `slot` and gives it back; a shared page with no slot in use is unmapped.
    static func release(_ slot: SecretSlot) {
        explicit_bzero(slot.pointer, slot.capacity)
        let unmapped: (UInt, Int)? = state.withLock { state in
            if let length = state.large.removeValue(forKey: slot.address) { return (slot.address, length) }
            let start = slot.address / UInt(pageSize) * UInt(pageSize)
            guard var page = state.pages[start] else { preconditionFailure("a secret slot released twice") }
            page.used &= ~(1 << UInt64((slot.address - start) / UInt(page.slotSize)))
            guard page.used == 0 else {
                state.pages[start] = page
                return nil
            }
            state.pages[start] = nil
            return (start, pageSize)
        }
        // Unmapping also unlocks; the bytes were wiped above.
        if let (address, length) = unmapped { _ = munmap(UnsafeMutableRawPointer(bitPattern: address), length) }
    }

    /// The address ranges of every page that holds secrets now, for tests that look for copies of a
    /// secret everywhere else in the process's memory.
    static var liveRanges: [Range<UInt>] {
        state.withLock { state in
            state.pages.keys.map { $0..<$0 + UInt(pageSize) } + state.large.map { $0.key..<$0.key + UInt($0.value) }
        }
    }

    private static func take(from page: Page, in state: inout State) -> SecretSlot {
        var page = page
        let index = (~page.used).trailingZeroBitCount
        page.used |= 1 << UInt64(index)
        state.pages[page.address] = page
        return SecretSlot(address: page.address + UInt(index * page.slotSize), capacity: page.slotSize, isLocked: page.isLocked)
    }

    /// `length` bytes (whole pages) of fresh anonymous memory, zero-filled by the kernel, marked
    /// MADV_DONTDUMP and locked if the system allows. Running out of address space is fatal, as
    /// any allocation failure in Swift.
    ///
    /// The corresponding C functions are `mmap`, `madvise` and `mlock`.
    private static func map(_ length: Int) -> (address: UInt, isLocked: Bool) {
        let memory = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let memory, memory != MAP_FAILED else { fatalError("out of memory for secrets (mmap of \(length) bytes failed)") }
        #if os(Linux)
        _ = madvise(memory, length, MADV_DONTDUMP)
        #endif
        let isLocked = mlock(memory, length) == 0
        return (UInt(bitPattern: memory), isLocked)
    }
}
