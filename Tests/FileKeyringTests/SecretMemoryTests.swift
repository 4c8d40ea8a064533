import Foundation
import Testing

@testable import FileKeyring
import Gcrypt

/// Where the file keyring's secrets sit in memory: the pages holding the master secret, the key
/// derived from it and a decrypted item's secret are excluded from core dumps (`dd` in the
/// mapping's VmFlags in /proc/self/smaps) and locked (`lo`) when the system allowed it.
@Suite struct SecretMemoryTests {
    @Test("the master secret, the derived key and decrypted secrets are in pages left out of core dumps")
    func secretsAreExcludedFromCoreDumps() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let keyring = try makeKeyring(directory.path("default.keyring"))
        try keyring.store(label: "small", attributes: ["service": "s"], secret: FileKeyringSecret(utf8: "s3cret"))
        // Larger than half a page: a mapping of its own rather than a slot on a shared page.
        let large = [UInt8](repeating: 0x5A, count: 5000)
        try keyring.store(label: "large", attributes: ["service": "l"], secret: FileKeyringSecret(copying: large))
        let items = try keyring.items()
        let key = try #require(keyring.cachedKey.withLock { $0 })
        let secrets: [(String, SecretBytes)] = [
            ("the master secret", keyring.masterSecret.buffer), ("the derived key", key.bytes),
            ("a decrypted secret", try #require(items.first { $0.label == "small" }).secret.buffer),
            ("a large decrypted secret", try #require(items.first { $0.label == "large" }).secret.buffer),
        ]
        for (name, secret) in secrets {
            let flags = try vmFlags(at: secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) })
            #expect(flags.contains("dd"), "\(name): VmFlags \(flags.sorted())")
            // Locked unless RLIMIT_MEMLOCK refused, and then the container says so. Not under
            // AddressSanitizer: its mlock interceptor locks nothing and returns success.
            if !underAddressSanitizer {
                #expect(flags.contains("lo") == secret.isLocked, "\(name): VmFlags \(flags.sorted())")
            }
        }
    }
}

/// Whether this process runs under AddressSanitizer (its runtime is loaded): sanitizer_common
/// intercepts mlock and munlock, does nothing and returns 0, so a page the container believes
/// locked shows no `lo`.
let underAddressSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil

/// The VmFlags (`rd`, `wr`, `dd`, `lo`, …) of the mapping in /proc/self/smaps that holds `address`.
func vmFlags(at address: UInt) throws -> Set<String> {
    // Read to the end: String(contentsOfFile:) stops after the first page of a /proc file.
    guard let file = FileHandle(forReadingAtPath: "/proc/self/smaps") else { throw TestFailure("cannot open /proc/self/smaps") }
    defer { try? file.close() }
    let smaps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
    var inside = false
    for line in smaps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
            let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
            inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
        } else if inside, fields.first == "VmFlags:" {
            return Set(fields.dropFirst().map(String.init))
        }
    }
    throw TestFailure("no mapping in /proc/self/smaps holds 0x\(String(address, radix: 16))")
}
