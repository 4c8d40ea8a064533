internal import Gcrypt
import Locking

/// A file keyring in libsecret's and oo7's format (`$XDG_DATA_HOME/keyrings/default.keyring`
/// inside a Flatpak sandbox), opened with its master secret. See FORMAT.md.
///
/// Reading: ``items()`` reads the whole file and decrypts every item: a consistent snapshot,
/// because every writer (this module, libsecret once the file exists, oo7) replaces the file by
/// renaming a complete new one over it, so an open sees one whole version.
///
/// Writing: ``modify(_:)`` is a transaction across processes. It takes an exclusive `flock` on
/// the lock file `<path>.lock` next to the keyring (waiting at most ``lockTimeout``), re-reads the
/// file, lets the caller change the items, writes the whole file to a temporary file in the same
/// directory, fsyncs it, renames it over the keyring, fsyncs the directory and unlocks. Writers of
/// this module therefore never lose each other's changes. libsecret and oo7 do not take the lock:
/// a libsecret process of the same app that loaded the file earlier fails its next store with
/// "The file was externally modified" rather than overwrite ours (FORMAT.md).
///
/// Nothing is ever written when reading failed: a file that cannot be decrypted or parsed is
/// left exactly as it is, never replaced by a new keyring.
///
/// Thread-safety: `Sendable`; any number of threads may use one instance (or several instances
/// on the same file) at once. Transactions exclude each other also within a process.
public final class FileKeyring: Sendable {
    /// The keyring file.
    public let path: String
    /// The lock file writers `flock`: `path` + `.lock`. It is never deleted.
    public let lockPath: String
    /// How long ``modify(_:)`` waits for another writer before it throws ``FileKeyringError/Code/lockTimeout``.
    public let lockTimeout: Duration

    /// In secret memory, as every secret of this module (FileKeyringSecret).
    let masterSecret: FileKeyringSecret
    /// The key for the salt and iteration count last seen (they change only when a new file is
    /// created), so PBKDF2 runs once rather than on every call.
    let cachedKey = Locked<KeyringKey?>(nil)

    /// Opens the keyring at `path` with `masterSecret` (in a Flatpak: the 64 bytes the Secret
    /// portal's `RetrieveSecret` returns; with libsecret's test hook: the bytes of
    /// `SECRET_FILE_TEST_PASSWORD`). Nothing is read or created until the first call.
    ///
    /// Throws ``FileKeyringError/Code/cryptoFailure`` when libgcrypt cannot be initialised.
    public init(path: String, masterSecret: FileKeyringSecret, lockTimeout: Duration = .seconds(10)) throws(FileKeyringError) {
        do throws(GcryptError) {
            try Libgcrypt.requireAvailable(to: "open the file keyring")
        } catch {
            throw FileKeyringError(gcrypt: error)
        }
        self.path = path
        lockPath = path + ".lock"
        self.masterSecret = masterSecret
        self.lockTimeout = lockTimeout
    }

    /// Where libsecret and oo7 keep the default keyring: `$XDG_DATA_HOME/keyrings/default.keyring`,
    /// or `$HOME/.local/share/keyrings/default.keyring` when `XDG_DATA_HOME` is unset or empty.
    /// Nil when neither variable is set. In a Flatpak both point inside the app's sandbox.
    public static var defaultPath: String? {
        defaultPath(xdgDataHome: POSIX.environment("XDG_DATA_HOME"), home: POSIX.environment("HOME"))
    }

    static func defaultPath(xdgDataHome: String?, home: String?) -> String? {
        guard let data = xdgDataHome ?? home.map({ $0 + "/.local/share" }) else { return nil }
        return data + "/keyrings/default.keyring"
    }

    /// Every item, decrypted, in file order. An absent file is an empty keyring (nothing is created).
    ///
    /// Throws ``FileKeyringError/Code/decryptionFailed`` (wrong master secret, altered file),
    /// ``FileKeyringError/Code/corruptFile``, ``FileKeyringError/Code/unsupportedVersion`` or
    /// ``FileKeyringError/Code/io``.
    public func items() throws(FileKeyringError) -> [FileKeyringItem] {
        guard let bytes = try POSIX.readFile(path) else { return [] }
        let file = try KeyringFile(parsing: bytes, path: path)
        return try decryptAll(file, key: key(for: file))
    }

    /// The items whose attributes include every pair of `query` (all items for an empty query).
    /// Throws as ``items()``.
    public func items(matching query: [String: String]) throws(FileKeyringError) -> [FileKeyringItem] {
        try items().filter { $0.matches(query) }
    }

    /// The first item whose attributes include `query`, as libsecret's lookup. Throws as ``items()``.
    public func lookup(_ query: [String: String]) throws(FileKeyringError) -> FileKeyringItem? {
        try items().first { $0.matches(query) }
    }

