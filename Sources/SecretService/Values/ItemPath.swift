import DBusTransport

/// The object path of an item: a valid object path with a parent other than `/` (items live in
/// collections: `/org/freedesktop/secrets/collection/login/7`).
public struct ItemPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The item's object path.
    public let objectPath: ObjectPath

    /// Checks `string`.
    /// - Throws: ``SecretServiceError/Code-swift.struct/invalidArgument`` when it is not an item's path.
    public init(_ string: String) throws(SecretServiceError) {
        try self.init(try ObjectPath(checking: string))
    }

    /// Checks that `path` can be an item's.
    /// - Throws: ``SecretServiceError/Code-swift.struct/invalidArgument`` otherwise.
    public init(_ path: ObjectPath) throws(SecretServiceError) {
        guard let parent = path.parent, parent != .none else {
            throw .invalidArgument("use an item path", "\(path) is not the path of an item in a collection.")
        }
        objectPath = path
    }

    init(trusted string: String) { objectPath = ObjectPath(trusted: string) }

    /// The path as a string.
    public var rawValue: String { objectPath.rawValue }
    public var description: String { rawValue }
    /// The collection the item belongs to (its parent path).
    public var collection: ObjectPath { objectPath.parent! }

    public static func < (a: ItemPath, b: ItemPath) -> Bool { a.objectPath < b.objectPath }
}

extension ObjectPath {
    /// The Secret Service's own object.
    static let service = ObjectPath(trusted: "/org/freedesktop/secrets")

    /// `string` as an object path, or this client's error for a string that is not one.
    /// - Throws: ``SecretServiceError/Code-swift.struct/invalidArgument``.
    init(checking string: String) throws(SecretServiceError) {
        do {
            self = try ObjectPath(string)
        } catch {
            throw .invalidArgument("use an object path", error.description)
        }
    }
}
