/// Why a ``FileKeyring`` call failed.
///
/// A growable struct: match on ``code`` (new codes may be added), show ``description`` to people.
/// No error ever contains secret bytes, the master secret or an attribute value; messages name the
/// file, say what happened and what to do. When reading the file failed, nothing was written.
public struct FileKeyringError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// A short identifier such as `decryptionFailed`.
        public let rawValue: String

        /// Creates a code from its identifier.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No item's MAC verified: the master secret is not the one the file was written with.
        /// (The format has no separate password check.)
        public static let decryptionFailed = Code(rawValue: "decryptionFailed")
        /// The file is not a keyring or is damaged as a whole: bad header, truncated, malformed
        /// GVariant, salt size mismatch. (One damaged record among readable ones is not this:
        /// see ``damagedItem`` and ``FileKeyringDamagedRecord``.)
        public static let corruptFile = Code(rawValue: "corruptFile")
        /// A keyring of another format version (0.x is the old gnome-keyring format).
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// A system call failed; ``FileKeyringError/errno`` says which error.
        public static let io = Code(rawValue: "io")
        /// Another writer held the lock for longer than the timeout.
        public static let lockTimeout = Code(rawValue: "lockTimeout")
        /// An item cannot be stored: a label, attribute name or value contains a NUL character or
        /// is over 64 KiB, or the item has more than 1,000 attributes.
        public static let invalidItem = Code(rawValue: "invalidItem")
        /// libgcrypt failed (not a wrong secret): initialisation, key derivation, cipher or MAC.
        public static let cryptoFailure = Code(rawValue: "cryptoFailure")
        /// Another program kept rewriting the file while a transaction ran (it changed between
        /// the read and the write every time): nothing was written. libsecret and oo7 do not take
        /// this package's lock; trying again usually succeeds.
        public static let concurrentWrite = Code(rawValue: "concurrentWrite")
        /// A record the call asked for cannot be read (``FileKeyringDamagedRecord``: it fails its
        /// MAC check or decrypts to an invalid item) while the rest of the file can: it may be the
        /// item asked for, so it is neither "not found" nor overwritten; it is left as it is.
        public static let damagedItem = Code(rawValue: "damagedItem")
        /// The file, or a count or string in it, is over this module's caps (``FileKeyring``:
        /// far over what libsecret or oo7 write for one app); it was not read further.
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// The body of ``FileKeyring/modify(_:)`` threw to abandon the transaction.
        public static let aborted = Code(rawValue: "aborted")
        /// An async call reached its deadline before the keyring's thread answered (a call whose
        /// transaction was running then may still complete).
        public static let timedOut = Code(rawValue: "timedOut")
        /// The Task of an async call was cancelled before the keyring's thread answered.
        public static let cancelled = Code(rawValue: "cancelled")

        /// The identifier.
        public var description: String { rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// What happened and what to do, in one or two sentences.
    public let message: String
    /// The file concerned, when there is one.
    public let path: String?
    /// The `errno` of a failed system call (``Code/io``, and ``Code/lockTimeout`` never).
    public let errno: Int32?

    /// Creates an error. `message` must not contain secret data.
    public init(_ code: Code, _ message: String, path: String? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
    }

    /// An error for the body of ``FileKeyring/modify(_:)`` to throw to abandon the transaction:
    /// nothing is written and the error is rethrown as is.
    public static func aborted(_ reason: String) -> FileKeyringError {
        FileKeyringError(.aborted, reason)
    }

    /// `code: message (path)`.
    public var description: String {
        var text = "\(code): \(message)"
        if let path { text += " (\(path))" }
        return text
    }
}

extension FileKeyringError {
    static func corrupt(_ what: String, path: String) -> FileKeyringError {
        FileKeyringError(
            .corruptFile,
            "the keyring file is damaged (\(what)); it was left as it is: restore it from a backup "
                + "(libsecret keeps the previous version as `default.keyring~`) or move it away to start a new keyring",
            path: path)
    }

    /// The file is over a cap: `what` says which.
    static func tooLarge(_ what: String, path: String) -> FileKeyringError {
        FileKeyringError(
            .tooLarge,
            "the keyring file is too large to read (\(what)); libsecret and oo7 never write so much for one app, "
                + "so it is damaged or not a keyring. It was left as it is: move it aside to start a new keyring, "
                + "or restore it from a backup (libsecret keeps the previous version as `default.keyring~`)",
            path: path)
    }

    /// A ``Code/damagedItem`` error: a call asked for items `records` may be. `records` is not
    /// empty; its descriptions name no attribute value.
    public static func damaged(_ records: [FileKeyringDamagedRecord], path: String) -> FileKeyringError {
        let names = records.map(\.description).joined(separator: ", ")
        return FileKeyringError(
            .damagedItem,
            "the item asked for may be in a damaged record of the keyring file: \(names). Nothing was changed; "
                + "the rest of the file is readable. Restore the file from a backup (libsecret keeps the previous "
                + "version as `default.keyring~`), or remove the damaged record with libsecret's `secret-tool clear` "
                + "and the item's attributes",
            path: path)
    }
}
