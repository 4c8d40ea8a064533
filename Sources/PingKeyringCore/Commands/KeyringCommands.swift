#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

/// The commands that touch the keyring, on the backend ``KeychainStorage`` uses with the same
/// settings (the Secret Service, or in a sandbox the app's file keyring), each reporting which
/// and why. Each opens the keyring once (``KeyringInventory``, on the library's one backend seam)
/// and never tells the backends apart itself. `save` and `delete` go through ``KeychainStorage``
/// itself and `get` reads the item `KeychainStorage.get()` reads, so they find, write and delete
/// exactly the item an app would, and encrypt and decrypt with ``SecuredKeyEncryptor`` bound to
/// the item's service and account as KeychainStorage does. `list`, `search` and `lookup` read any
/// tool's items through the inventory, because the Storage API has no "every account" call.
enum KeyringCommands {
    /// The `xdg:schema` attribute of items PingStorage writes (the library's).
    static let schemaName = KeychainStorageSchemas.item
    /// The `xdg:schema` attribute of SecuredKeyEncryptor's key items (with a `key-id` attribute).
    static let keySchemaName = KeychainStorageSchemas.key

    // MARK: get

    /// The item's value: its JSON text, decrypted when it is a ``SecuredKeyEncryptor`` envelope;
    /// with `text`, any UTF-8 text (decrypted likewise); with `raw`, the bytes as stored.
    static func get(account: String, service: String, raw: Bool, text: Bool = false, settings: KeyringSettings)
        async throws(ToolError) -> GetReport {
        let inventory = try await settings.inventory(settings.configuration(service: service))
        let app = try await AppChoice.app(for: account, service: service, purpose: .read, settings: settings, in: inventory)
        let configuration = settings.configuration(service: service, app: app)
        // The item get() would read (the newest of any duplicates), its metadata and its secret
        // asked for at once (the search runs again if another client deletes it in between).
        let storage = KeychainStorage<String>(account: account, configuration: configuration)
        var report: GetReport?
        do {
            if let (info, secret, contentType) = try await storage.storedItem() {
                report = try await value(info, StoredSecret(bytes: secret, contentType: contentType), account: account,
                                         service: service, raw: raw, text: text, configuration: configuration)
            }
        } catch {
            throw ToolError.from(error)
        }
        guard var report else {
            let place = inventory.backend.filePath.map { "the file keyring \($0)" } ?? configuration.collection.description
            throw ToolError(kind: "notFound", message: "no item for account '\(account)' (service '\(service)') in \(place).")
        }
        report.backend = settings.backend(of: inventory)
        report.appWasChosen = settings.scopedApp == nil
        return report
    }

    /// What `get` prints of a stored value: its JSON text, decrypted when it is an envelope
    /// (bound to the item's service and account, as KeychainStorage binds it); with `raw`, the
    /// bytes as stored; with `text`, any UTF-8 text without NUL is accepted, not only JSON.
    private static func value(_ info: KeychainItemInfo, _ secret: StoredSecret, account: String,
                              service: String, raw: Bool, text: Bool, configuration: KeychainConfiguration)
        async throws(ToolError) -> GetReport {
        let encryption = Encryption.classify(secret.bytes)
        var value = secret.bytes
        if !raw {
            if encryption == .yes {
                // The context KeychainStorage gives its encryptor: the item's service and account.
                let context = EncryptionContext(service: info.attributes["service"] ?? service,
                                                account: info.attributes["account"] ?? account)
                value = try await decrypt(secret.bytes, context: context, configuration: configuration)
            }
            // Plain text (secret-tool's, Python keyring's, `save --text`'s) is printed as text: an app's
            // KeychainStorage fails on it, which the report warns of (GetReport.appReadsIt).
            guard Encryption.isJSONText(value) || Encryption.isPlainText(value) else {
                throw notText(account: account, service: service, size: value.count, decrypted: encryption == .yes)
            }
        }
        return GetReport(account: account, service: service, path: info.location, collectionPath: info.collection,
                         contentType: secret.reportedContentType, value: value, raw: raw, text: text, encryption: encryption,
                         keyID: Encryption.keyID(of: secret.bytes), app: info.attributes[AppIdentity.attribute],
                         appReadsIt: raw ? nil : Encryption.isJSONText(value))
    }

    /// Opens an envelope with the key in the configured collection, as
    /// `KeychainStorage(account:encryptor: SecuredKeyEncryptor(configuration:), configuration:)` does.
    /// - Throws: ``ToolError`` `keyNotFound`, `failedToDecrypt`, `unsupportedFormat` (exit 4),
    ///   `encryptionUnavailable`, or the keyring's errors; messages name the item, never its bytes.
    static func decrypt(_ envelope: Data, context: EncryptionContext, configuration: KeychainConfiguration)
        async throws(ToolError) -> Data {
        guard let encryptor = SecuredKeyEncryptor(configuration: configuration) else {
            throw encryptionUnavailable("the item was not decrypted and was left unchanged")
        }
        do {
            return try await encryptor.decrypt(data: envelope, context: context)
        } catch let error as EncryptorError {
            var failure = ToolError.from(error)
            failure.message = "the item for account '\(context.account)' (service '\(context.service)') cannot be "
                + "decrypted: \(failure.message)"
            if failure.kind == "keyNotFound" {
                failure.message += " 'ping-keyring doctor' lists the keys that are in the keyring."
            }
            throw failure
        } catch {
            throw ToolError.from(error)
        }
    }

