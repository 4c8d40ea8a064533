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

        /// An item's MAC did not verify: the master secret is not the one the file was written
        /// with, or the file was altered. (The format has no separate password check.)
        public static let decryptionFailed = Code(rawValue: "decryptionFailed")
        /// The file is not a keyring or is damaged: bad header, truncated, malformed GVariant,
        /// salt size mismatch, bad padding, hashed attributes that disagree with the item.
        public static let corruptFile = Code(rawValue: "corruptFile")
        /// A keyring of another format version (0.x is the old gnome-keyring format).
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// A system call failed; ``FileKeyringError/errno`` says which error.
        public static let io = Code(rawValue: "io")
        /// Another writer held the lock for longer than the timeout.
        public static let lockTimeout = Code(rawValue: "lockTimeout")
        /// An item cannot be stored: a label, attribute name or value contains a NUL character.
        public static let invalidItem = Code(rawValue: "invalidItem")
        /// libgcrypt failed (not a wrong secret): initialisation, key derivation, cipher or MAC.
        public static let cryptoFailure = Code(rawValue: "cryptoFailure")
        /// Another program kept rewriting the file while a transaction ran (it changed between
        /// the read and the write every time): nothing was written. libsecret and oo7 do not take
        /// this package's lock; trying again usually succeeds.
        public static let concurrentWrite = Code(rawValue: "concurrentWrite")
        /// The body of ``FileKeyring/modify(_:)`` threw to abandon the transaction.
        public static let aborted = Code(rawValue: "aborted")

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
}
