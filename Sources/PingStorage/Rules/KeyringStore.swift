#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
import SecretService
import Waiting

/// Where a configuration's items and keys are: the one backend seam. ``SecretServiceStore`` keeps
/// them in the Secret Service, ``FileKeyringStore`` in a sandbox's file keyring; ``KeychainPlaces``
/// decides which, once per process and configuration. ``KeychainItems`` (the account's item) and
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
    func read(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> SecretValue?
    /// Leaves exactly one item of the app's own for the account, holding `value` (or what `holds`
    /// recognises as it); items no app owns are left as they are.
    /// - Returns: whether a secret was written (false: the item already held the value).
    func write(_ value: SecretValue, holds: @escaping @Sendable (Data) -> Bool, for account: AccountRules,
               by deadline: Deadline) async throws(StorageFailure) -> Bool
    /// Removes the app's own items of the account and those no app owns; none is success.
    func delete(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure)
    /// The metadata of the item a read takes, found afresh; nil when there is none.
    func info(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> SecretItemInfo?
    /// That item's metadata and secret, from one look at the backend; nil when there is none.
    func infoAndSecret(_ account: AccountRules, by deadline: Deadline) async throws(StorageFailure) -> (info: SecretItemInfo, secret: SecretValue)?

    /// Whether the key items are as they were when the store answered with `token` (a
    /// ``KeyVault/KeyChoice``'s): then a chosen key stays current. False when the store cannot tell.
    func keysUnchanged(since token: ChangeToken?) -> Bool
    /// The oldest key (``KeyVault/precedes(_:_:)``) bound to the TPM when `bound`, unbound
    /// otherwise (``KeyVault/isOfKind(_:bound:)``), loaded and checked, passing over bound keys this
    /// TPM refuses (``KeyVault/isForeign(_:)``); one is created when there is none.
    func chooseKey(bound: Bool, by deadline: Deadline) async throws(StorageFailure) -> KeyVault.KeyChoice
    /// The key item with `id`, loaded and checked; nil when there is none.
    func loadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>?
    /// ``loadKey(_:by:)`` again, after a save, as cheaply as the store can: the same answer.
    func reloadKey(_ id: KeyID, by deadline: Deadline) async throws(StorageFailure) -> Result<SymmetricKey, EncryptorError>?

    /// The items of `service` and the key items, with their apps (``KeychainIdentities``); no secret read.
    func identityItems(service: String, by deadline: Deadline) async throws(StorageFailure) -> [KeychainIdentities.Item]
    /// Gives identity `new` the items of `service` that identity `old` has, but for accounts `new`
    /// has an item of, and copies `old`'s keys that `new` lacks (``KeychainIdentities/plan(_:from:to:)``).
    func moveItems(service: String, from old: String, to new: String,
                   by deadline: Deadline) async throws(StorageFailure) -> KeychainIdentities.Move
}
