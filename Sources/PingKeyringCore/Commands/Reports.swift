#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage
import PingStorageCrypto

/// Whether a stored value is encrypted: PingStorage's envelope (what `SecuredKeyEncryptor`
/// writes) is a definite yes, UTF-8 JSON text a definite no, and anything else "binary/unknown"
/// (another Encryptor's output, or corrupt).
enum Encryption: String, Sendable, Equatable {
    /// The value is a `SecuredKeyEncryptor` envelope (it starts with the envelope's magic bytes,
    /// which no UTF-8 text can).
    case yes
    /// The value is UTF-8 JSON text: stored as KeychainStorage writes it without an encryptor.
    case no
    /// Neither: encrypted by some other Encryptor, or corrupt.
    case unknown

    /// Classifies stored bytes without printing or keeping them.
    static func classify(_ bytes: Data) -> Encryption {
        if Envelope.isEnvelope(bytes) { return .yes }
        return isJSONText(bytes) ? .no : .unknown
    }

    /// The id (32 hex digits) of the key that sealed an envelope, read from its header without
    /// decrypting; nil when `bytes` is not an envelope or its header is unreadable (truncated,
    /// or a format version this build does not know).
    static func keyID(of bytes: Data) -> String? {
        guard Envelope.isEnvelope(bytes) else { return nil }
        return (try? Envelope.header(of: bytes))?.keyID.hexString
    }

    /// UTF-8 text that is exactly one JSON value, fragments such as `"text"` included: read by
    /// ``JSONValue/init(parsing:)``, ping-keyring's one JSON reader (strict RFC 8259: no raw
    /// control characters, NUL included, and no invalid UTF-8).
    static func isJSONText(_ bytes: Data) -> Bool { JSONValue(parsing: bytes) != nil }

    /// UTF-8 text without NUL: what `save --text` stores and `get --text` prints.
    static func isPlainText(_ bytes: Data) -> Bool {
        !bytes.contains(0) && String(data: bytes, encoding: .utf8) != nil
    }

    /// What human output shows; `keyID` is the envelope's, for ``yes``.
    func humanText(keyID: String?) -> String {
        switch self {
        case .yes: keyID.map { "yes (SecuredKeyEncryptor, key \($0))" }
            ?? "yes (SecuredKeyEncryptor envelope with an unreadable header)"
        case .no: "no (JSON text)"
        case .unknown: "binary/unknown"
        }
    }
}

/// The provider behind `org.freedesktop.secrets`, as the doctor shows it.
struct ProviderInfo: Sendable, Equatable {
    /// GNOME Keyring, KWallet, KeePassXC, or the executable's file name.
    var name: String
    /// The provider's executable as `/proc/PID/exe` shows it (not the name a process gives
    /// itself); nil when the process is not visible (another PID namespace).
    var executable: String?
    var processID: UInt32?
    var uniqueName: String?
    /// `plain` or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    var transport: String

    var description: String {
        var details = [executable ?? "executable not visible", "pid \(processID.map(String.init) ?? "unknown")"]
        if let uniqueName { details.append(uniqueName) }
        return "\(name) (\(details.joined(separator: ", ")))"
    }

    var json: JSONValue {
        .object([
            ("name", .string(name)),
            ("executable", .string(executable)),
            ("pid", processID.map { .int(Int($0)) } ?? .null),
            ("uniqueName", .string(uniqueName)),
            ("transport", .string(transport)),
        ])
    }
}

// MARK: - get, save, delete

/// What `get` prints: the stored value, and where it came from.
struct GetReport: Sendable, Equatable {
    var account: String
    var service: String
    var path: String
    var collectionPath: String
    var contentType: String
    /// What is printed: the JSON text (decrypted when the item holds an envelope), or with `--raw`
    /// the bytes exactly as stored.
    var value: Data
    /// `--raw`: the bytes as stored, unchecked and not decrypted.
    var raw: Bool
    /// `--text`: plain text, printed as it is with a newline.
    var text = false
    /// What the stored bytes are (classified before any decryption).
    var encryption: Encryption
    /// For an envelope: the id of the key that sealed it.
    var keyID: String?
    /// The item's app (``AppIdentity/attribute``); nil: no app's.
    var app: String? = nil
    /// Whether ping-keyring chose the app (no `--app`, outside a sandbox: ``AppChoice``); only
    /// then does human output name it, as it was not asked for (JSON always has `app`).
    var appWasChosen = false
    /// Where the item is and why (human output prints it on stderr, keeping stdout the value).
    var backend: KeychainBackendChoice? = nil
    /// Whether an app's `KeychainStorage.get()` reads the value: it is JSON text. False for plain
    /// text (secret-tool's, Python keyring's, `save --text`'s), on which it throws `corruptItem`;
    /// nil with `--raw` (not looked at).
    var appReadsIt: Bool? = true

    /// Human output: JSON text ending with exactly one newline of its own (one is added unless
    /// the text already ends with one); plain text, and any text with `--text`, with one newline
    /// added (what `save --text` dropped); with `--raw` the bytes exactly as stored.
    var human: Data {
        if raw { return value }
        return !text && appReadsIt != false && value.last == 0x0A ? value : value + Data("\n".utf8)
    }