    /// Runs `body` on the current items under the cross-process lock and writes what it leaves.
    ///
    /// An absent file starts as an empty keyring with libsecret's defaults (a fresh 32-byte salt,
    /// 100000 iterations) and is created. Items `body` leaves unchanged are written back byte for
    /// byte; changed and new ones are encrypted afresh, and a changed item whose ``FileKeyringItem/modified``
    /// was left as it was read gets the current time. `body` throws (for instance
    /// ``FileKeyringError/aborted(_:)``) to abandon the transaction: nothing is written. `body`
    /// must not start another transaction on the same file (it would wait for its own lock and
    /// end in ``FileKeyringError/Code/lockTimeout``).
    ///
    /// Writers that take no lock (libsecret, oo7) are not overwritten: the file is replaced only if
    /// it is still the version that was read (created only if still absent); otherwise it is read
    /// again and `body` runs again on what is there now, so `body` may run more than once.
    ///
    /// Throws ``FileKeyringError/Code/lockTimeout`` after ``lockTimeout``,
    /// ``FileKeyringError/Code/concurrentWrite`` when the file changed under every one of
    /// ``transactionAttempts`` attempts, anything ``items()`` throws (then nothing is written), ``FileKeyringError/Code/invalidItem`` for an item with a
    /// NUL in a string, and ``FileKeyringError/Code/io`` when writing fails (the old file stays).
    public func modify<R>(_ body: (inout [FileKeyringItem]) throws(FileKeyringError) -> R) throws(FileKeyringError) -> R {
        try modify(waitingAtMost: lockTimeout, body)
    }

    /// ``modify(_:)``, waiting at most `timeout` for another writer's lock instead of ``lockTimeout``.
    public func modify<R>(waitingAtMost timeout: Duration,
                          _ body: (inout [FileKeyringItem]) throws(FileKeyringError) -> R) throws(FileKeyringError) -> R {
        let lock = try KeyringLock.acquire(lockPath, timeout: timeout)
        return try transaction(holding: lock, body)
    }

    /// How many times a transaction starts again when another writer changed the file under it.
    static let transactionAttempts = 8

    /// The rest of ``modify(_:)``: `lock` is borrowed for the whole call, so it is held until
    /// the new file has been renamed into place.
    ///
    /// The lock keeps out this package's other writers, but libsecret and oo7 in the same app take
    /// no lock: the file is written only if it is still the version that was read (or still
    /// absent), and otherwise read again and `body` run again on what is there now, so that
    /// another program's item written meanwhile is never lost.
    private func transaction<R>(
        holding lock: borrowing KeyringLock, _ body: (inout [FileKeyringItem]) throws(FileKeyringError) -> R
    ) throws(FileKeyringError) -> R {
        for _ in 0..<Self.transactionAttempts {
            var file: KeyringFile
            var items: [FileKeyringItem] = []
            let read = try POSIX.readVersionedFile(path)
            if let read {
                file = try KeyringFile(parsing: read.bytes, path: path)
                items = try decryptAll(file, key: key(for: file))
            } else {
                file = KeyringFile.new()
            }
            let result = try body(&items)
            // A weak file (a short salt or few iterations: a guess of the master secret is cheap)
            // is re-keyed by this write: every item is sealed again under a key from a fresh salt
            // and libsecret's and oo7's defaults. Only here, where every record decrypted (one that
            // fails its MAC ends the transaction above): re-keying would make it unreadable for good.
            if file.isWeak {
                file.salt = Random.bytes(KeyringFile.defaultSaltSize)
                file.iterations = KeyringFile.defaultIterations
            }
            file.records = try records(of: items, key: try key(for: file))
            file.modified = FileKeyringItem.now()
            file.usageCount &+= 1
            if try POSIX.replaceFile(path, with: file.serialized(), ifStill: read?.version) { return result }
        }
        throw FileKeyringError(.concurrentWrite, "another program kept rewriting the keyring file while this one wrote it; "
                               + "nothing was written: try again", path: path)
    }

    /// The file's records for `items`: unchanged items byte for byte, changed and new ones
    /// encrypted afresh.
    private func records(of items: [FileKeyringItem], key: KeyringKey) throws(FileKeyringError) -> [EncryptedRecord] {
        var records: [EncryptedRecord] = []
        records.reserveCapacity(items.count)
        let now = FileKeyringItem.now()
        for (index, var item) in items.enumerated() {
            if item.isUnchanged(under: key), let origin = item.origin {
                records.append(origin.record)
                continue
            }
            // An item whose content changed and whose modification time the caller left alone was
            // modified now.
            if let origin = item.origin, !item.hasOriginalContent, item.modified == origin.modified {
                item.modified = max(now, origin.modified)
            }
            try item.validate(index: index)
            records.append(try Self.encrypt(item, key: key))
        }
        return records
    }

