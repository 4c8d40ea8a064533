#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBusTransport

/// Which collection to use: an alias the provider resolves, or an object path.
public enum CollectionReference: Sendable, Hashable, CustomStringConvertible {
    /// The user's default collection (the `default` alias; `login` on GNOME). Persistent.
    case `default`
    /// The in-memory `session` alias: gone when the user logs out. GNOME Keyring only.
    case session
    /// Any other alias.
    case alias(String)
    /// A collection's object path, e.g. `/org/freedesktop/secrets/collection/login`.
    case path(ObjectPath)

    /// "the default collection", "the 'session' collection", or the path.
    public var description: String {
        switch self {
        case .default: "the default collection"
        case .session: "the 'session' collection"
        case .alias(let alias): "the '\(alias)' collection"
        case .path(let path): path.rawValue
        }
    }

    /// Parses what a person writes: `default`, `session`, an object path starting with `/`, or
    /// any other alias.
    /// - Throws: `.invalidArgument` for an empty string or a malformed object path.
    public init(parsing text: String) throws(SecretServiceError) {
        switch text {
        case "": throw .invalidArgument("choose a collection", "An empty collection name is not a collection.")
        case "default": self = .default
        case "session": self = .session
        case let path where path.hasPrefix("/"): self = .path(try ObjectPath(checking: path))
        default: self = .alias(text)
        }
    }

    var aliasName: String? {
        switch self {
        case .default: "default"
        case .session: "session"
        case .alias(let alias): alias
        case .path: nil
        }
    }
}

/// A secret's bytes and MIME content type.
public struct SecretValue: Sendable, Hashable {
    /// The secret. Any bytes, NUL included.
    public var bytes: Data
    /// `text/plain` for text, `application/octet-stream` (or another type) for binary data.
    public var contentType: String

    /// Creates a value. `contentType` defaults to ``contentType(for:)``.
    public init(bytes: Data, contentType: String? = nil) {
        self.bytes = bytes
        self.contentType = contentType ?? SecretValue.contentType(for: bytes)
    }

    /// `text/plain` when `bytes` is UTF-8 without NUL bytes, else `application/octet-stream`.
    /// Checked in place: the secret is not copied.
    public static func contentType(for bytes: Data) -> String {
        bytes.withUnsafeBytes { isTextWithoutNUL($0) } ? "text/plain" : "application/octet-stream"
    }

    /// Whether `bytes` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above
    /// U+10FFFF) without NUL.
    static func isTextWithoutNUL(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead == 0 { return false }
            if lead < 0x80 { index += 1; continue }
            let length: Int
            let minimum: UInt32
            switch lead {
            case 0xC2...0xDF: length = 2; minimum = 0x80
            case 0xE0...0xEF: length = 3; minimum = 0x800
            case 0xF0...0xF4: length = 4; minimum = 0x10000
            default: return false
            }
            guard index + length <= count else { return false }
            var scalar = UInt32(lead) & (0xFF >> (length + 1))
            for offset in 1..<length {
                let next = bytes[index + offset]
                guard next & 0xC0 == 0x80 else { return false }
                scalar = scalar << 6 | UInt32(next & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return false }
            index += length
        }
        return true
    }
}

/// What the provider says about an item. Never includes the secret.
public struct SecretItemInfo: Sendable, Hashable {
    /// The item's object path; stable for the item's life.
    public var path: ItemPath
    /// The human-readable label shown in Seahorse, KeePassXC or KWallet.
    public var label: String
    /// The lookup attributes (stored unencrypted by every provider).
    public var attributes: [String: String]
    /// When the item was created (providers keep whole seconds).
    public var created: Date
    /// When the item (its secret, label or attributes) last changed.
    public var modified: Date
    /// Whether the item is locked.
    public var isLocked: Bool

    /// The collection's object path (the item path's parent).
    public var collectionPath: ObjectPath { path.collection }

    /// Creates item metadata (for alternative backends and tests).
    public init(path: ItemPath, label: String, attributes: [String: String], created: Date, modified: Date, isLocked: Bool) {
        self.path = path
        self.label = label
        self.attributes = attributes
        self.created = created
        self.modified = modified
        self.isLocked = isLocked
    }
}

/// What the provider says about a collection.
public struct SecretCollectionInfo: Sendable, Hashable {
    /// The collection's object path.
    public var path: ObjectPath
    /// Its label, e.g. "Login".
    public var label: String
    /// Whether it is locked.
    public var isLocked: Bool

    /// Creates collection metadata (for alternative backends and tests).
    public init(path: ObjectPath, label: String, isLocked: Bool) {
        self.path = path
        self.label = label
        self.isLocked = isLocked
    }
}

/// The program behind `org.freedesktop.secrets`.
public struct SecretServiceProvider: Sendable, Hashable {
    /// Its unique bus name, e.g. `:1.7`.
    public var uniqueName: String
    /// Its process ID, as the bus reports it.
    public var processID: UInt32?
    /// Its Unix user ID, as the bus reports it (always ours: see ``SecretServiceError/Code-swift.struct/untrustedProvider``).
    public var userID: UInt32?
    /// Its executable, from `/proc/PID/exe` (not the name a process gives itself), e.g.
    /// `/usr/bin/gnome-keyring-daemon`; nil when not visible (another PID namespace).
    public var executable: String?
    /// The negotiated transport: `plain` or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    public var transportAlgorithm: String
    /// Our own unique name on the bus.
    public var clientName: String

    /// "GNOME Keyring", "KWallet", "KeePassXC", or the executable's file name.
    public var displayName: String { Self.displayName(ofExecutable: executable) }

    /// The ``displayName`` of a provider running `executable`.
    static func displayName(ofExecutable executable: String?) -> String {
        switch ProviderKind(executable: executable) {
        case .gnomeKeyring: "GNOME Keyring"
        case .kwallet: "KWallet"
        case .keepassxc: "KeePassXC"
        case .other: executable.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "unknown"
        }
    }
}

/// What a search found, split by lock state, as of ``changeToken``.
public struct SecretSearchResult: Sendable, Hashable {
    /// Items whose secrets can be read now.
    public var unlocked: [ItemPath]
    /// Items that must be unlocked first.
    public var locked: [ItemPath]
    /// The client's change token when the answer arrived.
    public var changeToken: ChangeToken
    /// Every item found.
    public var all: [ItemPath] { unlocked + locked }

    /// Creates a search result (for alternative backends and tests).
    public init(unlocked: [ItemPath], locked: [ItemPath], changeToken: ChangeToken) {
        self.unlocked = unlocked
        self.locked = locked
        self.changeToken = changeToken
    }
}

/// A secret as read, with the change token when the answer arrived.
public struct SecretRead: Sendable, Hashable {
    /// The secret.
    public var value: SecretValue
    /// The client's change token when the answer arrived.
    public var changeToken: ChangeToken

    /// Creates a read result (for alternative backends and tests).
    public init(value: SecretValue, changeToken: ChangeToken) {
        self.value = value
        self.changeToken = changeToken
    }
}

/// A newly created item, with the change token when the answer arrived.
public struct CreatedItem: Sendable, Hashable {
    /// The new item's path.
    public var path: ItemPath
    /// The client's change token when the answer arrived (the provider announces the new item
    /// before it answers, so the token already counts it).
    public var changeToken: ChangeToken

    /// Creates a result (for alternative backends and tests).
    public init(path: ItemPath, changeToken: ChangeToken) {
        self.path = path
        self.changeToken = changeToken
    }
}
