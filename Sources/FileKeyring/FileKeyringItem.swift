#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One item of a file keyring: what libsecret calls a password and oo7 an `UnlockedItem`.
///
/// A value type; copies share the same ``FileKeyringSecret``, whose bytes are wiped when no copy
/// holds it any more. Thread-safety: `Sendable`; a value is safe to read from any thread.
public struct FileKeyringItem: Sendable, Equatable {
    /// The attribute in which oo7 keeps a secret's content type (libsecret's file backend has none
    /// and reports every secret as `text/plain`).
    public static let contentTypeAttribute = "xdg:content-type"

    /// The item's label, shown to people. Must not contain NUL.
    public var label: String
    /// The lookup attributes. Names and values must not contain NUL. In the file, values are also
    /// stored as HMACs for searching; everything here is encrypted with the item.
    public var attributes: [String: String]
    /// The secret.
    public var secret: FileKeyringSecret
    /// When the item was first stored, in Unix seconds (UTC).
    public var created: UInt64
    /// When the item was last changed, in Unix seconds (UTC).
    public var modified: UInt64

    /// The encrypted record this item was read from, with the values it had then: an item that is
    /// unchanged when a transaction ends is written back byte for byte.
    var origin: Origin?

    /// The position of the record the item was read from among the file's records, from 0 (nil
    /// for an item not read from a file): a read that decrypts some records alone
    /// (``FileKeyring/contents(matchingAny:)``) still tells where each item is. Not compared by `==`.
    public internal(set) var recordIndex: Int?

    /// An item. `created` and `modified` default to now.
    public init(
        label: String, attributes: [String: String], secret: FileKeyringSecret,
        created: UInt64? = nil, modified: UInt64? = nil
    ) {
        let now = Self.now()
        self.label = label
        self.attributes = attributes
        self.secret = secret
        self.created = created ?? now
        self.modified = modified ?? created ?? now
        origin = nil
        recordIndex = nil
    }

    /// oo7's content type (`xdg:content-type`, e.g. `text/plain`), when the item has one.
    public var contentType: String? {
        get { attributes[Self.contentTypeAttribute] }
        set { attributes[Self.contentTypeAttribute] = newValue }
    }

    /// Whether every name–value pair of `query` is among this item's attributes (an empty query
    /// matches every item), as libsecret and oo7 search.
    public func matches(_ query: [String: String]) -> Bool {
        query.allSatisfy { attributes[$0.key] == $0.value }
    }

    /// Equal label, attributes, times and secret bytes (constant-time on the secret).
    public static func == (lhs: FileKeyringItem, rhs: FileKeyringItem) -> Bool {
        lhs.label == rhs.label && lhs.attributes == rhs.attributes && lhs.created == rhs.created
            && lhs.modified == rhs.modified && lhs.secret == rhs.secret
    }

    /// The current time in Unix seconds.
    static func now() -> UInt64 {
        UInt64(max(0, time(nil)))
    }

    /// Whether the item still has the values it was read with under `key`, so its record can be
    /// kept (an item read from another keyring, or under another key, is encrypted afresh).
    func isUnchanged(under key: KeyringKey) -> Bool {
        guard let origin, origin.key === key || origin.key.bytes.constantTimeEquals(key.bytes) else { return false }
        return hasOriginalContent && created == origin.created && modified == origin.modified
    }

    /// Whether label, attributes and secret are those the item was read with (whatever the key):
    /// an item only copied to another keyring keeps its modification time.
    var hasOriginalContent: Bool {
        guard let origin else { return false }
        return label == origin.label && attributes == origin.attributes && secret == origin.secret
    }

    /// Where an item came from.
    struct Origin: Sendable {
        /// The key the record was decrypted with.
        let key: KeyringKey
        let record: EncryptedRecord
        let label: String
        let attributes: [String: String]
        let secret: FileKeyringSecret
        let created: UInt64
        let modified: UInt64
    }

    /// Throws ``FileKeyringError/Code/invalidItem`` when the item cannot be stored: a NUL in a
    /// string, or over a cap readers enforce (more than 1,000 attributes, a label, name or value
    /// over 64 KiB).
    func validate(index: Int) throws(FileKeyringError) {
        func check(_ string: String, _ what: String) throws(FileKeyringError) {
            if string.utf8.contains(0) {
                throw FileKeyringError(
                    .invalidItem, "item #\(index) cannot be stored: its \(what) contains a NUL character; remove it")
            }
        }
        try check(label, "label")
        for (name, value) in attributes {
            try check(name, "attribute name \"\(FileKeyringDamagedRecord.printable(name.filter { $0 != "\0" }))\"")
            try check(value, "value of attribute \"\(FileKeyringDamagedRecord.printable(name.filter { $0 != "\0" }))\"")
        }
        // What no reader of this module would read back (KeyringFile's caps) is not written either.
        let cap = KeyringFile.maximumStringLength
        if attributes.count > KeyringFile.maximumAttributes {
            throw FileKeyringError(.invalidItem, "item #\(index) cannot be stored: it has \(attributes.count) attributes, "
                                   + "more than the \(KeyringFile.maximumAttributes) a keyring item may have; store fewer")
        }
        if label.utf8.count > cap || attributes.contains(where: { $0.key.utf8.count > cap || $0.value.utf8.count > cap }) {
            throw FileKeyringError(.invalidItem, "item #\(index) cannot be stored: its label, an attribute name or an "
                                   + "attribute value is longer than \(cap) bytes; shorten it (the secret may be longer)")
        }
    }
}
