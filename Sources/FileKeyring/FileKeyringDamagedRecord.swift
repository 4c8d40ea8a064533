internal import Gcrypt

/// A record of the file that cannot be read as an item, while others can: it fails its MAC check,
/// or it passes it but decrypts to an invalid item or to attributes its hashed (searchable)
/// attributes disagree with. ``FileKeyring`` skips it, writes it back byte for byte on every
/// write (its encrypted record unchanged, in its place), never re-keys the file while it is there,
/// and reports it: ``FileKeyring/contents()`` lists it, and a query it may match fails with
/// ``FileKeyringError/Code/damagedItem`` rather than find nothing.
///
/// It shows no secret and no attribute value: its position, what is wrong, and the names of its
/// hashed attributes (stored in clear, outside the item's MAC: anyone who can write the file can
/// change them, so they say what the record claims to be, not what it is).
///
/// Thread-safety: `Sendable`, immutable.
public struct FileKeyringDamagedRecord: Sendable, CustomStringConvertible {
    /// What is wrong with a record.
    public struct Damage: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The identifier, such as `failedMAC`.
        public let rawValue: String

        /// Creates a damage from its identifier.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Its MAC does not verify (the record was altered, or written with another master
        /// secret), or its encrypted data has a length no MAC check can accept.
        public static let failedMAC = Damage(rawValue: "failedMAC")
        /// It passes its MAC check but its padding or its decrypted item is invalid.
        public static let invalidItem = Damage(rawValue: "invalidItem")
        /// It decrypts to a valid item whose attributes its hashed attributes disagree with, so
        /// libsecret would find it under other attributes than it holds.
        public static let inconsistentAttributes = Damage(rawValue: "inconsistentAttributes")

        /// What the damage means, in words.
        public var description: String {
            switch self {
            case .failedMAC: "it fails its MAC check"
            case .invalidItem: "it decrypts to an invalid item"
            case .inconsistentAttributes: "its searchable attributes disagree with its encrypted ones"
            default: rawValue
            }
        }
    }

    /// Its position among the file's records, from 0 (readable items and damaged records count alike).
    public let index: Int
    /// What is wrong.
    public let damage: Damage
    /// The names of its hashed attributes, in file order (never their values).
    public var hashedAttributeNames: [String] { record.hashedAttributes.map(\.name) }

    /// The record, written back as it is.
    let record: EncryptedRecord
    /// The file's key, to hash a query's values for ``matches(_:)``.
    let key: KeyringKey
    /// The attributes it decrypted to, for ``Damage/inconsistentAttributes`` (nil otherwise).
    let decryptedAttributes: [String: String]?

    /// Whether the record may be an item `query` asks for: its hashed attributes include every
    /// pair of `query` (each value's HMAC compared in constant time), as libsecret searches, or the
    /// attributes it decrypted to do. An empty query matches every record.
    ///
    /// Throws ``FileKeyringError/Code/cryptoFailure`` when libgcrypt fails.
    public func matches(_ query: [String: String]) throws(FileKeyringError) -> Bool {
        if let decryptedAttributes, query.allSatisfy({ decryptedAttributes[$0.key] == $0.value }) { return true }
        for (name, value) in query {
            guard let hashed = record.hashedAttributes.first(where: { $0.name == name }) else { return false }
            let bytes = Array(value.utf8)
            guard try key.verifyMAC(bytes, 0..<bytes.count, expected: hashed.mac, 0..<hashed.mac.count) else { return false }
        }
        return true
    }

    /// The records of `records` that may match `query`.
    static func those(_ records: [FileKeyringDamagedRecord], matching query: [String: String]) throws(FileKeyringError) -> [FileKeyringDamagedRecord] {
        var found: [FileKeyringDamagedRecord] = []
        for record in records where try record.matches(query) { found.append(record) }
        return found
    }

    /// `record 2 (it fails its MAC check; hashed attributes: account, service)`, counting from 1,
    /// the names made ``printable(_:)``.
    public var description: String {
        let names = hashedAttributeNames.map(Self.printable)
        return "record \(index + 1) (\(damage); "
            + (names.isEmpty ? "no hashed attributes)" : "hashed attributes: \(names.joined(separator: ", ")))")
    }

    /// A hashed attribute name as it may be shown: control characters replaced, at most 64 characters (the names
    /// come from a file anyone with write access can change).
    public static func printable(_ name: String) -> String {
        let cleaned = String(name.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return cleaned.count > 64 ? String(cleaned.prefix(64)) + "…" : cleaned
    }
}

/// What a read of the file found: the items that decrypted, and the records that did not.
///
/// Thread-safety: `Sendable`.
public struct FileKeyringContents: Sendable {
    /// The readable items, in file order.
    public var items: [FileKeyringItem]
    /// The damaged records, in file order; empty for a sound file.
    public let damaged: [FileKeyringDamagedRecord]

    /// The damaged records that may be items `query` asks for (``FileKeyringDamagedRecord/matches(_:)``).
    /// Throws ``FileKeyringError/Code/cryptoFailure`` when libgcrypt fails.
    public func damaged(matching query: [String: String]) throws(FileKeyringError) -> [FileKeyringDamagedRecord] {
        try FileKeyringDamagedRecord.those(damaged, matching: query)
    }
}