    /// Stores a secret as libsecret's `secret_password_store` does: an item whose attribute set
    /// equals `attributes` exactly is replaced (keeping its creation time, and its place), others
    /// with that set are removed; otherwise the item is appended. Returns the stored item.
    /// Throws as ``modify(_:)``.
    @discardableResult
    public func store(label: String, attributes: [String: String], secret: FileKeyringSecret) throws(FileKeyringError) -> FileKeyringItem {
        try modify { items throws(FileKeyringError) in
            var item = FileKeyringItem(label: label, attributes: attributes, secret: secret)
            let sameSet = items.indices.filter { items[$0].attributes == attributes }
            if let first = sameSet.first {
                item.created = items[first].created
                items[first] = item
                for index in sameSet.dropFirst().reversed() { items.remove(at: index) }
            } else {
                items.append(item)
            }
            return item
        }
    }

    /// Removes every item whose attributes include `query` and returns how many were removed. Does
    /// not write the file when nothing matched. Throws as ``modify(_:)``.
    @discardableResult
    public func remove(matching query: [String: String]) throws(FileKeyringError) -> Int {
        do {
            return try modify { items throws(FileKeyringError) in
                let before = items.count
                items.removeAll { $0.matches(query) }
                if items.count == before { throw FileKeyringError.aborted("nothing matched") }
                return before - items.count
            }
        } catch where error.code == .aborted {
            return 0
        }
    }

    // MARK: Internals

    private func key(for file: KeyringFile) throws(FileKeyringError) -> KeyringKey {
        if let key = cachedKey.withLock({ $0 }), key.salt == file.salt, key.iterations == file.iterations {
            return key
        }
        let key = try KeyringKey(master: masterSecret, salt: file.salt, iterations: file.iterations)
        cachedKey.withLock { $0 = key }
        return key
    }

    private func decryptAll(_ file: KeyringFile, key: KeyringKey) throws(FileKeyringError) -> [FileKeyringItem] {
        var items: [FileKeyringItem] = []
        var failed: [Int] = []
        for (index, record) in file.records.enumerated() {
            guard let plaintext = try key.open(record.blob, path: path) else {
                failed.append(index)
                continue
            }
            var item: FileKeyringItem
            do throws(MalformedGVariant) {
                item = try ItemPlaintext.deserialize(plaintext)
            } catch {
                throw .corrupt("item #\(index) decrypts to an invalid item: \(error.reason)", path: path)
            }
            try checkHashedAttributes(record, item, key: key, index: index)
            item.origin = .init(
                key: key, record: record, label: item.label, attributes: item.attributes, secret: item.secret,
                created: item.created, modified: item.modified)
            items.append(item)
        }
        if failed.count == file.records.count, !failed.isEmpty {
            throw FileKeyringError(
                .decryptionFailed,
                "decryption failed: the master secret does not open this keyring (every item failed its MAC check). "
                    + "Use the secret the file was written with (in a Flatpak, the one the Secret portal returns); "
                    + "the file was left as it is",
                path: path)
        } else if let first = failed.first {
            throw FileKeyringError(
                .decryptionFailed,
                "decryption failed: \(failed.count) of \(file.records.count) items (the first is item #\(first)) failed "
                    + "their MAC check, so the file was altered or partly written with another master secret. "
                    + "The file was left as it is: restore it from a backup or remove the damaged items with another tool",
                path: path)
        }
        return items
    }

    /// The hashed attributes are outside the item's MAC: they must name exactly the item's
    /// attributes, each with the HMAC of its value (oo7 checks the same).
    private func checkHashedAttributes(_ record: EncryptedRecord, _ item: FileKeyringItem, key: KeyringKey, index: Int) throws(FileKeyringError) {
        var consistent = record.hashedAttributes.count == item.attributes.count
        for hashed in record.hashedAttributes where consistent {
            guard let value = item.attributes[hashed.name] else {
                consistent = false
                break
            }
            let bytes = Array(value.utf8)
            consistent = try key.verifyMAC(bytes, 0..<bytes.count, expected: hashed.mac, 0..<hashed.mac.count)
        }
        if !consistent {
            throw .corrupt("item #\(index)'s searchable attributes do not match its encrypted attributes", path: path)
        }
    }

    /// The record of `item` under `key`: its hashed attributes and its sealed plaintext.
    static func encrypt(_ item: FileKeyringItem, key: KeyringKey) throws(FileKeyringError) -> EncryptedRecord {
        let names = item.attributes.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var hashed: [EncryptedRecord.HashedAttribute] = []
        for name in names { hashed.append(.init(name: name, mac: try key.hashAttribute(item.attributes[name]!))) }
        return EncryptedRecord(hashedAttributes: hashed, blob: try key.seal(ItemPlaintext.serialize(item)))
    }
}
