#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Storage in the user's keyring through the freedesktop Secret Service (GNOME Keyring,
/// KeePassXC, KWallet): the Linux counterpart of the iOS SDK's keychain storage, with the same
/// initializers.
///
/// The item is `encryptor.encrypt(JSONEncoder().encode(item))`, kept as one Secret Service item
/// with the attributes `service` (``KeychainConfiguration/service``), `account`, `username`
/// (= account), `pingstorage-app` (the app, ``KeychainConfiguration/appIdentity``) and
/// `xdg:schema` = `com.pingidentity.PingStorage`, labelled "account (service)".
/// Text is stored as `text/plain` (so `secret-tool lookup service … account …` prints the JSON
/// when no encryptor is used), other bytes as `application/octet-stream`.
///
/// Behaviour that differs from iOS, on purpose:
/// - `delete()` of a missing item succeeds.
/// - `get()` throws when the keyring cannot be read (locked, unavailable, timed out); it returns
///   nil only when there is no item.
/// - `save` replaces the item's secret in place; items of the same account that other tools or
///   crashed processes left behind are removed, so exactly one remains.
///
/// Cacheable (``CacheStrategy/CACHE``), the cache follows the keyring across the app's processes:
/// another process's save or delete of the item reaches a cached `get` as soon as the keyring
/// announces it, within 50 ms where it may not (GNOME Keyring, KeePassXC), see ``StorageDelegate``.
///
/// Thread-safety: safe from any number of tasks; operations on the same account are serialized
/// within the process. Every call's keyring work ends within ``KeychainConfiguration/timeout``
/// (``SecuredKeyEncryptor``'s key loading included; a custom encryptor's own time is its own).
public class KeychainStorage<T: Codable & Sendable>: StorageDelegate<T>, @unchecked Sendable {
    // @unchecked Sendable: see StorageDelegate; the properties added here are immutable Sendable values.

    /// The account this storage keeps its item under.
    public var account: String { items.account }
    /// Where in the Secret Service the item lives.
    public var configuration: KeychainConfiguration { items.configuration }
    private let items: KeychainItems

    // The initializers are designated, as on iOS, so that subclasses written for iOS can call them.

    /// Creates a keychain storage for `account` (the iOS SDK 1.x initializer).
    /// - Parameters:
    ///   - account: identifies the item; must not be empty (checked on first use).
    ///   - encryptor: applied to the item's JSON before it is stored. Default: none.
    ///   - cacheable: keep the item in memory too (``CacheStrategy/CACHE``).
    public init(account: String, encryptor: Encryptor = NoEncryptor(), cacheable: Bool = false) {
        items = KeychainItems(account: account, configuration: .standard)
        super.init(delegate: KeychainStore<T>(items: items, encryptor: encryptor), cacheable: cacheable)
    }

    /// Creates a keychain storage for `account` with a cache strategy (the iOS SDK 2.x initializer).
    public init(account: String, encryptor: Encryptor = NoEncryptor(), cacheStrategy: CacheStrategy) {
        items = KeychainItems(account: account, configuration: .standard)
        super.init(delegate: KeychainStore<T>(items: items, encryptor: encryptor), cacheStrategy: cacheStrategy)
    }

    /// Creates a keychain storage with Linux-specific settings: service name, collection,
    /// deadline, prompt and transport policy, bus.
    public init(account: String, encryptor: Encryptor = NoEncryptor(), cacheStrategy: CacheStrategy = .NO_CACHE,
                configuration: KeychainConfiguration) {
        items = KeychainItems(account: account, configuration: configuration)
        super.init(delegate: KeychainStore<T>(items: items, encryptor: encryptor), cacheStrategy: cacheStrategy)
    }

    /// The storage of `account` in `runtime`'s place for the configuration (tests give their own runtime).
    init(account: String, encryptor: Encryptor, cacheStrategy: CacheStrategy,
         configuration: KeychainConfiguration, runtime: KeychainRuntime) {
        items = KeychainItems(account: account, configuration: configuration, runtime: runtime)
        super.init(delegate: KeychainStore<T>(items: items, encryptor: encryptor), cacheStrategy: cacheStrategy)
    }

    /// Where the item lives (collection, path, label, attributes, times), never its secret; nil
    /// when there is no item. When duplicates exist, the one `get()` would read.
    /// - Throws: ``KeychainError`` as for `get()`.
    public func itemInfo() async throws -> KeychainItemInfo? {
        try await KeychainError.relabelling(.retrieve) { try await items.info() }
    }

    /// ``itemInfo()`` and the item's stored bytes (as saved: JSON, or an encryptor's envelope),
    /// asked for at once; nil when there is no item. For ping-keyring's `get`.
    /// - Throws: ``KeychainError`` as for `get()`.
    package func storedItem() async throws -> (info: KeychainItemInfo, secret: Data, contentType: String?)? {
        try await KeychainError.relabelling(.retrieve) {
            try await items.infoAndSecret().map { ($0.info, $0.secret.bytes, $0.secret.contentType) }
        }
    }
}

