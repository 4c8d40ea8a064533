import DBusTransport

/// What a provider announced about an item (the collection signals `ItemCreated`, `ItemChanged`,
/// `ItemDeleted`), or that announcements may have been missed (the connection closed, the provider
/// changed hands). Whoever caused it, this process included.
public struct ItemAnnouncement: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        case created, changed, deleted
        /// Announcements may have been missed from here on (the connection closed, the provider
        /// changed hands), or a collection changed (its lock state among others): anything may have
        /// changed.
        case lost
    }

    public let kind: Kind
    /// The item (nil for ``Kind/lost``).
    public let item: ItemPath?

    public init(kind: Kind, item: ItemPath?) {
        self.kind = kind
        self.item = item
    }
}

/// How far a connection's announcements had come at a moment (``SecretServiceClient/announcementMark``):
/// two marks of one connection compare, and the announcements between them can be asked for.
public struct AnnouncementMark: Sendable, Hashable {
    /// Which connection heard them (a random number per connection).
    package let connection: UInt64
    /// How many it had heard.
    package let count: UInt64

    package init(connection: UInt64, count: UInt64) {
        self.connection = connection
        self.count = count
    }
}

/// The latest announcements of one connection, as many as ``capacity``: enough to tell what
/// happened since a recent mark; older ones are gone (then the answer is "unknown").
struct AnnouncementLog: Sendable {
    static let capacity = 64
    private(set) var count: UInt64 = 0
    private var recent: [ItemAnnouncement] = []

    mutating func append(_ announcement: ItemAnnouncement) {
        count += 1
        recent.append(announcement)
        if recent.count > Self.capacity { recent.removeFirst(recent.count - Self.capacity) }
    }

    /// The announcements after the `count`-th; nil when some of them are gone or `count` is ahead.
    func since(_ earlier: UInt64) -> [ItemAnnouncement]? {
        guard earlier <= count, count - earlier <= UInt64(recent.count) else { return nil }
        return Array(recent.suffix(Int(count - earlier)))
    }
}
