internal import Gcrypt
import Locking

/// A file keyring in libsecret's and oo7's format (`$XDG_DATA_HOME/keyrings/default.keyring`
/// inside a Flatpak sandbox), opened with its master secret. See FORMAT.md.
///
/// Reading: ``contents()`` and ``items()`` read the whole file and decrypt every item: a consistent snapshot,
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
/// left exactly as it is, never replaced by a new keyring. A record that cannot be read while
/// others can (``FileKeyringDamagedRecord``) is one record's problem: it is set aside, written
/// back byte for byte by every transaction, and a call it may concern fails with
/// ``FileKeyringError/Code/damagedItem``.
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
    /// The one thread the async calls run on (FileKeyring+Async.swift).
    let worker = KeyringWorker()
    /// The watch of the file for other processes' writes, once asked for (``foreignChanges()``).
    let watch = Locked<KeyringFileWatch?>(nil)
    /// How many records this instance has decrypted (or checked against their MAC), for the tests
    /// that check a read of one account decrypts that account's records alone.
    let decryptions = Locked(0)

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

    deinit { watch.withLock { $0 }?.stop() }

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

    /// The readable items, decrypted, and the damaged records (``FileKeyringDamagedRecord``), in
    /// file order. An absent file is an empty keyring (nothing is created).
    ///
    /// Throws ``FileKeyringError/Code/decryptionFailed`` (wrong master secret: every record fails
    /// its MAC), ``FileKeyringError/Code/corruptFile``, ``FileKeyringError/Code/tooLarge``,
    /// ``FileKeyringError/Code/unsupportedVersion``, ``FileKeyringError/Code/cryptoFailure`` or
    /// ``FileKeyringError/Code/io``.
    public func contents() throws(FileKeyringError) -> FileKeyringContents {
        guard let bytes = try POSIX.readFile(path) else { return FileKeyringContents(items: [], damaged: []) }
        let file = try KeyringFile(parsing: bytes, path: path)
        return try decryptAll(file, key: key(for: file))
    }

    /// ``contents()`` of the records whose hashed attributes include every pair of at least one of
    /// `queries` (an empty query: every record), the others left encrypted: a read of one
    /// account's items decrypts those alone, not the whole file. A damaged record is among the
    /// result when its hashed attributes match. Throws as ``contents()`` (a wrong master secret
    /// still throws ``FileKeyringError/Code/decryptionFailed``, not an empty result).
    public func contents(matchingAny queries: [[String: String]]) throws(FileKeyringError) -> FileKeyringContents {
        guard let bytes = try POSIX.readFile(path) else { return FileKeyringContents(items: [], damaged: []) }
        let file = try KeyringFile(parsing: bytes, path: path)
        let key = try key(for: file)
        var hashed: [[(name: String, mac: [UInt8])]] = []
        for query in queries {
            var pairs: [(name: String, mac: [UInt8])] = []
            for (name, value) in query { pairs.append((name, try key.hashAttribute(value))) }
            hashed.append(pairs)
        }
        // An item whose plaintext disagrees with its hashed attributes is set aside as damaged
        // (decryptAll): every item given matches by its decrypted attributes too.
        return try decryptAll(file, key: key) { record throws(FileKeyringError) in Self.record(record, matchesAnyOf: hashed) }
    }

    /// Every item, decrypted, in file order. An absent file is an empty keyring (nothing is created).
    ///
    /// Throws ``FileKeyringError/Code/damagedItem`` when a record is damaged (then not every item
    /// can be given: ``contents()`` gives the others), and as ``contents()``.
    public func items() throws(FileKeyringError) -> [FileKeyringItem] {
        try items(matching: [:])
    }

    /// The items whose attributes include every pair of `query` (all items for an empty query).
    /// Throws ``FileKeyringError/Code/damagedItem`` when a damaged record may be one of them
    /// (``FileKeyringDamagedRecord/matches(_:)``): never fewer items than asked for. Else as ``contents()``.
    public func items(matching query: [String: String]) throws(FileKeyringError) -> [FileKeyringItem] {
        let contents = try contents()
        let damaged = try contents.damaged(matching: query)
        guard damaged.isEmpty else { throw .damaged(damaged, path: path) }
        return contents.items.filter { $0.matches(query) }
    }

    /// The first item whose attributes include `query`, as libsecret's lookup. Throws as
    /// ``items(matching:)``: a damaged record that may match is an error, never "not found".
    public func lookup(_ query: [String: String]) throws(FileKeyringError) -> FileKeyringItem? {
        try items(matching: query).first
    }

    /// Runs `body` on the current readable items under the cross-process lock and writes what it leaves.
    ///
    /// An absent file starts as an empty keyring with libsecret's defaults (a fresh 32-byte salt,
    /// 100000 iterations) and is created. Items `body` leaves unchanged are written back byte for
    /// byte; changed and new ones are encrypted afresh, and a changed item whose ``FileKeyringItem/modified``
    /// was left as it was read gets the current time. Damaged records (``FileKeyringDamagedRecord``)
    /// are not among the items: each is written back byte for byte, in its place; see
    /// ``modify(withDamaged:)`` for a body that must know them. `body` throws (for instance
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
    /// ``transactionAttempts`` attempts, anything ``contents()`` throws (then nothing is written),
    /// ``FileKeyringError/Code/invalidItem`` for an item with a NUL in a string, and
    /// ``FileKeyringError/Code/io`` when writing fails (the old file stays).
    public func modify<R>(_ body: (inout [FileKeyringItem]) throws(FileKeyringError) -> R) throws(FileKeyringError) -> R {
        try modify(waitingAtMost: lockTimeout, withDamaged: { items, _ throws(FileKeyringError) in try body(&items) })
    }

    /// ``modify(_:)``, waiting at most `timeout` for another writer's lock instead of ``lockTimeout``.
    public func modify<R>(waitingAtMost timeout: Duration,
                          _ body: (inout [FileKeyringItem]) throws(FileKeyringError) -> R) throws(FileKeyringError) -> R {
        try modify(waitingAtMost: timeout, withDamaged: { items, _ throws(FileKeyringError) in try body(&items) })
    }

    /// ``modify(_:)`` whose body also sees the file's damaged records (kept whatever it does), to
    /// refuse a change that a damaged record may concern (``FileKeyringDamagedRecord/matches(_:)``).
    public func modify<R>(
        withDamaged body: (inout [FileKeyringItem], [FileKeyringDamagedRecord]) throws(FileKeyringError) -> R
    ) throws(FileKeyringError) -> R {
        try modify(waitingAtMost: lockTimeout, withDamaged: body)
    }

    /// ``modify(withDamaged:)``, waiting at most `timeout` for another writer's lock.
    public func modify<R>(
        waitingAtMost timeout: Duration,
        withDamaged body: (inout [FileKeyringItem], [FileKeyringDamagedRecord]) throws(FileKeyringError) -> R
    ) throws(FileKeyringError) -> R {
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
    func transaction<R>(
        holding lock: borrowing KeyringLock,
        _ body: (inout [FileKeyringItem], [FileKeyringDamagedRecord]) throws(FileKeyringError) -> R
    ) throws(FileKeyringError) -> R {
        for _ in 0..<Self.transactionAttempts {
            var file: KeyringFile
            var contents = FileKeyringContents(items: [], damaged: [])
            let read = try POSIX.readVersionedFile(path)
            if let read {
                file = try KeyringFile(parsing: read.bytes, path: path)
                contents = try decryptAll(file, key: key(for: file))
            } else {
                file = KeyringFile.new()
            }
            let result = try body(&contents.items, contents.damaged)
            // A weak file (a short salt or few iterations: a guess of the master secret is cheap)
            // is re-keyed by this write: every item is sealed again under a key from a fresh salt
            // and libsecret's and oo7's defaults. Never while a record is damaged: it is written
            // back as it is, under the old key, and re-keying would make it unreadable for good.
            if file.isWeak, contents.damaged.isEmpty {
                file.salt = Random.bytes(KeyringFile.defaultSaltSize)
                file.iterations = KeyringFile.defaultIterations
            }
            file.records = try records(of: contents.items, keeping: contents.damaged, key: try key(for: file))
            file.modified = FileKeyringItem.now()
            file.usageCount &+= 1
            let watch = self.watch.withLock { $0 }
            if let written = try POSIX.replaceFile(path, with: file.serialized(), ifStill: read?.version,
                                                   beforeReplacing: { watch?.willWrite($0) }) {
                watch?.ownWrite(over: read?.version, wrote: written)
                return result
            }
        }
        throw FileKeyringError(.concurrentWrite, "another program kept rewriting the keyring file while this one wrote it; "
                               + "nothing was written: try again", path: path)
    }

    /// Stores a secret as libsecret's `secret_password_store` does: an item whose attribute set
    /// equals `attributes` exactly is replaced (keeping its creation time, and its place), others
    /// with that set are removed; otherwise the item is appended. Returns the stored item.
    /// Throws ``FileKeyringError/Code/damagedItem`` when a damaged record may have `attributes`
    /// (libsecret would replace it: here it is neither replaced nor duplicated; nothing is
    /// written), and as ``modify(_:)``.
    @discardableResult
    public func store(label: String, attributes: [String: String], secret: FileKeyringSecret) throws(FileKeyringError) -> FileKeyringItem {
        try modify(withDamaged: { items, damaged throws(FileKeyringError) in
            let concerned = try FileKeyringDamagedRecord.those(damaged, matching: attributes)
            guard concerned.isEmpty else { throw .damaged(concerned, path: path) }
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
        })
    }

    /// Removes every item whose attributes include `query` and returns how many were removed. Does
    /// not write the file when nothing matched. Throws ``FileKeyringError/Code/damagedItem`` when a
    /// damaged record may match `query` (it is not removed, and nothing is), and as ``modify(_:)``.
    @discardableResult
    public func remove(matching query: [String: String]) throws(FileKeyringError) -> Int {
        do {
            return try modify(withDamaged: { items, damaged throws(FileKeyringError) in
                let concerned = try FileKeyringDamagedRecord.those(damaged, matching: query)
                guard concerned.isEmpty else { throw .damaged(concerned, path: path) }
                let before = items.count
                items.removeAll { $0.matches(query) }
                if items.count == before { throw FileKeyringError.aborted("nothing matched") }
                return before - items.count
            })
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
}
