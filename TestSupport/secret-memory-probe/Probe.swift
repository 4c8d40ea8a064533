// secret-memory-probe: stores a secret, lets go of every copy it made itself, then reads its own
// writable memory looking for the secret, for SecretCopiesIntegrationTests.
//
//   secret-memory-probe value ACCOUNT   a 2 KiB value with a random marker in it: created, replaced
//                                        by a second value (the first is read back to compare),
//                                        read, deleted; then both markers are looked for
//   secret-memory-probe key             SecuredKeyEncryptor's key created; then its 32 bytes are
//                                        looked for
//   secret-memory-probe dumpable        SecretMemory.makeProcessNonDumpable(), with the kernel's
//                                        PR_GET_DUMPABLE before and after
//
// The markers and the key live only in page-locked SecureBytes allocations, which the scan leaves
// out, as it does its own buffer. Prints `copies: N` and one line per copy found (address and
// region), and exits 0 when there are none.
import Foundation
import PingStorage
import PingStorageCrypto
import SecretService

/// A random printable marker, kept in locked memory.
func newMarker() -> SecureBytes {
    SecureBytes(count: 48) { buffer in
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        for index in buffer.indices { buffer[index] = alphabet.randomElement()! }
    }
}

/// A 2 KiB text value with `marker` in the middle, in a buffer of its own the caller wipes.
func value(with marker: SecureBytes) -> Data {
    var data = Data(repeating: UInt8(ascii: "x"), count: 2048)
    marker.withUnsafeBytes { marker in
        data.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: 1000).copyMemory(from: marker.baseAddress!, byteCount: marker.count) }
    }
    return data
}

@main
struct Probe {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "dumpable" { reportDumpability() }
        var patterns: [SecureBytes] = []
        var keepAlive: SymmetricKey?
        do {
            switch arguments.first {
            case "value":
                // Each step is followed by a scan: a copy freed but not wiped may be overwritten by
                // a later step's allocations, which would hide it.
                guard let account = arguments.dropFirst().first else { usage() }
                let item = RawKeychainItem(account: account, configuration: KeychainConfiguration())
                let first = newMarker(), second = newMarker()
                var one = value(with: first)
                try await item.write(one)  // a new item: searched, created
                one.resetBytes(in: 0..<one.count)
                await scan(after: "creating the item", for: [first])
                var two = value(with: second)
                try await item.write(two)  // reads the first value back to compare, then replaces it
                two.resetBytes(in: 0..<two.count)
                await scan(after: "replacing the value", for: [first, second])
                guard var read = try await item.read() else { fail("the value was not read back") }
                read.resetBytes(in: 0..<read.count)
                await scan(after: "reading it", for: [first, second])
                try await item.delete()
                patterns = [first, second]
            case "key":
                guard let encryptor = SecuredKeyEncryptor() else { fail("no encryption") }
                var sealed = try await encryptor.encrypt(data: Data("x".utf8))
                sealed.resetBytes(in: 0..<sealed.count)
                keepAlive = try await encryptor.currentKey()
            default:
                usage()
            }
        } catch {
            fail("\(error)")
        }
        // Let the library's other threads finish with what they were given.
        try? await Task.sleep(for: .milliseconds(300))
        var found: [String] = []
        for pattern in patterns {
            pattern.withUnsafeBytes { found += MemoryScan.copies(of: $0) }
        }
        keepAlive?.withUnsafeBytes { found += MemoryScan.copies(of: $0) }
        print("copies: \(found.count)")
        for line in found.prefix(20) { print(line) }
        exit(found.isEmpty ? 0 : 1)
    }

    /// Scans for each pattern now; exits 1 listing the copies when there are any.
    static func scan(after step: String, for patterns: [SecureBytes]) async {
        try? await Task.sleep(for: .milliseconds(200))
        var found: [String] = []
        for pattern in patterns { pattern.withUnsafeBytes { found += MemoryScan.copies(of: $0) } }
        guard !found.isEmpty else { return }
        print("copies: \(found.count) after \(step)")
        for line in found.prefix(20) { print(line) }
        exit(1)
    }

    /// Prints the kernel's answer to prctl(PR_GET_DUMPABLE) before and after
    /// SecretMemory.makeProcessNonDumpable() (/proc/self/status has no such line, and as root the
    /// owner of /proc/self does not change), then exits 0.
    static func reportDumpability() -> Never {
        func dumpable() -> String { SecretMemory.isProcessDumpable.map(String.init) ?? "unknown" }
        print("dumpable before: \(dumpable())")
        let agreed = SecretMemory.makeProcessNonDumpable()
        print("dumpable after: \(dumpable()) (agreed: \(agreed))")
        exit(0)
    }

    static func usage() -> Never { fail("usage: secret-memory-probe value ACCOUNT | key | dumpable") }

    static func fail(_ message: String) -> Never {
        print("FAIL \(message)")
        exit(2)
    }
}
