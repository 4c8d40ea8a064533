internal import Gcrypt

// The file layout (FORMAT.md): header, version, the `(uayutua(a{say}ay))` body with encrypted
// records, and the `(a{ss}sttay)` plaintext of one item. Encoding and decoding only; no I/O and
// no cryptography here.

/// One item as stored: hashed attributes for searching, and the encrypted item.
struct EncryptedRecord: Sendable, Equatable {
    /// Attribute names with HMAC-SHA256 of their values, in file order.
    var hashedAttributes: [HashedAttribute]
    /// `ciphertext ‖ IV ‖ MAC`.
    var blob: [UInt8]

    struct HashedAttribute: Sendable, Equatable {
        let name: String
        let mac: [UInt8]
    }
}

/// A keyring file, decoded, with its items still encrypted.
struct KeyringFile {
    static let header: [UInt8] = Array("GnomeKeyring\n\r\0\n".utf8)
    static let majorVersion: UInt8 = 1
    static let minorVersion: UInt8 = 0
    /// libsecret's `SALT_SIZE` and `ITERATION_COUNT` for new files (oo7's defaults too).
    static let defaultSaltSize = 32
    static let defaultIterations: UInt32 = 100_000
    /// Files asking for more PBKDF2 iterations than this are refused: a hostile file could
    /// otherwise make every open take hours. libsecret and oo7 write 100000.
    static let maximumIterations: UInt32 = 10_000_000

    // Caps on what a file may hold. The whole file is parsed before any MAC is checked, so these
    // bound what a damaged or hostile file (or a fuzzer's) costs before anything is known about
    // it: each is checked from the GVariant framing, before the records, attributes or strings it
    // counts are allocated. They sit far above what libsecret or oo7 write for one app (a sandbox's
    // keyring holds one app's items, usually a few dozen).
    /// Records per file. Reading costs about 0.4 ms per record in a debug build (measured: 10,000
    /// records of 2 MB in 4.3 s, 100,000 in 50 s), so a hostile file is refused past 10,000.
    static let maximumRecords = 10_000
    /// Attributes per item, hashed or encrypted. libsecret's schemas have at most 32; PingStorage
    /// writes fewer than 10. Also bounds the per-item duplicate check.
    static let maximumAttributes = 1_000
    /// Bytes per label, attribute name or attribute value (not secrets: a secret is bounded by
    /// the file size alone, `POSIX.maximumFileSize`).
    static let maximumStringLength = 64 << 10

    var salt: [UInt8]
    var iterations: UInt32
    var modified: UInt64
    var usageCount: UInt32
    var records: [EncryptedRecord]

    /// The body type `(uayutua(a{say}ay))`, member by member.
    private static let bodyMembers: [GVariantLayout] = [.uint32, .variable, .uint32, .uint64, .uint32, .variable]
    /// `(a{say}ay)` and `{say}`.
    private static let recordMembers: [GVariantLayout] = [.variable, .variable]

    /// Whether the file's key is cheaper to guess than libsecret's and oo7's defaults make it: a
    /// salt under 32 bytes or fewer than 100,000 iterations (oo7's floor).
    var isWeak: Bool { salt.count < Self.defaultSaltSize || iterations < Self.defaultIterations }

    /// A new, empty keyring with a fresh salt and libsecret's defaults.
    static func new() -> KeyringFile {
        KeyringFile(
            salt: Random.bytes(defaultSaltSize), iterations: defaultIterations,
            modified: FileKeyringItem.now(), usageCount: 0, records: [])
    }

    init(salt: [UInt8], iterations: UInt32, modified: UInt64, usageCount: UInt32, records: [EncryptedRecord]) {
        self.salt = salt
        self.iterations = iterations
        self.modified = modified
        self.usageCount = usageCount
        self.records = records
    }

    /// Decodes a whole file. Throws corrupt or unsupported-version errors naming `path`.
    init(parsing bytes: [UInt8], path: String) throws(FileKeyringError) {
        let prefix = Self.header.count
        guard bytes.count >= prefix, Array(bytes[0..<prefix]) == Self.header else {
            throw .corrupt("it does not start with the keyring header \"GnomeKeyring\"", path: path)
        }
        guard bytes.count >= prefix + 2 else { throw .corrupt("it ends before the version", path: path) }
        let (major, minor) = (bytes[prefix], bytes[prefix + 1])
        guard major == Self.majorVersion, minor == Self.minorVersion else {
            let what = major == 0 ? "the old gnome-keyring format, version \(major).\(minor)" : "format version \(major).\(minor)"
            throw FileKeyringError(
                .unsupportedVersion,
                "the keyring file is in \(what); only version 1.0 (libsecret's and oo7's file keyring) is supported. "
                    + "It was left as it is: open it once with oo7, which migrates old files, or move it away",
                path: path)
        }
        do throws(MalformedGVariant) {
            let data = bytes.span
            self = try Self.parseBody(data, (prefix + 2)..<bytes.count)
        } catch where error.exceedsCap {
            throw .tooLarge("it holds \(error.reason)", path: path)
        } catch {
            throw .corrupt("its contents are not a valid keyring: \(error.reason)", path: path)
        }
        guard iterations >= 1, iterations <= Self.maximumIterations else {
            throw .corrupt("it asks for \(iterations) key derivation iterations", path: path)
        }
    }