/// An item in the keyring, as an actor: the iOS SDK's `Keychain<T>`, the store behind its
/// `KeychainStorage`, with the same rules as ``KeychainStorage`` (JSON through the encryptor, one
/// item per service and account, deadlines, errors) and no cache.
///
/// ``KeychainStorage`` does not use it: its store is not an actor, so a call from the main actor
/// goes from there straight to the keyring work (on the global executor) without queueing on
/// this actor first. Use `Keychain` where iOS code names it.
///
/// Thread-safety: an actor; safe from any task, and operations on one account are serialized
/// within the process as with ``KeychainStorage``, whose deadlines apply.
public actor Keychain<T: Codable & Sendable>: Storage {
    private let store: KeychainStore<T>

    /// The item of `account` under the default configuration (the iOS SDK's initializer).
    /// - Parameters:
    ///   - account: identifies the item; must not be empty (checked on first use).
    ///   - encryptor: applied to the item's JSON before it is stored. Default: none.
    public init(account: String, encryptor: Encryptor = NoEncryptor()) {
        self.init(account: account, encryptor: encryptor, configuration: .standard)
    }

    /// The item of `account` where `configuration` keeps it.
    public init(account: String, encryptor: Encryptor = NoEncryptor(), configuration: KeychainConfiguration) {
        store = KeychainStore(items: KeychainItems(account: account, configuration: configuration), encryptor: encryptor)
    }

    /// The item of `account` in `runtime`'s place for the configuration (tests give their own runtime).
    init(account: String, encryptor: Encryptor, configuration: KeychainConfiguration, runtime: KeychainRuntime) {
        store = KeychainStore(items: KeychainItems(account: account, configuration: configuration, runtime: runtime),
                              encryptor: encryptor)
    }

    /// Saves `item`, replacing the account's item.
    /// - Throws: ``KeychainError/unableToSave(_:)`` with the reason; an encryptor's own error.
    public func save(item: T) async throws { try await store.save(item: item) }

    /// The account's item; nil only when there is none.
    /// - Throws: ``KeychainError/unableToRetrieve(_:)`` with the reason (a locked keyring is not
    ///   nil); an encryptor's own error.
    public func get() async throws -> T? { try await store.get() }

    /// Deletes the account's item; no item is not an error.
    /// - Throws: ``KeychainError/unableToDelete(_:)`` with the reason.
    public func delete() async throws { try await store.delete() }
}

/// The delegate behind ``KeychainStorage``: JSON, the encryptor (as an ``AccountSealer``), and the
/// item rules (``KeychainItems``).
struct KeychainStore<T: Codable & Sendable>: Storage {
    let items: KeychainItems
    /// The encryptor, seen from below: chosen once, here.
    let sealer: any AccountSealer

    init(items: KeychainItems, encryptor: any Encryptor) {
        self.items = items
        sealer = encryptor.sealer
    }

    private var context: EncryptionContext {
        EncryptionContext(service: items.configuration.service, account: items.account)
    }

    /// Saves `item`; a ``KeychainError`` from any floor below (the encryptor's key storage among
    /// them) is thrown as ``KeychainError/unableToSave(_:)`` with its reason.
    func save(item: T) async throws {
        try await KeychainError.relabelling(.save) {
            try items.validate()
            // Sorted keys: the same item must encode to the same bytes, or a save of an unchanged value
            // could not be recognised and skipped (Foundation on Linux varies the key order).
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            var json = try encoder.encode(item)
            defer { json.wipe() }
            try await items.save(json, sealer: sealer, context: context)
        }
    }

    /// Reads the item; a ``KeychainError`` is thrown as ``KeychainError/unableToRetrieve(_:)``.
    func get() async throws -> T? {
        try await KeychainError.relabelling(.retrieve) { try await read() }
    }

    /// Deletes the item; a ``KeychainError`` is thrown as ``KeychainError/unableToDelete(_:)``.
    func delete() async throws {
        try await KeychainError.relabelling(.delete) { try await items.delete() }
    }

    /// The item's bytes read and opened by one deadline.
    private func read() async throws -> T? {
        let deadline = items.deadline()
        guard var stored = try await items.read(by: deadline) else { return nil }
        var json = try await sealer.open(stored.bytes, for: context, by: deadline)
        // The plaintext and the stored bytes are wiped once decoded; when they share a buffer
        // (NoEncryptor), wiping `json` first copies it and wiping `stored` then clears the original.
        defer {
            json.wipe()
            stored.bytes.wipe()
        }
        do {
            return try JSONDecoder().decode(T.self, from: json)
        } catch let error as DecodingError {
            throw KeychainError.unableToRetrieve(.corruptItem(.init(
                message: "The stored item for account '\(items.account)' is not a \(T.self): \(Self.describe(error)). "
                    + "It was left in the keyring unchanged.",
                recovery: "Save a new value, or delete the item.",
                detail: "service \(items.configuration.service), \(stored.bytes.count) bytes")))
        }
    }

    /// A description of a decoding failure that names where it failed but never quotes the data
    /// (JSONDecoder's own messages can include characters of the secret).
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "the top level" : keys.joined(separator: ".")
        }
        switch error {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "invalid value at \(path(context))"
        case .keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)' at \(path(context))"
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(path(context))"
        case .valueNotFound(let type, let context):
            return "missing \(type) value at \(path(context))"
        @unknown default:
            return "undecodable"
        }
    }
}
