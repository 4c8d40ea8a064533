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
        var records: [EncryptedRecord] = []
        for recordRange in try GVariantReader.array(data, members[5], .variable) {
            let parts = try GVariantReader.tuple(data, recordRange, recordMembers)
            var hashed: [EncryptedRecord.HashedAttribute] = []
            for entry in try GVariantReader.array(data, parts[0], .variable) {
                let pair = try GVariantReader.tuple(data, entry, recordMembers)
                let name = try GVariantReader.string(data, pair[0])
                guard !hashed.contains(where: { $0.name == name }) else {
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

    /// Decodes a decrypted item. The secret is copied into its own secure buffer.
    static func deserialize(_ plaintext: SecretBytes) throws(MalformedGVariant) -> FileKeyringItem {
        try plaintext.withSpan { data throws(MalformedGVariant) in
            let parts = try GVariantReader.tuple(data, 0..<data.count, members)
            var attributes: [String: String] = [:]
            for entry in try GVariantReader.array(data, parts[0], .variable) {
                let kv = try GVariantReader.tuple(data, entry, pair)
                let name = try GVariantReader.string(data, kv[0])
                guard attributes[name] == nil else { throw MalformedGVariant(reason: "an item with the same attribute twice") }
                attributes[name] = try GVariantReader.string(data, kv[1])
            }
            return FileKeyringItem(
                label: try GVariantReader.string(data, parts[1]), attributes: attributes,
                secret: FileKeyringSecret(buffer: plaintext.slice(parts[4])),
                created: try GVariantReader.uint64(data, parts[2]), modified: try GVariantReader.uint64(data, parts[3]))
        }
    }
}
