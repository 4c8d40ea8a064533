// libFuzzer harness: a whole file keyring, as libsecret, oo7 or a damaged disk may leave it.
//
// Each input is a keyring file. It is decoded (KeyringFile(parsing:): header, version, the
// GVariant body with its records); a file that decodes is written out again (serialized(), the
// writer's normal form) and must decode to the same values. When the file's key is cheap (at
// most 16 PBKDF2 iterations: the seeds have 1), it is also read through the public API,
// FileKeyring.items(), with a fixed master secret: every record's MAC is checked, those that pass
// are decrypted and deserialised and their hashed attributes checked. Files asking for more
// iterations stop after decoding: PBKDF2 would make each input take milliseconds. FuzzKeyringItem
// reaches the item deserialiser with records that always pass the MAC.
//
// FUZZ_WRITE_SEEDS=DIR writes this harness's seeds (keyrings made by this package's writer) to
// DIR and exits (fuzz/make-seeds).
@testable import FileKeyring
#if canImport(Glibc)
import Glibc
#endif

/// The master secret every seed is written with.
let master = FileKeyringSecret(utf8: "pingstorage fuzz master secret")
/// Keys of files asking for at most this many iterations are derived for each input.
let cheapIterations: UInt32 = 16
let scratch = ScratchFile(name: "keyring-file")

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    if let directory = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) {
        for (name, bytes) in seeds() { writeSeed(bytes, to: "\(directory)/\(name)") }
        exit(0)
    }
    atexit { unlink(scratch.path) }
    // Lazy one-time initialisations (globals, libgcrypt, secret pages) happen here, not in the
    // first input, whose unfreed allocations libFuzzer would report as a leak.
    for (_, bytes) in seeds() { _ = bytes.withUnsafeBufferPointer { fuzzKeyringFile($0.baseAddress, $0.count) } }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeyringFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let file: KeyringFile
    do {
        file = try KeyringFile(parsing: bytes, path: "fuzz.keyring")
    } catch {
        guard error.code == .corruptFile || error.code == .unsupportedVersion || error.code == .tooLarge else {
            fatalError("parsing threw \(error)")
        }
        return 0
    }
    roundTrip(file)
    guard file.iterations <= cheapIterations else { return 0 }
    scratch.write(bytes)
    do {
        // A new instance each time: no key cached from another input.
        let items = try FileKeyring(path: scratch.path, masterSecret: master).items()
        guard items.count <= file.records.count else { fatalError("\(items.count) items from \(file.records.count) records") }
    } catch {
        // A record that fails its MAC or decrypts to no valid item is damaged: items() (every item)
        // then throws damagedItem; every record failing its MAC is decryptionFailed.
        let expected: [FileKeyringError.Code] = [.corruptFile, .decryptionFailed, .damagedItem, .tooLarge]
        guard expected.contains(error.code) else { fatalError("items() threw \(error)") }
    }
    return 0
}

/// The writer's normal form of `file` decodes to the same values.
func roundTrip(_ file: KeyringFile) {
    let again: KeyringFile
    do {
        again = try KeyringFile(parsing: file.serialized(), path: "fuzz.keyring")
    } catch {
        fatalError("a decoded file, written out again, does not decode: \(error)")
    }
    guard again.salt == file.salt, again.iterations == file.iterations, again.modified == file.modified,
          again.usageCount == file.usageCount, again.records == file.records else {
        fatalError("a decoded file, written out again, decodes to other values")
    }
}

/// Keyrings written by this package's writer, with 1 iteration (so that they are decrypted).
func seeds() -> [(String, [UInt8])] {
    let salt = (0..<32).map { UInt8($0 &* 7 &+ 1) }
    let key = try! KeyringKey(master: master, salt: salt, iterations: 1)
    let items = [
        FileKeyringItem(label: "Password for alice", attributes: ["service": "example.com", "account": "alice"],
                        secret: FileKeyringSecret(utf8: "hunter2"), created: 1_700_000_000, modified: 1_700_000_100),
        FileKeyringItem(label: "PingStorage key", attributes: ["xdg:schema": "com.pingidentity.storage", "xdg:content-type": "application/octet-stream",
                                                                 "id": "0123456789abcdef"],
                        secret: FileKeyringSecret(copying: (0..<32).map { UInt8($0) }), created: 1, modified: 2),
        FileKeyringItem(label: "", attributes: [:], secret: FileKeyringSecret(copying: []), created: 0, modified: 0),
    ]
    func file(_ items: [FileKeyringItem], iterations: UInt32 = 1) -> [UInt8] {
        KeyringFile(salt: salt, iterations: iterations, modified: 1_700_000_200, usageCount: 3,
                    records: items.map { try! FileKeyring.encrypt($0, key: key) }).serialized()
    }
    return [
        ("empty-1-iteration.keyring", file([])),
        ("one-item-1-iteration.keyring", file([items[0]])),
        ("three-items-1-iteration.keyring", file(items)),
        // Decoded only (libsecret's iteration count: too slow to derive for each input).
        ("three-items-100000-iterations.keyring", file(items, iterations: 100_000)),
    ]
}

func writeSeed(_ bytes: [UInt8], to path: String) {
    let scratch = ScratchFile(path: path)
    scratch.write(bytes)
    print("wrote \(path) (\(bytes.count) bytes)")
}

/// A file rewritten for each input, removed at exit: in $FUZZ_SCRATCH_DIR, else /dev/shm (on
/// ext4, truncating and rewriting a file flushes it at close: ten times slower), else /tmp.
final class ScratchFile: Sendable {
    let path: String

    init(path: String) { self.path = path }

    convenience init(name: String) {
        let directory = getenv("FUZZ_SCRATCH_DIR").map { String(cString: $0) } ?? (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp")
        self.init(path: "\(directory)/pingstorage-fuzz-\(getpid())-\(name)")
    }

    func write(_ bytes: [UInt8]) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fatalError("cannot write \(path): errno \(errno)") }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            guard count > 0 else { fatalError("cannot write \(path): errno \(errno)") }
            written += count
        }
    }
}