    private static func notText(account: String, service: String, size: Int, decrypted: Bool) -> ToolError {
        let what = decrypted
            ? "an envelope that decrypts to \(size) bytes that are neither JSON nor UTF-8 text (not written by KeychainStorage)"
            : "\(size) bytes that are neither JSON nor UTF-8 text nor a SecuredKeyEncryptor envelope: written through an "
                + "Encryptor this tool does not have, or corrupt"
        return ToolError(
            kind: "corruptItem",
            message: "the item for account '\(account)' (service '\(service)') holds \(what). It was left "
                + "unchanged; 'ping-keyring get --raw' prints the bytes as stored.")
    }

    /// libgcrypt cannot start, so `SecuredKeyEncryptor(configuration:)` is nil.
    static func encryptionUnavailable(_ consequence: String) -> ToolError {
        ToolError(kind: "encryptionUnavailable",
                  message: "encryption is unavailable on this machine: libgcrypt could not be initialised "
                      + "(install or upgrade libgcrypt20); \(consequence).")
    }

    // MARK: save

    /// Stores `input` (JSON text) for the account through KeychainStorage's own write path; with
    /// `encrypt`, sealed by `SecuredKeyEncryptor(configuration:)` exactly as an app's
    /// `KeychainStorage(account:encryptor:configuration:)` would (bound to the service and account).
    /// With `text`, stdin is stored as plain text (``plainText(_:)``), not checked for JSON.
    static func save(account: String, service: String, encrypt: Bool, text: Bool = false, settings: KeyringSettings,
                     input: () async throws(PingKeyring.InputFailure) -> Data) async throws(ToolError) -> SaveReport {
        let raw: Data
        do {
            raw = try await input()
        } catch {
            throw ToolError(kind: "invalidInput",
                            message: "could not read the value from stdin (\(error.reason)). Nothing was saved.")
        }
        let value = text ? try plainText(raw) : trimmingWhitespace(raw)
        guard !value.isEmpty else {
            throw ToolError(
                kind: "invalidInput",
                message: "no value was given: type it when asked (at a terminal), or give it on stdin, e.g. from a "
                    + "file: ping-keyring save --account \(account) < FILE. Nothing was saved.")
        }
        guard text || Encryption.isJSONText(value) else {
            throw ToolError(
                kind: "invalidInput",
                message: "stdin is not JSON text. ping-keyring stores what KeychainStorage would: the item's JSON "
                    + "(a String item is \"…\" with the quotes); to store plain text, as secret-tool and Python "
                    + "keyring read it, add --text. Nothing was saved.")
        }
        let inventory = try await settings.inventory(settings.configuration(service: service))
        let app = try await AppChoice.app(for: account, service: service, purpose: .save, settings: settings, in: inventory)
        let configuration = settings.configuration(service: service, app: app)
        var encryptor: (any ContextualEncryptor)?
        if encrypt {
            guard let secured = SecuredKeyEncryptor(configuration: configuration) else {
                throw encryptionUnavailable("nothing was saved")
            }
            encryptor = secured
        }
        let verbatim = VerbatimValue(bytes: value, encryptor: encryptor)
        let storage = KeychainStorage<String>(account: account, encryptor: verbatim, configuration: configuration)
        do {
            // The item passed is a placeholder: VerbatimValue replaces its JSON with `value`.
            try await storage.save(item: "")
            let info = try await storage.itemInfo()
            // In a file keyring, the item's location names the file's position (/file/NAME/N): the
            // collection is the file.
            return SaveReport(account: account, service: service, path: info?.location,
                              collectionPath: info?.collection, size: value.count,
                              encryption: encrypt ? .yes : .no, keyID: verbatim.sealedKeyID,
                              app: configuration.appIdentity.id, appWasChosen: settings.scopedApp == nil,
                              backend: settings.backend(of: inventory))
        } catch {
            throw ToolError.from(error)
        }
    }

    /// What `save --text` stores of stdin: the bytes but for one final newline (LF or CR LF, which
    /// `echo` adds), as secret-tool and Python keyring will read them.
    /// - Throws: ``ToolError`` `invalidInput` for bytes that are not UTF-8 text or contain NUL.
    static func plainText(_ data: Data) throws(ToolError) -> Data {
        var text = data
        if text.last == 0x0A { text.removeLast() }
        if data.last == 0x0A, text.last == 0x0D { text.removeLast() }
        guard Encryption.isPlainText(text) else {
            throw ToolError(kind: "invalidInput",
                            message: "stdin is not UTF-8 text without NUL characters, which --text stores. Nothing was saved.")
        }
        return text
    }

    /// `data` without leading and trailing JSON whitespace (space, tab, CR, LF).
    static func trimmingWhitespace(_ data: Data) -> Data {
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        guard let first = data.firstIndex(where: { !whitespace.contains($0) }),
              let last = data.lastIndex(where: { !whitespace.contains($0) }) else { return Data() }
        return Data(data[first...last])
    }

    // MARK: delete

    /// Deletes every item of the account that the app (``AppChoice``) reaches through
    /// ``KeychainStorage/delete()``: its own and those with no app, never another app's (nothing
    /// to delete is success), and says whether there was one.
    static func delete(account: String, service: String, settings: KeyringSettings) async throws(ToolError) -> DeleteReport {
        let inventory = try await settings.inventory(settings.configuration(service: service))
        let app = try await AppChoice.app(for: account, service: service, purpose: .delete, settings: settings, in: inventory)
        let storage = KeychainStorage<String>(account: account, configuration: settings.configuration(service: service, app: app))
        do {
            let existed = try await storage.itemInfo() != nil
            try await storage.delete()
            return DeleteReport(account: account, service: service, app: app, appWasChosen: settings.scopedApp == nil,
                                deleted: existed, backend: settings.backend(of: inventory))
        } catch {
            throw ToolError.from(error)
        }
    }
}
