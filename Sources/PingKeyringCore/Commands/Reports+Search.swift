#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

// MARK: - search

/// One item `search` found: its metadata, never its secret. A provider that hides a locked item's
/// metadata leaves only its path.
struct SearchedItem: Sendable, Equatable {
    var path: String
    var label: String?
    var created: Date?
    var modified: Date?
    var isLocked: Bool
    var attributes: [String: String]

    /// The row of an item; an item whose metadata the provider hides while it is locked (its
    /// location alone) has no label or times.
    init(_ item: KeyringItem) {
        let info = item.info
        path = info.location
        (isLocked, attributes) = (info.isLocked, info.attributes)
        (label, created, modified) = item.metadataHidden ? (nil, nil, nil) : (info.label, info.created, info.modified)
    }

    var json: JSONValue {
        .object([
            ("item", .string(path)),
            ("label", .string(label)),
            ("created", created.map(JSONValue.date) ?? .null),
            ("modified", modified.map(JSONValue.date) ?? .null),
            ("locked", .bool(isLocked)),
            ("attributes", .object(attributes.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
        ])
    }

    /// secret-tool's layout (`[PATH]`, then `name = value` lines), without the secret.
    var human: String {
        var lines = ["[\(path)]"]
        if let label { lines.append("label = \(label)") }
        if let created { lines.append("created = \(Timestamp.iso8601(created))") }
        if let modified { lines.append("modified = \(Timestamp.iso8601(modified))") }
        lines.append("locked = \(isLocked ? "yes" : "no")")
        lines += attributes.sorted { $0.key < $1.key }.map { "attribute.\($0.key) = \($0.value)" }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// What `search` prints.
struct SearchReport: Sendable, Equatable {
    /// The collection's object path, or the file keyring's path.
    var collectionPath: String
    var attributes: [String: String]
    var items: [SearchedItem]
    /// Where the items are and why.
    var backend: KeychainBackendChoice? = nil

    var json: JSONValue {
        .object([
            ("collection", .string(collectionPath)),
            ("attributes", .object(attributes.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("backend", backend?.json ?? .null),
            ("items", .array(items.map(\.json))),
        ])
    }

    var human: String { items.map(\.human).joined(separator: "\n") }

    /// `service = S, account = A`, for messages.
    static func describe(_ attributes: [String: String]) -> String {
        attributes.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
    }
}

// MARK: - lookup

/// What `lookup` prints: the first matching item's secret, as stored.
struct LookupReport: Sendable, Equatable {
    var path: String
    var collectionPath: String
    var contentType: String
    var value: Data
    /// Where the item is and why.
    var backend: KeychainBackendChoice? = nil

    /// `--json`: the value as `get --json` shows it (`encoding` json, utf8 or base64).
    var json: JSONValue {
        let (encoding, shown) = GetReport.representation(of: value)
        return .object([
            ("item", .string(path)),
            ("collection", .string(collectionPath)),
            ("contentType", .string(contentType)),
            ("size", .int(value.count)),
            ("backend", backend?.json ?? .null),
            ("encoding", .string(encoding)),
            ("value", shown),
        ])
    }
}

// MARK: - lock, unlock

/// What `lock` and `unlock` print.
struct LockReport: Sendable, Equatable {
    var collectionPath: String
    var label: String
    /// `lock` (true) or `unlock`: also the collection's state afterwards (the command checks it).
    var lock: Bool
    /// Whether it was in the other state before.
    var changed: Bool
    var backend: KeychainBackendChoice? = nil

    var json: JSONValue {
        .object([
            ("collection", .string(collectionPath)),
            ("label", .string(label)),
            ("locked", .bool(lock)),
            ("changed", .bool(changed)),
            ("backend", backend?.json ?? .null),
        ])
    }

    var human: String {
        let name = "\(collectionPath)" + (label.isEmpty ? "" : " (\(label))")
        return changed ? "\(lock ? "Locked" : "Unlocked") the collection \(name).\n"
            : "The collection \(name) was already \(lock ? "locked" : "unlocked").\n"
    }
}
