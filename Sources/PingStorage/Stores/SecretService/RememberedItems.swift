#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import Gcrypt
import Locking
internal import SecretService

/// What one connection's calls have taught: which item path holds each account, with the change
/// token when that was known (valid exactly while the token has not moved), and which account
/// items this connection created (what a key search may pass over in the announcements since).
final class RememberedItems: Sendable {
    struct Entry: Sendable {
        /// The item a read of the account takes: always the app's own (an item no app owns is never
        /// remembered, ``AccountItems/remember(_:found:answeredAt:holding:)``), so a save may write
        /// through it.
        var path: ItemPath
        var token: ChangeToken
        /// Whether the item already carries our attributes and label (else a write adds them).
        var isComplete: Bool
        /// The account's items no app owns besides it, which a delete removes too; nil when not
        /// known (a delete then searches).
        var unowned: [ItemPath]?
        /// The SHA-256 of the secret this process last read from it or wrote into it: a cached
        /// item is still current while the item holds these bytes (``SecretServiceStore/isUnchanged(_:since:verifying:by:)``).
        var digest: SHA256Digest?
    }
    private let entries = Locked<[String: Entry]>([:])
    /// The account items this connection created (``isOwnCreation(_:)``), the latest 256.
    private let ownCreatedItems = Locked<[ItemPath]>([])

    subscript(key: String) -> Entry? {
        get { entries.withLock { $0[key] } }
        set { entries.withLock { $0[key] = newValue } }
    }

    /// Records that the item remembered for `key` at `path` now holds `bytes`.
    func saw(_ bytes: Data, at path: ItemPath, for key: String) {
        let digest = Self.digest(bytes)
        entries.withLock { entries in
            if entries[key]?.path == path { entries[key]?.digest = digest }
        }
    }

    /// The SHA-256 of `bytes` (never the bytes: only whether they are the same).
    static func digest(_ bytes: Data) -> SHA256Digest {
        bytes.withUnsafeBytes { Hashing.sha256Digest($0) }
    }

    /// Records that this connection created the account item at `path`.
    func recordOwnItem(_ path: ItemPath) {
        ownCreatedItems.withLock { items in
            if items.count >= 256 { items.removeFirst() }  // bounded: a forgotten one only costs a search
            items.append(path)
        }
    }

    /// Whether this connection created the account item at `path` (an account item is never a key item).
    func isOwnCreation(_ path: ItemPath) -> Bool { ownCreatedItems.withLock { $0.contains(path) } }
}