    private static func parseBody(_ data: Span<UInt8>, _ range: Range<Int>) throws(MalformedGVariant) -> KeyringFile {
        let members = try GVariantReader.tuple(data, range, bodyMembers)
        let saltSize = try GVariantReader.uint32(data, members[0])
        let salt = GVariantReader.bytes(data, members[1])
        guard salt.count == Int(saltSize) else {
            throw MalformedGVariant(reason: "a salt of \(salt.count) bytes where the header says \(saltSize)")
        }
        let recordRanges = try capped("more than \(maximumRecords) records") { () throws(MalformedGVariant) in
            try GVariantReader.array(data, members[5], .variable, limit: maximumRecords)
        }
        var records: [EncryptedRecord] = []
        records.reserveCapacity(recordRanges.count)
        for (index, recordRange) in recordRanges.enumerated() {
            let parts = try GVariantReader.tuple(data, recordRange, recordMembers)
            let entries = try capped("a record (#\(index)) with more than \(maximumAttributes) hashed attributes") { () throws(MalformedGVariant) in
                try GVariantReader.array(data, parts[0], .variable, limit: maximumAttributes)
            }
            var hashed: [EncryptedRecord.HashedAttribute] = []
            var names = Set<String>()
            for entry in entries {
                let pair = try GVariantReader.tuple(data, entry, recordMembers)
                let name = try capped("a record (#\(index)) with a hashed attribute name of more than \(maximumStringLength) bytes") {
                    () throws(MalformedGVariant) in try GVariantReader.string(data, pair[0], maximumLength: maximumStringLength)
                }
                guard names.insert(name).inserted else {
                    throw MalformedGVariant(reason: "an item with the same hashed attribute twice")
                }
                hashed.append(.init(name: name, mac: GVariantReader.bytes(data, pair[1])))
            }
            records.append(EncryptedRecord(hashedAttributes: hashed, blob: GVariantReader.bytes(data, parts[1])))
        }
        return KeyringFile(
            salt: salt, iterations: try GVariantReader.uint32(data, members[2]),
            modified: try GVariantReader.uint64(data, members[3]),
            usageCount: try GVariantReader.uint32(data, members[4]), records: records)
    }

    /// `body`, whose cap failure is told as `what`.
    private static func capped<T>(_ what: String, _ body: () throws(MalformedGVariant) -> T) throws(MalformedGVariant) -> T {
        do {
            return try body()
        } catch where error.exceedsCap {
            throw MalformedGVariant(reason: what, exceedsCap: true)
        }
    }

    /// The whole file: header, version, body in GVariant normal form.
    func serialized() -> [UInt8] {
        let records = records.map { record in
            GVariantValue.tuple([
                .array(
                    element: .variable,
                    record.hashedAttributes.map { .tuple([.string($0.name), .bytes($0.mac)]) }),
                .bytes(record.blob),
            ])
        }
        let body = GVariantValue.tuple([
            .uint32(UInt32(salt.count)), .bytes(salt), .uint32(iterations), .uint64(modified),
            .uint32(usageCount), .array(element: .variable, records),
        ]).serialized()
        return Self.header + [Self.majorVersion, Self.minorVersion] + body.withSpan { span in (0..<span.count).map { span[$0] } }
    }
}

/// The plaintext of one item, `(a{ss}sttay)`: attributes, label, created, modified, secret.
enum ItemPlaintext {
    private static let members: [GVariantLayout] = [.variable, .variable, .uint64, .uint64, .variable]
    private static let pair: [GVariantLayout] = [.variable, .variable]

    /// Serializes `item` straight into a secure buffer. Attributes are written sorted by name.
    static func serialize(_ item: FileKeyringItem) -> SecretBytes {
        let attributes = item.attributes.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        return GVariantValue.tuple([
            .array(element: .variable, attributes.map { .tuple([.string($0.key), .string($0.value)]) }),
            .string(item.label), .uint64(item.created), .uint64(item.modified), .secretBytes(item.secret.buffer),
        ]).serialized()
    }

    /// Decodes a decrypted item. The secret is copied into its own secure buffer. An item over a
    /// cap of `KeyringFile` (attributes, string lengths) fails like a malformed one (`exceedsCap`):
    /// its record is then damaged, as any record that decrypts to an invalid item.
    static func deserialize(_ plaintext: SecretBytes) throws(MalformedGVariant) -> FileKeyringItem {
        try plaintext.withSpan { data throws(MalformedGVariant) in
            let parts = try GVariantReader.tuple(data, 0..<data.count, members)
            let cap = KeyringFile.maximumStringLength
            var attributes: [String: String] = [:]
            for entry in try GVariantReader.array(data, parts[0], .variable, limit: KeyringFile.maximumAttributes) {
                let kv = try GVariantReader.tuple(data, entry, pair)
                let name = try GVariantReader.string(data, kv[0], maximumLength: cap)
                guard attributes[name] == nil else { throw MalformedGVariant(reason: "an item with the same attribute twice") }
                attributes[name] = try GVariantReader.string(data, kv[1], maximumLength: cap)
            }
            return FileKeyringItem(
                label: try GVariantReader.string(data, parts[1], maximumLength: cap), attributes: attributes,
                secret: FileKeyringSecret(buffer: plaintext.slice(parts[4])),
                created: try GVariantReader.uint64(data, parts[2]), modified: try GVariantReader.uint64(data, parts[3]))
        }
    }
}