    /// What human output prints on stderr, keeping stdout the value: the item's app when
    /// ping-keyring chose which app to read as (the `backend:` line is added by the caller), and
    /// a warning when an app's KeychainStorage cannot read the value.
    var humanNotes: String {
        (appWasChosen ? "app: \(AppIdentity.humanText(app))\n" : "")
            + (appReadsIt == false ? Self.plainTextWarning : "")
    }

    /// Said on stderr when `get` prints plain text.
    static let plainTextWarning = "ping-keyring: warning: the value is plain text, not JSON: printed as it is, but an app's "
        + "KeychainStorage.get() fails on it with corruptItem (secret-tool, Python keyring and 'save --text' store "
        + "plain text; 'save' without --text stores JSON an app reads)\n"

    /// `value` is the stored JSON value itself, embedded in the document (`encoding` `json`); with
    /// `--raw`, bytes that are not JSON are a string: the text (`utf8`), or for bytes that are not
    /// UTF-8 text (an envelope) base64 (`base64`). `encrypted` and `keyID` describe the item as stored.
    var json: JSONValue {
        let (encoding, shown) = Self.representation(of: value)
        return .object([
            ("account", .string(account)),
            ("service", .string(service)),
            ("app", .string(app)),
            ("item", .string(path)),
            ("collection", .string(collectionPath)),
            ("contentType", .string(contentType)),
            ("size", .int(value.count)),
            ("encrypted", .string(encryption.rawValue)),
            ("keyID", .string(keyID)),
            ("backend", backend?.json ?? .null),
            ("appReadsIt", appReadsIt.map(JSONValue.bool) ?? .null),
            ("encoding", .string(encoding)),
            ("value", shown),
        ])
    }

    /// How `--json` shows a value: `json` and the JSON value itself (re-indented, numbers and
    /// member order as stored); `utf8` and a string for other text; `base64` and a string for
    /// bytes that are not UTF-8 text or contain NUL.
    static func representation(of value: Data) -> (encoding: String, value: JSONValue) {
        if let parsed = JSONValue(parsing: value) { return ("json", parsed) }
        if !value.contains(0), let text = String(data: value, encoding: .utf8) { return ("utf8", .string(text)) }
        return ("base64", .string(value.base64EncodedString()))
    }
}

/// What `save` prints (never the value).
struct SaveReport: Sendable, Equatable {
    var account: String
    var service: String
    var path: String?
    var collectionPath: String?
    /// The size of the JSON text read from stdin (before encryption).
    var size: Int
    /// `yes` with `--encrypt`, else `no`.
    var encryption: Encryption
    /// With `--encrypt`: the id of the key the value was sealed with.
    var keyID: String?
    /// The app the item (and its key) now belongs to.
    var app: String? = nil
    /// Whether ping-keyring chose the app (no `--app`, outside a sandbox: ``AppChoice``); only
    /// then does human output name it, as it was not asked for (JSON always has `app`).
    var appWasChosen = false
    /// Where the item is and why.
    var backend: KeychainBackendChoice? = nil

    var json: JSONValue {
        .object([
            ("account", .string(account)),
            ("service", .string(service)),
            ("app", .string(app)),
            ("item", .string(path)),
            ("collection", .string(collectionPath)),
            ("size", .int(size)),
            ("encrypted", .string(encryption.rawValue)),
            ("keyID", .string(keyID)),
            ("backend", backend?.json ?? .null),
        ])
    }

    var human: String {
        let encrypted = encryption == .yes
            ? ", encrypted with SecuredKeyEncryptor" + (keyID.map { " (key \($0))" } ?? "") : ""
        return "Saved \(size) bytes for account '\(account)' (service \(service)"
            + (appWasChosen ? app.map { ", app \($0)" } ?? "" : "") + ")" + (path.map { " in \($0)" } ?? "")
            + encrypted + ".\n"
    }
}

/// What `delete` prints.
struct DeleteReport: Sendable, Equatable {
    var account: String
    var service: String
    /// The app acted as: its items and those with no app were deleted; nil: no app has an item
    /// of the account, so only items with no app were.
    var app: String? = nil
    /// Whether ping-keyring chose the app (no `--app`, outside a sandbox: ``AppChoice``); only
    /// then does human output name it, as it was not asked for (JSON always has `app`).
    var appWasChosen = false
    /// Whether there was an item to delete.
    var deleted: Bool
    /// Where the items were and why.
    var backend: KeychainBackendChoice? = nil

    var json: JSONValue {
        .object([("account", .string(account)), ("service", .string(service)), ("app", .string(app)),
                 ("deleted", .bool(deleted)),
                 ("backend", backend?.json ?? .null)])
    }

    var human: String {
        deleted
            ? "Deleted the item of account '\(account)' (service \(service)\(scope)).\n"
            : "No item for account '\(account)' (service \(service)\(scope)): nothing to delete.\n"
    }

    /// Whose items were reached, when ping-keyring chose: the app's own and those with no app,
    /// or only the latter.
    private var scope: String {
        guard appWasChosen else { return "" }
        return ", " + (app.map { "items of app \($0) or of no app" } ?? "items of no app")
    }
}
