/// A D-Bus object path, checked when made: `/` or `/`-separated elements of `[A-Za-z0-9_]`,
/// no empty element, no trailing `/`. A malformed path never reaches D-Bus.
public struct ObjectPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The path, e.g. `/org/freedesktop/secrets/collection/login`.
    public let rawValue: String

    /// Checks `string`.
    /// - Throws: ``InvalidObjectPath`` when it is not a valid D-Bus object path.
    public init(_ string: String) throws(InvalidObjectPath) {
        guard Self.isValid(string) else { throw InvalidObjectPath(text: String(string.prefix(200))) }
        rawValue = string
    }

    /// For paths that are valid by construction (literals, paths a peer sent in a value D-Bus itself
    /// checked as type `o`).
    package init(trusted string: String) {
        assert(Self.isValid(string), "invalid object path \(string)")
        rawValue = string
    }

    public var description: String { rawValue }

    public static func < (a: ObjectPath, b: ObjectPath) -> Bool { a.rawValue < b.rawValue }

    /// "No object" (`/`), e.g. for "no prompt" in the Secret Service's answers.
    package static let none = ObjectPath(trusted: "/")
    /// The bus itself.
    package static let bus = ObjectPath(trusted: "/org/freedesktop/DBus")

    /// The parent path; nil for `/`.
    package var parent: ObjectPath? {
        guard rawValue != "/", let slash = rawValue.lastIndex(of: "/") else { return nil }
        return ObjectPath(trusted: slash == rawValue.startIndex ? "/" : String(rawValue[..<slash]))
    }

    /// The last element ("" for `/`).
    package var lastElement: Substring { rawValue[rawValue.index(after: rawValue.lastIndex(of: "/")!)...] }

    package static func isValid(_ string: String) -> Bool {
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

/// A string that is not a D-Bus object path (given where one was required).
public struct InvalidObjectPath: Error, Sendable, Hashable, CustomStringConvertible {
    /// The string given (its first 200 characters).
    public let text: String

    /// "\"TEXT\" is not a D-Bus object path."
    public var description: String { "\"\(text)\" is not a D-Bus object path." }
}
