#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
import Waiting

/// Where a configuration's items and keys are: the one backend seam. ``SecretServiceStore`` keeps
/// them in the Secret Service, ``FileKeyringStore`` in a sandbox's file keyring; ``KeychainPlace``
/// decides which, once per process, service and app. ``KeychainItems`` (the account's item) and
/// ``KeyVault`` (``SecuredKeyEncryptor``'s keys) work through it alone.
///
/// The Keychain rules are the same on both (``AccountRules``: one item of the app's own per
/// account; items no app owns, whoever wrote them, read only while the app has none and never
/// written into; the item a read takes and the one a save keeps among duplicates, the attributes
/// and label written, nothing written when the value is already there; ``KeyVault``'s rules for keys);
/// each store applies them with what its backend offers: change tokens and a remembered item on
/// the Secret Service, one transaction of the file on a file keyring.
///
/// Every call ends by `deadline` and throws ``StorageFailure`` alone: each store translates its
/// backend's errors once.
protocol KeyringStore: Sendable {
    /// The account's secret (the app's own item's, else one no app owns), or nil when it has none.
    func read(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> StoredSecret?
    /// Leaves exactly one item of the app's own for the account, holding `value` (or what `holds`
    /// recognises as it); items no app owns are left as they are.
    /// - Returns: whether a secret was written (false: the item already held the value).
    func write(_ value: StoredSecret, holds: @escaping @Sendable (Data) -> Bool, for account: AccountRules,
               by deadline: Deadline) async throws(StorageFailure) -> Bool
    /// Removes the app's own items of the account and those no app owns; none is success.
    func delete(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure)
    /// The metadata of the item a read takes, found afresh; nil when there is none.
    func info(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> KeychainItemInfo?
    /// That item's metadata and secret, from one look at the backend; nil when there is none.
    func infoAndSecret(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> (info: KeychainItemInfo, secret: StoredSecret)?

    /// Whether the key items are as they were at `moment` (a ``KeyVault/KeyChoice``'s): then a
    /// chosen key stays current. False when the store cannot tell.
    func keysUnchanged(since moment: StoreMoment?) -> Bool
    /// The oldest key (``KeyVault/precedes(_:_:)``) bound to the TPM when `bound`, unbound
    /// otherwise (``KeyVault/isOfKind(_:bound:)``), loaded and checked, passing over bound keys this
    /// TPM refuses (``KeyVault/isForeign(_:)``); one is created when there is none.
    func chooseKey(bound: Bool, by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice
    /// The key item with `id`, loaded and checked; nil when there is none.
    func loadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>?
    /// ``loadKey(_:by:)`` again, after a save, as cheaply as the store can: the same answer.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>?
    /// Adds the pin to a 2.0.0 bound key's item (``BoundKeys/pinToWrite(id:)``): replaces the
    /// secret of this app's key item `id` with `pinned` (the same TPM blobs and wrapped key under
    /// `PSBND2`, with the parent's name) when it still holds `read`; nothing otherwise.
    ///
    /// Why rewriting the key item is safe in a keyring other apps and processes share: the item is
    /// rewritten only when it is provably this app's (its `pingstorage-app` is the app's: an item of
    /// no app or of another app is never touched) and still holds the very bytes that were read and
    /// opened; the new bytes open to the same AES key (its `key-check` holds), so a reader that sees
    /// either version gets the same key; a failed read or write changes nothing, and the key stays
    /// unpinned until a later first use.
    func pinBoundKey(_ id: KeyID, replacing read: Data, with pinned: Data, by deadline: Deadline) async throws(StorageFailure)

    // MARK: Whether a cached item is still current (``StorageDelegate``'s cache, across processes)

    /// What the store has heard of changes by now, without I/O (an item announced changed by the
    /// Secret Service, the file rewritten by another process); nil when it cannot tell (no
    /// connection is open: nothing is heard).
    func changeStamp() -> StoreStamp?
    /// Whether the account's item is as this process last read or wrote it, given what was heard
    /// since `stamp`: without I/O when the store can tell, else (and always when `verifying`: what
    /// was heard may not cover everything) by reading the item once. False whenever it cannot tell
    /// (then the cache is dropped and the keyring read).
    func isUnchanged(_ account: AccountRules, since stamp: StoreStamp, verifying: Bool,
                     by deadline: Deadline) async throws(StorageFailure) -> Bool

    // MARK: Any tool's items, for ping-keyring (``KeyringInventory``)

    /// The collection the items are in: its location, label and lock state.
    func collection(by deadline: Deadline) async throws(StorageFailure) -> KeyringCollection
    /// Every item, whoever wrote it, whose attributes include all pairs of at least one of
    /// `queries`, in the store's order, each once; with its secret as `reading` says. An item
    /// deleted meanwhile is left out. In a file keyring, a damaged record one of the queries may
    /// match fails the call (the list would lack it).
    func items(matchingAny queries: [[String: String]], reading: KeyringItemReading,
               by deadline: Deadline) async throws(StorageFailure) -> [KeyringItem]
    /// Locks (`locked` true) or unlocks the collection, through the provider's prompt when it shows
    /// one and the configuration allows prompts.
    /// - Throws: `.invalidArgument` in a file keyring, which has no lock of its own; `.locked`
    ///   when unlocking needs a prompt that is not allowed; `.promptDismissed`.
    func setLocked(_ locked: Bool, by deadline: Deadline) async throws(StorageFailure)

    /// The items of `service` and the key items, with their apps (``KeychainIdentities``); no secret read.
    func identityItems(service: String, by deadline: Deadline) async throws(StorageFailure) -> [KeychainIdentities.Item]
    /// Gives identity `new` the items of `service` that identity `old` has, but for accounts `new`
    /// has an item of, and copies `old`'s keys that `new` lacks (``KeychainIdentities/plan(_:from:to:)``).
    func moveItems(service: String, from old: String, to new: String,
                   by deadline: Deadline) async throws(StorageFailure) -> KeychainIdentities.Move
}

/// A secret as a store holds it: its bytes, and its MIME content type when the store says one
/// (nil on a write: the store decides from the bytes, `text/plain` for UTF-8 text without NUL,
/// else `application/octet-stream`). Whoever gets one wipes the bytes once used.
package struct StoredSecret: Sendable {
    /// The secret's bytes.
    package var bytes: Data
    /// Its MIME content type, when known.
    package var contentType: String?

    /// A secret of `bytes`, with `contentType` when known.
    package init(bytes: Data, contentType: String? = nil) {
        self.bytes = bytes
        self.contentType = contentType
    }
}

/// How far a store had heard of changes at a moment (``KeyringStore/changeStamp()``); opaque above
/// the stores. Two stamps of one store compare: equal, nothing was heard in between.
struct StoreStamp: Sendable, Hashable {
    let source: UInt64
    let count: UInt64
}

/// A moment of a store, as the store tells it (on the Secret Service, its change token: which
/// connection, and how many items were created or deleted by then); opaque above the stores. Two
/// moments of one store compare: the store says what changed between them.
struct StoreMoment: Sendable, Hashable {
    let source: UInt64
    let count: UInt64
}

extension StoredSecret {
    /// A secret read from a store that may keep no content type (a file keyring's item without
    /// `xdg:content-type`): `contentType` when given, else `text/plain` for UTF-8 text without NUL
    /// and `application/octet-stream` otherwise, as the Secret Service store says it. Checked in
    /// place: the secret is not copied.
    init(read bytes: Data, contentType: String?) {
        self.init(bytes: bytes, contentType: contentType ?? (Self.isTextWithoutNUL(bytes) ? "text/plain" : "application/octet-stream"))
    }

    private static func isTextWithoutNUL(_ bytes: Data) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar) where scalar.value == 0: return false
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
