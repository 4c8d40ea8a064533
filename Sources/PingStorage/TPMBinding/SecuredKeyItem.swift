#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting
internal import TPM

/// Where ``SecuredKey`` keeps its TPM key's blobs: one keyring item per application tag, of the
/// app (``AppIdentity``), through the same store as ``KeychainStorage``'s items (``KeychainItems``,
/// so the same backend choice, rules and deadline): service ``service``, account = the tag.
/// The blobs are useless without the TPM that made them (the private part is wrapped by it), so
/// the item is not a secret in itself; it is kept in the keyring so that the key belongs to the
/// app and follows the user's keyring, as iOS keeps a Secure Enclave key's reference in the keychain.
///
/// The item's bytes: `PSTPM2` ‖ parent name length (2 bytes, big-endian) ‖ the name of the TPM's
/// storage primary key the key was made under (pinned, ``TPMKeyBlob/parentName``) ‖ public area
/// length (2 bytes) ‖ public area ‖ private area length (2 bytes) ‖ private area. 2.0.0 wrote
/// `PSTPM1` without the name: such items still read, and get their pin at their first use
/// (``pin(_:as:)``).
struct SecuredKeyItem: Sendable {
    /// The service of SecuredKey's items.
    static let service = "com.pingidentity.PingStorage.SecuredKey.TPM"
    private static let magic = TPMKeyBlobMagic(unpinned: Array("PSTPM1".utf8), pinned: Array("PSTPM2".utf8))

    private let items: KeychainItems

    /// The item of `tag`, for the process's app, in the default configuration's keyring.
    init(tag: String) {
        items = KeychainItems(account: tag, configuration: KeychainConfiguration(service: Self.service))
    }

    /// How long the caller waits for the keyring at most: the configuration's deadline ends every
    /// keyring call; this is the backstop for the bridge itself.
    private var backstop: Duration { items.configuration.timeout + .seconds(5) }

    /// The stored blobs; nil when there is no item.
    /// - Throws: what the keyring read threw (locked, unavailable, timed out), or
    ///   ``KeychainError`` `corruptItem` when the item holds something else.
    func read() throws -> TPMKeyBlob? {
        let items = items
        guard let value = try Self.blocking(backstop, { try await items.read(by: items.deadline()) }) else { return nil }
        guard let blob = Self.decode([UInt8](value.bytes)) else {
            throw KeychainError.unableToRetrieve(.corruptItem(.init(message:
                "The SecuredKey item of tag '\(items.account)' (service \(Self.service)) does not hold a TPM key; it was left unchanged.")))
        }
        return blob
    }

    /// Stores `blob` as the tag's one item.
    func write(_ blob: TPMKeyBlob) throws {
        let items = items
        let bytes = Data(Self.encode(blob))
        _ = try Self.blocking(backstop) { try await items.write(bytes) }
    }

    /// Rewrites a 2.0.0 item (no pin) that held `read` as `pinned` (the same blobs, pinned to the
    /// name its first use found), and only then: when the item found now is this app's own (its
    /// `pingstorage-app` is the app's; an item of no app, 1.x's, is read but never rewritten) and
    /// still holds exactly `read`. Another process may act between that look and the write; what it
    /// can have done there is write the same pinned bytes (the same TPM gives the same name) or,
    /// rarely, delete the item, which the write would bring back with the same key.
    /// - Returns: whether the item was rewritten.
    /// - Throws: what the keyring threw; nothing is written then.
    @discardableResult
    func pin(_ read: TPMKeyBlob, as pinned: TPMKeyBlob) throws -> Bool {
        let items = items, app = items.configuration.app
        let expected = Data(Self.encode(read))
        guard let found = try Self.blocking(backstop, { try await items.infoAndSecret() }),
              found.info.attributes[AppIdentity.attribute] == app, found.secret.bytes == expected else { return false }
        try write(pinned)
        return true
    }

    static func encode(_ blob: TPMKeyBlob) -> [UInt8] { blob.encoded(magic) }

    /// The blobs of an item's bytes, read with bounds; nil when they are not exactly that.
    static func decode(_ bytes: [UInt8]) -> TPMKeyBlob? {
        guard let (blob, rest) = TPMKeyBlob.decode(bytes, magic), rest.isEmpty else { return nil }
        return blob
    }

    /// Runs `body` (async keyring work) and blocks the calling thread until it ends or `backstop`
    /// passes: SecuredKey's API is synchronous, as iOS's SecItem calls are. The work runs on
    /// ``BlockingBridge``'s own executor, not on Swift's pool: callers blocking every pool thread
    /// (SecuredKey called from tasks) cannot starve it.
    static func blocking<Value: Sendable>(_ backstop: Duration, _ body: @escaping @Sendable () async throws -> Value) throws -> Value {
        guard let result = BlockingBridge.run(backstop: backstop, body) else {
            throw KeychainError.unableToRetrieve(.timedOut(.init(message:
                "The keyring did not answer within \(backstop) while SecuredKey read or wrote its key item.")))
        }
        return try result.get()
    }
}
