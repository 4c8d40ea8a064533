// libFuzzer harness: the file keyring's item deserialiser, reached through the whole read path.
//
// Each input is the plaintext of one record, `(a{ss}sttay)` when well formed. It is sealed with a
// fixed key (derived once, 1 PBKDF2 iteration) into a keyring file, with the hashed attributes the
// item's own attributes give when the plaintext deserialises (so that records pass both the MAC
// and the hashed-attribute check), and the file is read through FileKeyring.items(). Checks beyond
// "no crash": a plaintext the deserialiser accepts is read back as exactly that item; one it
// refuses never becomes an item; an item read serialises and deserialises to itself.
//
// FUZZ_WRITE_SEEDS=DIR writes this harness's seeds (item plaintexts of this package's writer)
// to DIR and exits (fuzz/make-seeds).
@testable import FileKeyring
#if canImport(Glibc)
import Glibc
#endif

let master = FileKeyringSecret(utf8: "pingstorage fuzz master secret")
let salt = (0..<32).map { UInt8($0 &* 7 &+ 1) }
let key = try! KeyringKey(master: master, salt: salt, iterations: 1)
let scratch = ScratchFile(name: "keyring-item")
/// One instance for every input: it derives the key once and keeps it (the salt never changes).
let keyring = try! FileKeyring(path: scratch.path, masterSecret: master)

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    if let directory = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) {
        for (name, bytes) in seeds() {
            ScratchFile(path: "\(directory)/\(name).item").write(bytes)
            print("wrote \(directory)/\(name).item (\(bytes.count) bytes)")
        }
        exit(0)
    }
    atexit { unlink(scratch.path) }
    // Lazy one-time initialisations (globals, libgcrypt, secret pages) happen here, not in the
    // first input, whose unfreed allocations libFuzzer would report as a leak.
    for (_, bytes) in seeds() { _ = bytes.withUnsafeBufferPointer { fuzzKeyringItem($0.baseAddress, $0.count) } }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeyringItem(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let plaintext = FileKeyringSecret(copying: data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    let expected = try? ItemPlaintext.deserialize(plaintext.buffer)
    var hashed: [EncryptedRecord.HashedAttribute] = []
    if let expected {
        for name in expected.attributes.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            hashed.append(.init(name: name, mac: try! key.hashAttribute(expected.attributes[name]!)))
        }
    }
    let record = EncryptedRecord(hashedAttributes: hashed, blob: try! key.seal(plaintext.buffer))
    scratch.write(KeyringFile(salt: salt, iterations: 1, modified: 0, usageCount: 0, records: [record]).serialized())
    do {
        let items = try keyring.items()
        guard let expected else {
            guard items.isEmpty else { fatalError("a plaintext the deserialiser refuses became an item") }
            return 0
        }
        guard items == [expected] else { fatalError("the item read is not the item deserialised: \(items)") }
        let again = try ItemPlaintext.deserialize(ItemPlaintext.serialize(items[0]))
        guard again == items[0] else { fatalError("an item read does not serialise and deserialise to itself") }
    } catch let error as FileKeyringError {
        // A plaintext the deserialiser refuses is a damaged record (its MAC passed): items(), which
        // asks for every item, then reports it as damagedItem rather than skipping it silently.
        guard expected == nil, error.code == .damagedItem else { fatalError("items() threw \(error)") }
    } catch {
        fatalError("an item read does not deserialise after serialising: \(error)")
    }
    return 0
}

/// Item plaintexts written by this package's writer.
func seeds() -> [(String, [UInt8])] {
    let items = [
        ("alice", FileKeyringItem(label: "Password for alice", attributes: ["service": "example.com", "account": "alice"],
                                  secret: FileKeyringSecret(utf8: "hunter2"), created: 1_700_000_000, modified: 1_700_000_100)),
        ("pingstorage-key", FileKeyringItem(
            label: "PingStorage key", attributes: ["xdg:schema": "com.pingidentity.storage", "xdg:content-type": "application/octet-stream",
                                                   "id": "0123456789abcdef"],
            secret: FileKeyringSecret(copying: (0..<32).map { UInt8($0) }), created: 1, modified: 2)),
        ("empty", FileKeyringItem(label: "", attributes: [:], secret: FileKeyringSecret(copying: []), created: 0, modified: 0)),
        ("long-secret", FileKeyringItem(label: "x", attributes: ["a": ""], secret: FileKeyringSecret(copying: (0..<300).map { UInt8($0 % 251) }),
                                        created: .max, modified: .max)),
    ]
    return items.map { name, item in (name, FileKeyringSecret(buffer: ItemPlaintext.serialize(item)).withUnsafeBytes { Array($0) }) }
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

