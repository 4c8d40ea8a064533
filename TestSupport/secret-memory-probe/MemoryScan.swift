import Foundation
import PingStorageCrypto

/// Reads the process's own writable memory (through /proc/self/mem, so unmapped holes are never
/// touched) and reports where a byte pattern occurs outside the page-locked SecureBytes
/// allocations and outside the scan's own buffer.
enum MemoryScan {
    static func copies(of pattern: UnsafeRawBufferPointer) -> [String] {
        let chunk = 1 << 20
        // The scan's buffer is a mapping of its own, left out of the scan.
        guard let buffer = mmap(nil, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              buffer != MAP_FAILED else { return ["cannot map a scan buffer"] }
        defer { munmap(buffer, chunk) }
        let own = UInt(bitPattern: buffer)..<UInt(bitPattern: buffer) + UInt(chunk)
        let excluded = SecureBytes.liveAllocations + [own]
        let memory = open("/proc/self/mem", O_RDONLY | O_CLOEXEC)
        guard memory >= 0 else { return ["cannot open /proc/self/mem"] }
        defer { close(memory) }
        var found: [String] = []
        for region in writableRegions() {
            var offset = region.range.lowerBound
            while offset < region.range.upperBound {
                // Overlap by the pattern's length, so a copy across two chunks is seen.
                let length = Int(min(UInt(chunk), region.range.upperBound - offset))
                let read = pread(memory, buffer, length, off_t(Int64(bitPattern: UInt64(offset))))
                guard read > 0 else { break }
                let bytes = UnsafeRawBufferPointer(start: buffer, count: read)
                var index = 0
                while index + pattern.count <= bytes.count {
                    if bytes[index] == pattern[0], memcmp(bytes.baseAddress! + index, pattern.baseAddress!, pattern.count) == 0 {
                        let address = offset + UInt(index)
                        if !excluded.contains(where: { $0.contains(address) }) {
                            found.append(String(format: "0x%lx in %@", address, region.name))
                        }
                    }
                    index += 1
                }
                guard read == length, offset + UInt(read) < region.range.upperBound else { break }
                offset += UInt(read - pattern.count + 1)
            }
        }
        return found
    }

    /// The readable and writable mappings, from /proc/self/maps.
    private static func writableRegions() -> [(range: Range<UInt>, name: String)] {
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return [] }
        return maps.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[1].hasPrefix("rw") else { return nil }
            let name = fields.count > 5 ? String(fields[5]) : "[anonymous]"
            guard name != "[vvar]", name != "[vsyscall]" else { return nil }
            let bounds = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            guard bounds.count == 2 else { return nil }
            return (bounds[0]..<bounds[1], name)
        }
    }
}
