#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorageCrypto
import Waiting

/// Encrypts items with AES-256-GCM under a key kept where the configuration keeps its items (the
/// Secret Service; in a Flatpak sandbox, the app's file keyring) — the Linux counterpart
/// of the iOS SDK's Secure Enclave–backed encryptor, with the same failable initializer:
///
/// ```swift
/// let storage = KeychainStorage<Token>(account: "ACCESS_TOKEN_STORAGE",
///                                      encryptor: SecuredKeyEncryptor() ?? NoEncryptor())
/// ```
///
/// - The output is an envelope (magic, version, key id, 96-bit random nonce, ciphertext, 128-bit
///   tag; see `Envelope` in PingStorageCrypto) stored as a binary secret.
/// - Used by ``KeychainStorage`` (through ``ContextualEncryptor``) the ciphertext is bound to the
///   item's service and account: bytes copied to another account do not decrypt.
/// - The key is 256 random bits from libgcrypt's CSPRNG, stored as its own item (attributes
///   `xdg:schema` = `com.pingidentity.PingStorage.SecuredKey` and `key-id`), loaded or created on
///   first use — never in `init` — cached in memory and wiped when released.
/// - **Bound to the machine's TPM 2.0 when one answers** (``KeychainConfiguration/keyBinding``,
///   default ``KeychainConfiguration/KeyBinding/tpmWhenAvailable``): the key item then holds the
///   key wrapped (ECIES, as ``SecuredKey``) to a P-256 key created in the TPM, and attribute
///   `key-binding` = `tpm`; a copy of the keyring does not open it elsewhere. Opening it costs one
///   TPM command per key and process. Items sealed before with an unbound key stay readable and
///   move to the bound key on their next save. After the TPM is cleared (or on another machine)
///   they fail with ``EncryptorError/Reason/tpmCleared(_:)``: sign in again. Without a TPM (or in a
///   Flatpak sandbox without the device) the key is unbound, as before; tpm2-tss is not loaded.
/// - Several processes creating the key at once all end up able to decrypt everything any of
///   them wrote: a key is never replaced or deleted, every envelope names its key, and all
///   processes settle on the same key for new data (the oldest).
/// - A missing key (deleted in Seahorse, keyring restored from elsewhere) makes `decrypt` throw
///   ``EncryptorError/failedToDecrypt(_:)`` with ``EncryptorError/Reason/keyNotFound(_:)``; the
///   item stays in the keyring, and new saves still work (with a new key).
///
/// What it protects against, and what not: see <doc:Encryption> — any process of the same user
/// can ask the Secret Service for the key item, and, where it is bound, the TPM to open it.
///
/// Thread-safety: safe from any task; instances with the same configuration share keys.
public struct SecuredKeyEncryptor: ContextualEncryptor {
    private let vault: KeyVault

    /// Creates the encryptor, or returns nil when encryption is impossible on this machine
    /// (libgcrypt cannot start or is too old). Does not touch D-Bus or the keyring.
    public init?() {
        self.init(configuration: KeychainConfiguration())
    }

    /// Creates the encryptor with the key kept in the collection (and with the deadline, prompt and
    /// transport policy) of `configuration`; nil as for ``init()``.
    public init?(configuration: KeychainConfiguration) {
        self.init(configuration: configuration, runtime: .process)
    }

    /// The encryptor of `configuration` in `runtime`'s place for it (tests give their own runtime).
    init?(configuration: KeychainConfiguration, runtime: KeychainRuntime) {
        let resolved = configuration.resolvingApp()
        self.init(vault: runtime.vault(for: resolved))
    }

    /// The encryptor whose keys are `vault`'s (``KeychainRuntime/vault(for:)``).
    init?(vault: KeyVault) {
        guard CryptoLibrary.initialize() else { return nil }
        self.vault = vault
    }

    /// Encrypts `data` bound to no particular item. ``KeychainStorage`` uses
    /// ``encrypt(data:context:)`` instead.
    /// - Throws: ``EncryptorError/failedToEncrypt(_:)`` (the key item is unusable, libgcrypt failed),
    ///   or ``KeychainError/unableToRetrieve(_:)`` with the reason when the key cannot be loaded or
    ///   created (keyring locked, unavailable, timed out).
    public func encrypt(data: Data) async throws -> Data {
        try await seal(data, associatedData: Self.unboundAssociatedData, by: vault.deadline()).envelope
    }

    /// Decrypts what ``encrypt(data:)`` produced.
    /// - Throws: ``EncryptorError/failedToDecrypt(_:)`` (reasons `authenticationFailed`,
    ///   `keyNotFound`, `tpmCleared`, `unsupportedFormat`), or ``KeychainError/unableToRetrieve(_:)``
    ///   when the keyring (or the TPM a bound key needs) cannot be used now.
    public func decrypt(data: Data) async throws -> Data {
        try await open(data, associatedData: Self.unboundAssociatedData, by: vault.deadline())
    }

    /// Encrypts `data` for the item `context` describes.
    public func encrypt(data: Data, context: EncryptionContext) async throws -> Data {
        try await seal(data, associatedData: context.associatedData, by: vault.deadline()).envelope
    }

