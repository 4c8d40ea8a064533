#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

// MARK: - list

/// One item `list` found. Never holds the secret, only its size.
struct ListedItem: Sendable, Equatable {
    var account: String
    /// Whether the account is the item's `username` (it has no `account` attribute: Python
    /// keyring's and go-keyring's items, which `get` reads too).
    var accountFromUsername = false
    var service: String
    var label: String
    var path: String
    var collectionPath: String
    var created: Date
    var modified: Date
    var size: Int
    var contentType: String
    var encryption: Encryption
    /// For an envelope: the id of the key that sealed it (32 hex digits, not secret).
    var keyID: String?
    /// The `xdg:schema` attribute; PingStorage writes `com.pingidentity.PingStorage`.
    var schema: String?
    /// The app whose item it is (``AppIdentity/attribute``); nil: no app's.
    var app: String? = nil
    /// Whether the secret, neither JSON nor an envelope, is UTF-8 text (what `save --text`,
    /// secret-tool and Python keyring store), which `get --text` prints.
    var isPlainText = false
    /// Who wrote it, as far as its attributes and label tell; nil: told by ``schema`` alone.
    var writtenBy: ItemWriter? = nil

    /// ``writtenBy``, else PingStorage for its schema and another tool for the rest.
    var writer: ItemWriter { writtenBy ?? (schema == KeyringCommands.schemaName ? .pingStorage : .other) }

    var json: JSONValue {
        .object([
            ("account", .string(account)),
            ("accountAttribute", .string(accountFromUsername ? "username" : "account")),
            ("writtenBy", .string(writer.rawValue)),
            ("service", .string(service)),
            ("app", .string(app)),
            ("label", .string(label)),
            ("item", .string(path)),
            ("collection", .string(collectionPath)),
            ("created", .date(created)),
            ("modified", .date(modified)),
            ("size", .int(size)),
            ("contentType", .string(contentType)),
            ("encrypted", .string(encryption.rawValue)),
            ("keyID", .string(keyID)),
            ("schema", .string(schema)),
        ])
    }

    /// `binary/unknown`, or for text that is not JSON what it may be and how to read it.
    private var encryptionText: String {
        guard encryption == .unknown, isPlainText else { return encryption.humanText(keyID: keyID) }
        return "unknown: plain text, not JSON (stored with --text or by another tool, or another Encryptor's "
            + "output; get prints it as text)"
    }

    var human: String {
        let writer = switch writer {
        case .pingStorage: "PingStorage"
        case .pythonKeyring: "Python keyring (service and username, no account attribute)"
        case .goKeyring: "go-keyring (service and username, no account attribute)"
        case .other: "another tool (xdg:schema \(schema ?? "not set")"
            + (accountFromUsername ? "; service and username, no account attribute)" : ")")
        }
        return """
            \(account)
              service:    \(service)
              app:        \(AppIdentity.humanText(app))
              label:      \(label)
              item:       \(path)
              created:    \(Timestamp.iso8601(created))
              modified:   \(Timestamp.iso8601(modified))
              size:       \(size) bytes (\(contentType))
              encrypted:  \(encryptionText)
              written by: \(writer)
            """ + "\n\n"
    }
}

/// Who wrote an item `list` shows, told by what each writer puts on its items.
enum ItemWriter: String, Sendable, Equatable {
    /// `xdg:schema` is KeychainStorage's.
    case pingStorage
    /// Python keyring's Secret Service backend: `application` = `Python keyring library`.
    case pythonKeyring
    /// go-keyring: `service` and `username` (no `application`), labelled `Password for 'USER' on 'SERVICE'`.
    case goKeyring
    /// Anyone else (secret-tool, libsecret apps, …).
    case other

    /// The writer of an item with `attributes` and `label`, whose account is `account`.
    init(_ attributes: [String: String], label: String, account: ItemAccount) {
        if attributes["xdg:schema"] == KeyringCommands.schemaName {
            self = .pingStorage
        } else if attributes["application"] == "Python keyring library" {
            self = .pythonKeyring
        } else if account.isFromUsername, attributes["application"] == nil,
                  label == "Password for '\(account.name)' on '\(attributes["service"] ?? "")'" {
            // Its attributes alone would not do: KeePassXC adds its own (Title, UserName, …) to every item.
            self = .goKeyring
        } else {
            self = .other
        }
    }
}

/// What `list` prints.
struct ListReport: Sendable, Equatable {
    /// The collection's object path, or the file keyring's path.
    var collectionPath: String
    /// The `--service` filter; nil: PingStorage's items of any service and the default service's items.
    var service: String?
    /// The app filter (`--app`, or a sandbox's id); nil: every app's items.
    var app: String? = nil
    var items: [ListedItem]
    /// Where the items are and why (nil only in tests of the rest).
    var backend: KeychainBackendChoice? = nil

    var json: JSONValue {
        .object([
            ("collection", .string(collectionPath)),
            ("service", .string(service)),
            ("app", .string(app)),
            ("backend", backend?.json ?? .null),
            ("items", .array(items.map(\.json))),
        ])
    }

    var human: String {
        let scope = (service.map { "with service \($0)" }
            ?? "of PingStorage (any service) or with service \(KeychainConfiguration.defaultService)")
            + (app.map { " of app \($0)" } ?? "")
        let count = items.count == 1 ? "1 item" : "\(items.count) items"
        guard !items.isEmpty else { return "No items \(scope) in \(collectionPath).\n" }
        return "\(count) \(scope) in \(collectionPath):\n\n" + items.map(\.human).joined().dropLast()
    }
}
