/// How a D-Bus call or wait of this transport failed, in the transport's own words: what the bus
/// or the peer said, or why no answer came. The layers above (SecretService, the Secret portal,
/// the TPM's name check) translate it once into their own errors, where a D-Bus error name means
/// something for them (`ServiceUnknown` is "no keyring service" to one, "gone" to another).
///
/// Never contains secret bytes: GLib and the bus never put message contents in their errors.
public struct BusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure.
    public enum Code: String, Sendable, Hashable {
        /// No bus to connect to (no `DBUS_SESSION_BUS_ADDRESS`, no `$XDG_RUNTIME_DIR/bus`), or the
        /// bus refused the connection.
        case noBus
        /// The deadline passed before the answer came.
        case timedOut
        /// The calling task was cancelled.
        case cancelled
        /// The connection is closed (the bus went away, or this side closed it), or the peer left
        /// the bus before it answered.
        case closed
        /// The peer (or the bus in its name) answered with a D-Bus error: ``BusError/remoteName``.
        case remote
        /// The answer does not have the type the call expects.
        case unexpectedReply
        /// GLib failed otherwise (an I/O error that is neither a closed connection nor a timeout).
        case failed
    }

    /// The kind of failure.
    public let code: Code
    /// What was being done, e.g. `read secret`.
    public let operation: String
    /// The D-Bus error name of a ``Code/remote`` error (`org.freedesktop.DBus.Error.ServiceUnknown`).
    public let remoteName: String?
    /// The text that came with it: the peer's message, GLib's, or what was waited for how long.
    public let text: String

    /// Creates an error.
    public init(_ code: Code, operation: String, remoteName: String? = nil, text: String) {
        self.code = code
        self.operation = operation
        self.remoteName = remoteName
        self.text = text
    }

    /// "operation: code: text [remoteName]".
    public var description: String {
        "\(operation): \(code.rawValue): \(text)" + (remoteName.map { " [\($0)]" } ?? "")
    }

    /// The same error with `text` in place of its own.
    package func with(text: String) -> BusError { BusError(code, operation: operation, remoteName: remoteName, text: text) }
}
