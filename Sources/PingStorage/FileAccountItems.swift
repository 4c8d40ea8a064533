#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
import SecretService
import Waiting

/// ``KeychainItems``'s rules on a file keyring: the same items (attributes, label, adoption of
/// Python keyring and go-keyring items, the newest of duplicates), each operation one
/// transaction of the file (``FileKeyring/modify(by:_:)``), so that nothing another process of
/// the app writes at the same moment is lost, and no create race can leave duplicates.
struct FileAccountItems: Sendable {
    let items: KeychainItems
    let keyring: FileKeyring
    let deadline: Deadline

    /// The newest item's secret, or nil when the account has none.
    func read() async throws -> SecretValue? {
        guard let (stored, index) = try await newestItem() else { return nil }
        return SecretValue(bytes: stored[index].secret.copiedData(), contentType: stored[index].contentType)
    }

    /// The newest item's metadata and secret, from one read of the file (both of one version of
    /// it); nil when the account has none.
    func infoAndSecret() async throws -> (info: SecretItemInfo, secret: SecretValue)? {
        guard let (stored, index) = try await newestItem() else { return nil }
        return (try stored[index].info(path: Self.itemPath(keyring.path, index)),
                SecretValue(bytes: stored[index].secret.copiedData(), contentType: stored[index].contentType))
    }

    /// The file's items and the index of the one a read takes, or nil when the account has none.
    private func newestItem() async throws -> (stored: [FileKeyringItem], index: Int)? {
        let stored = try await run { () async throws(FileKeyringError) in try await keyring.items(by: deadline.instant) }
        return items.chosenFileItem(in: stored, for: .toRead).map { (stored, $0) }
    }

    /// Leaves exactly one item of the account, holding `value`. Nothing is written when that is
    /// already so, the item's secret counting as `value` when `holds` says so.
    /// - Returns: whether the file was written.
    func write(_ value: SecretValue, sameValue holds: @escaping @Sendable (Data) -> Bool) async throws -> Bool {
        let secret = FileKeyringSecret(copying: value.bytes)
        let (label, attributes, rules) = (items.label, items.itemAttributes, items)
        do {
            try await run { () async throws(FileKeyringError) in
                try await keyring.modify(by: deadline.instant) { stored throws(FileKeyringError) in
                    guard let target = rules.chosenFileItem(in: stored, for: .toKeep) else {
                        stored.append(FileKeyringItem(label: label, attributes: attributes, secret: secret))
                        return
                    }
                    let duplicates = stored.indices.filter { $0 != target && rules.belongsToAccount(stored[$0].attributes) }
                    var item = stored[target]
                    if item.secret != secret, !Self.secret(item.secret, satisfies: holds) { item.secret = secret }
                    item.label = label
                    item.attributes.merge(attributes) { $1 }
                    guard item != stored[target] || !duplicates.isEmpty else { throw FileKeyringError.aborted("unchanged") }
                    if item.label != stored[target].label || item.attributes != stored[target].attributes {
                        Log.info("Account '\(rules.account)': giving the file keyring's item \(target + 1) PingStorage's label and attributes")
                    }
                    if !duplicates.isEmpty {
                        Log.info("Account '\(rules.account)': removing \(duplicates.count) duplicate item(s) from the file keyring")
                    }
                    stored[target] = item
                    for index in duplicates.reversed() { stored.remove(at: index) }
                }
            }
        } catch is Unchanged {
            return false
        }
        return true
    }

    /// Removes every item of the account; nothing to remove is success (and writes nothing).
    func delete() async throws {
        let rules = items
        do {
            try await run { () async throws(FileKeyringError) in
                try await keyring.modify(by: deadline.instant) { stored throws(FileKeyringError) in
                    let before = stored.count
                    stored.removeAll { rules.belongsToAccount($0.attributes) }
                    if stored.count == before { throw FileKeyringError.aborted("unchanged") }
                }
            }
        } catch is Unchanged {
            return
        }
    }

    /// The newest item's metadata, with a path that names the file and the item's position in it
    /// (`/file/NAME/N`: not a D-Bus object).
    func info() async throws -> SecretItemInfo? {
        guard let (stored, index) = try await newestItem() else { return nil }
        return try stored[index].info(path: Self.itemPath(keyring.path, index))
    }

    /// `/file/NAME/N` for the item at `index` of the keyring at `path` (NAME: the file's name
    /// without `.keyring`, in the characters object paths allow).
    static func itemPath(_ path: String, _ index: Int) throws -> ItemPath {
        let file = path.split(separator: "/").last.map(String.init) ?? "keyring"
        let name = (file.hasSuffix(".keyring") ? String(file.dropLast(8)) : file).map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber) ? character : "_"
        }
        return try ItemPath("/file/\(name.isEmpty ? "_" : String(name))/\(index + 1)")
    }

    /// A transaction abandoned on purpose: there was nothing to change.
    /// Whether `secret` passes `holds`, given a copy of its bytes that is wiped afterwards.
    private static func secret(_ secret: FileKeyringSecret, satisfies holds: (Data) -> Bool) -> Bool {
        var copy = secret.withUnsafeBytes { Data($0) }
        defer { copy.wipe() }
        return holds(copy)
    }

    private struct Unchanged: Error {}

    private func run<Value>(_ body: () async throws(FileKeyringError) -> Value) async throws -> Value {
        do {
            return try await body()
        } catch where error.code == .aborted {
            throw Unchanged()
        } catch {
            throw KeychainError(error)
        }
    }
}

extension KeychainItems {
    /// Which of a file's items is the account's for `choice` (the order of ``chosen(_:for:)``,
    /// with the position in the file in place of the item number).
    func chosenFileItem(in stored: [FileKeyringItem], for choice: DuplicateChoice) -> Int? {
        stored.indices.filter { belongsToAccount(stored[$0].attributes) }.max { a, b in
            ItemAge(stored[a], position: a).isOlder(than: ItemAge(stored[b], position: b), for: choice)
        }
    }
}

extension ItemAge {
    init(_ item: FileKeyringItem, position: Int) {
        self.init(modified: Date(timeIntervalSince1970: Double(item.modified)),
                  created: Date(timeIntervalSince1970: Double(item.created)), number: position, path: "")
    }
}

extension FileKeyringItem {
    func info(path: ItemPath) throws -> SecretItemInfo {
        SecretItemInfo(path: path, label: label, attributes: attributes,
                       created: Date(timeIntervalSince1970: Double(created)),
                       modified: Date(timeIntervalSince1970: Double(modified)), isLocked: false)
    }
}

extension FileKeyringSecret {
    /// The bytes, as Data for the layers above (which wipe it once used).
    func copiedData() -> Data { withUnsafeBytes { Data($0) } }
}
