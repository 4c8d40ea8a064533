/// A D-Bus object path, checked when made: `/` or `/`-separated elements of `[A-Za-z0-9_]`,
/// no empty element, no trailing `/`. A malformed path never reaches D-Bus.
public struct ObjectPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The path, e.g. `/org/freedesktop/secrets/collection/login`.
    public let rawValue: String

    /// Checks `string`.
    /// - Throws: ``SecretServiceError/Code-swift.struct/invalidArgument`` when it is not a valid
    ///   D-Bus object path.
    public init(_ string: String) throws(SecretServiceError) {
        guard Self.isValid(string) else {
            throw .invalidArgument("use an object path", "\"\(string.prefix(200))\" is not a D-Bus object path.")
        }
        rawValue = string
    }

    /// For paths that are valid by construction (literals in this module, paths a provider sent in
    /// a value D-Bus itself checked as type `o`).
    init(trusted string: String) {
        assert(Self.isValid(string), "invalid object path \(string)")
        rawValue = string
    }

    public var description: String { rawValue }

    public static func < (a: ObjectPath, b: ObjectPath) -> Bool { a.rawValue < b.rawValue }

    /// The Secret Service spec's "no object" (`/`), e.g. for "no prompt".
    static let none = ObjectPath(trusted: "/")
    static let service = ObjectPath(trusted: "/org/freedesktop/secrets")
    static let bus = ObjectPath(trusted: "/org/freedesktop/DBus")

    /// The parent path; nil for `/`.
    var parent: ObjectPath? {
        guard rawValue != "/", let slash = rawValue.lastIndex(of: "/") else { return nil }
        return ObjectPath(trusted: slash == rawValue.startIndex ? "/" : String(rawValue[..<slash]))
    }

    /// The last element ("" for `/`).
    package var lastElement: Substring { rawValue[rawValue.index(after: rawValue.lastIndex(of: "/")!)...] }

    static func isValid(_ string: String) -> Bool {
        let bytes = Array(string.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
                continue
            }
            let allowed = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
                || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_")
            guard allowed else { return false }
            previousWasSlash = false
        }
        return true
    }
}

/// The object path of an item: a valid object path with a parent other than `/` (items live in
/// collections: `/org/freedesktop/secrets/collection/login/7`).
public struct ItemPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The item's object path.
    public let objectPath: ObjectPath

    /// Checks `string`.
    /// - Throws: ``SecretServiceError/Code-swift.struct/invalidArgument`` when it is not an item's path.
    public init(_ string: String) throws(SecretServiceError) {
        let path = try ObjectPath(string)
        try self.init(path)
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
