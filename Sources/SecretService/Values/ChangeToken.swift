import DBusTransport
/// What a client has seen change, as a count: it advances whenever the provider announces that an
/// item was created, changed (its secret, label or attributes: the announcement does not say
/// which) or deleted, or that a collection changed (its lock state among others), whenever the
/// provider process changes, and it starts afresh with every new connection. It is the count of
/// the connection's announcements (``ItemAnnouncement``): one per change.
///
/// Calls return the token current when their answer arrived. GNOME Keyring and KWallet announce a
/// change before they answer the call that caused it, and the client counts announcements in the
/// order they arrive, so two tokens tell whether anything was created, changed, deleted or
/// (un)locked in between: a cache of "which item holds what" is valid exactly while the token has
/// not moved. KeePassXC announces after answering: there a change is told once its announcement
/// has arrived, moments after the answer to the call that made it.
public struct ChangeToken: Sendable, Hashable, CustomStringConvertible {
    /// Which connection counted (a random number per connection).
    package let connection: UInt64
    /// How many changes it had counted.
    package let count: UInt64

    /// Creates a token (for alternative backends and tests).
    public init(connection: UInt64, count: UInt64) {
        self.connection = connection
        self.count = count
    }

    /// How many changes separate `earlier` from this token; nil when they come from different
    /// connections (then anything may have changed).
    public func changes(since earlier: ChangeToken) -> UInt64? {
        guard connection == earlier.connection, count >= earlier.count else { return nil }
        return count - earlier.count
    }

    /// Whether nothing changed between `earlier` and this token.
    public func isUnchanged(since earlier: ChangeToken) -> Bool { changes(since: earlier) == 0 }

    public var description: String { "\(count)@\(String(connection, radix: 16))" }
}

/// The Secret Service providers whose quirks SecretService knows (``ProviderQuirks``).
package enum ProviderKind: Sendable, Hashable {
    case gnomeKeyring, kwallet, keepassxc, other

    /// Told by the provider's executable (`/proc/PID/exe`), never by a name it gives itself.
    package init(executable: String?) {
        let name = executable.map { String($0.split(separator: "/").last ?? "") } ?? ""
        switch name {
        case "gnome-keyring-daemon": self = .gnomeKeyring
        case "kwalletd5", "kwalletd6", "ksecretd": self = .kwallet
        case "keepassxc": self = .keepassxc
        default: self = .other
        }
    }
}
