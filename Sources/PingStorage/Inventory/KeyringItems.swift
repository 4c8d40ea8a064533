#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto

/// An item as ping-keyring's inventory sees it, whoever wrote it (``KeyringInventory``): its
/// metadata, and its secret when it was read. Whoever gets one wipes the secret once used.
package struct KeyringItem: Sendable {
    /// Where the item is, its label, attributes and times. For a locked item whose metadata the
    /// provider hides, only the location, with ``KeychainItemInfo/isLocked``.
    package var info: KeychainItemInfo
    /// The secret, when it was read (``KeyringItemReading``).
    package var secret: StoredSecret?
    /// Whether the provider hides the item's metadata while it is locked: then `info` holds its
    /// location and lock state alone.
    package var metadataHidden: Bool

    /// An item with `info`, and `secret` when read.
    package init(info: KeychainItemInfo, secret: StoredSecret? = nil, metadataHidden: Bool = false) {
        self.info = info
        self.secret = secret
        self.metadataHidden = metadataHidden
    }

    /// A locked item whose metadata the provider hides: its location alone.
    static func locked(at location: String, in collection: String) -> KeyringItem {
        KeyringItem(info: KeychainItemInfo(location: location, collection: collection, label: "", attributes: [:],
                                           created: .distantPast, modified: .distantPast, isLocked: true),
                    metadataHidden: true)
    }
}

/// How much of the items an inventory call reads.
package enum KeyringItemReading: Sendable {
    /// Metadata only; nothing is unlocked, no prompt shown (locked items are listed as locked).
    case metadata
    /// Metadata, and the secrets of the items that are unlocked; nothing is unlocked.
    case secretsOfUnlocked
    /// Metadata and secrets, the items unlocked as a storage's read unlocks them (a prompt when
    /// the configuration allows one).
    case secrets
}

/// The collection where a configuration's items are: a Secret Service collection, or the file
/// keyring (never locked: it is opened with the portal's secret).
package struct KeyringCollection: Sendable, Equatable {
    /// Its object path, or the file's path.
    package var location: String
    /// Its label (empty for a file keyring).
    package var label: String
    /// Whether it is locked.
    package var isLocked: Bool

    package init(location: String, label: String, isLocked: Bool) {
        self.location = location
        self.label = label
        self.isLocked = isLocked
    }
}

/// A key item of ``SecuredKeyEncryptor``, as ping-keyring's doctor sees it: never the key itself.
/// The key items' format (``KeyVault``, ``BoundKey``) is read here, in the library, alone.
package struct EncryptionKeyItem: Sendable, Equatable {
    /// Where the item is.
    package var path: String
    /// The `key-id` attribute when it is 32 hex digits (lowercased); nil otherwise, and then
    /// SecuredKeyEncryptor ignores the item.
    package var keyID: String?
    /// The size of the secret; a sound key has 32 bytes, a sound bound key the size of its TPM
    /// blobs and wrapped key (``holdsAKey``).
    package var byteCount: Int
    package var created: Date
    /// Whether the key is bound to a TPM, and what the TPM said of it.
    package var binding: KeyItemBinding
    /// The key's app (its `pingstorage-app`); nil: no app's (PingStorage 1.x's).
    package var app: String?

    package init(path: String, keyID: String?, byteCount: Int, created: Date, binding: KeyItemBinding = .unbound,
                 app: String? = nil) {
        (self.path, self.keyID, self.byteCount, self.created, self.binding, self.app) = (path, keyID, byteCount, created, binding, app)
    }

    /// Whether the secret has the shape of a key: 32 bytes, or a bound key's blobs and wrapped key.
    package var holdsAKey: Bool {
        switch binding {
        case .unbound: byteCount == 32
        case .bound(let wellFormed, _): wellFormed
        }
    }

    /// Whether the key is bound to a TPM.
    package var isBound: Bool { binding != .unbound }

    /// The key item `item` (its secret read), measured; the TPM asked whether it opens a bound key
    /// (one command, within `timeout`).
    static func measuring(_ item: KeyringItem, timeout: Duration) async -> EncryptionKeyItem {
        let bytes = item.secret?.bytes ?? Data()
        let keyID = item.info.attributes["key-id"].flatMap(KeyID.init(hexString:))?.hexString
        return EncryptionKeyItem(path: item.info.location, keyID: keyID, byteCount: bytes.count, created: item.info.created,
                                 binding: await KeyItemBinding.of(attributes: item.info.attributes, bytes: bytes, timeout: timeout),
                                 app: item.info.attributes[AppIdentity.attribute])
    }
}

/// Whether an encryption key item is bound to a TPM (``KeychainConfiguration/keyBinding``), as
/// the doctor found it: never the key itself.
package enum KeyItemBinding: Sendable, Equatable {
    /// A plain key: the item holds the AES key.
    case unbound
    /// Bound to a TPM; `wellFormed` when its bytes are a bound key's, `tpmOpens` what this
    /// machine's TPM said: true, false (another TPM's: cleared, replaced, another machine), nil
    /// (no TPM could be asked, or the bytes are not a bound key).
    case bound(wellFormed: Bool, tpmOpens: Bool?)

    /// The binding of a key item with `attributes` holding `bytes`: for a bound key, one TPM
    /// command (ECDH with its TPM key) tells whether this TPM can open it.
    static func of(attributes: [String: String], bytes: Data, timeout: Duration) async -> KeyItemBinding {
        guard KeyBindingInspection.isBound(attributes: attributes, bytes: bytes) else { return .unbound }
        let wellFormed = KeyBindingInspection.holdsAKey(bytes) && bytes.count != 32
        return .bound(wellFormed: wellFormed,
                      tpmOpens: wellFormed ? await KeyBindingInspection.tpmOpens(bytes, timeout: timeout) : nil)
    }
}
