#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the keyring says about an item, never its secret: where it is, its label and attributes,
/// and its times (``KeychainStorage/itemInfo()``). Linux only.
public struct KeychainItemInfo: Sendable, Hashable {
    /// Where the item is: its D-Bus object path in the Secret Service
    /// (`/org/freedesktop/secrets/collection/login/7`), or `/file/NAME/N` in a file keyring (the
    /// item's position in the file `NAME.keyring`; not a D-Bus object).
    public var location: String
    /// The collection holding it: its object path in the Secret Service, or the file keyring's path.
    public var collection: String
    /// The label keyring managers show (Seahorse, KeePassXC, KWallet).
    public var label: String
    /// The lookup attributes (stored unencrypted by every provider; they never hold secrets).
    public var attributes: [String: String]
    /// When the item was created (providers keep whole seconds).
    public var created: Date
    /// When the item (its secret, label or attributes) last changed.
    public var modified: Date
    /// Whether the item is locked.
    public var isLocked: Bool

    /// Creates item metadata.
    public init(location: String, collection: String, label: String, attributes: [String: String], created: Date,
                modified: Date, isLocked: Bool) {
        self.location = location
        self.collection = collection
        self.label = label
        self.attributes = attributes
        self.created = created
        self.modified = modified
        self.isLocked = isLocked
    }
}