    /// Decrypts `data` read from the item `context` describes; data encrypted for another item
    /// fails with ``EncryptorError/failedToDecrypt(_:)`` (``EncryptorError/Reason/authenticationFailed``).
    public func decrypt(data: Data, context: EncryptionContext) async throws -> Data {
        try await open(data, associatedData: context.associatedData, by: vault.deadline())
    }

    private static let unboundAssociatedData = Data("com.pingidentity.PingStorage/v1/unbound\u{0}".utf8)

    /// Seals `data` with the current key. The key's checks speak of decrypting (the key item
    /// cannot be read as a key); here they are a failure to encrypt, with the same reason.
    private func seal(_ data: Data, associatedData: Data,
                      by deadline: Deadline) async throws -> (envelope: Data, keyID: KeyID, key: SymmetricKey) {
        let id: KeyID, key: SymmetricKey
        do {
            (id, key) = try await vault.currentKey(by: deadline)
        } catch let error as EncryptorError {
            throw EncryptorError.failedToEncrypt(error.reason)
        }
        do {
            return (try Envelope.seal(data, key: key, keyID: id, associatedData: associatedData), id, key)
        } catch {
            throw EncryptorError.failedToEncrypt(.cryptoFailure("sealing failed: \(error)"))
        }
    }

    /// The key new data is sealed with (loaded or created). For the test that looks for copies of
    /// the key outside its locked memory.
    package func currentKey() async throws -> SymmetricKey { try await vault.currentKey(by: vault.deadline()).1 }

    private func open(_ data: Data, associatedData: Data, by deadline: Deadline) async throws -> Data {
        let header: EnvelopeHeader
        do {
            header = try Envelope.header(of: data)
        } catch let error as EnvelopeError {
            throw EncryptorError.failedToDecrypt(.unsupportedFormat(
                "the stored item is not data SecuredKeyEncryptor can read (\(error)). It was left unchanged; "
                + "it may have been written without encryption or by a newer version."))
        }
        let key = try await vault.key(for: header.keyID, by: deadline)
        do {
            return try Envelope.open(data, key: key, associatedData: associatedData)
        } catch EnvelopeError.authenticationFailed {
            throw EncryptorError.failedToDecrypt(.authenticationFailed)
        } catch let error as EnvelopeError {
            throw EncryptorError.failedToDecrypt(.unsupportedFormat("the stored item cannot be decrypted: \(error)"))
        }
    }
}

/// ``KeychainStorage``'s way to this encryptor (``AccountSealer``): a value sealed for an item
/// knows its key, so that the storage recognises an unchanged save and confirms the key after it
/// wrote, without knowing this type.
extension SecuredKeyEncryptor: AccountSealer {
    /// Seals `plaintext` with the current key, bound to the item `context` describes. The sealed
    /// value recognises stored bytes that open, with that key, to the same plaintext
    /// (``PlaintextMatcher``: every envelope differs by its random nonce; bytes sealed with another
    /// key never match, so the save moves the item to the current key), and confirms after the
    /// write that the key item still holds that key (``KeyVault/confirm(_:by:)``: one read).
    func seal(_ plaintext: Data, for context: EncryptionContext, by deadline: Deadline) async throws -> SealedValue {
        let sealed = try await seal(plaintext, associatedData: context.associatedData, by: deadline)
        let matcher = PlaintextMatcher(plaintext: plaintext, keyID: sealed.keyID, key: sealed.key,
                                       associatedData: context.associatedData)
        let (vault, id) = (vault, sealed.keyID)
        return SealedValue(bytes: sealed.envelope, holdsSameValue: { matcher.matches($0) },
                           confirmKey: { deadline in try await vault.confirm(id, by: deadline) })
    }

    func open(_ stored: Data, for context: EncryptionContext, by deadline: Deadline) async throws -> Data {
        try await open(stored, associatedData: context.associatedData, by: deadline)
    }
}

/// Whether stored bytes are an envelope of one plaintext, sealed with one key for one item (see
/// ``SecuredKeyEncryptor/seal(_:for:by:)``). The plaintext is kept in locked memory
/// excluded from core dumps (`SecureBytes`) and wiped when the matcher is released; what an envelope
/// opens to is wiped once compared. Thread-safety: immutable; `Sendable`.
final class PlaintextMatcher: Sendable {
    private let expected: SecureBytes
    private let keyID: KeyID
    private let key: SymmetricKey
    private let associatedData: Data

    init(plaintext: Data, keyID: KeyID, key: SymmetricKey, associatedData: Data) {
        expected = SecureBytes(count: plaintext.count) { buffer in plaintext.copyBytes(to: buffer) }
        self.keyID = keyID
        self.key = key
        self.associatedData = associatedData
    }

    /// Whether `stored` opens, with the key, to the plaintext. Anything else (another key, another
    /// item, not an envelope, changed bytes) is false.
    func matches(_ stored: Data) -> Bool {
        guard let header = try? Envelope.header(of: stored), header.keyID == keyID,
              var opened = try? Envelope.open(stored, key: key, associatedData: associatedData) else { return false }
        defer { opened.wipe() }
        return expected.withUnsafeBytes { expected in opened.withUnsafeBytes { expected.elementsEqual($0) } }
    }
}
