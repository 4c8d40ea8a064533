/// A logger that discards every message; the default value of ``LogManager/logger``.
///
/// Not `final`, as on iOS: a test target that imports the module with `@testable` may subclass it.
///
/// Thread-safety: has no state; safe from any thread. `@unchecked Sendable` because the compiler
/// does not check non-final classes; it is safe: the class has no stored property, and it is not
/// `open`, so only this module (and `@testable` importers) can subclass it. Classes that do must
/// keep their own state thread-safe, as every ``Logger`` must.
public class NoneLogger: Logger, @unchecked Sendable {
    /// Creates a logger that logs nothing. (On iOS the initializer is internal; SDK code uses
    /// ``LogManager/none``.)
    public init() {}

    /// Discards the message.
    public func d(_ message: String) {}

    /// Discards the message.
    public func i(_ message: String) {}

    /// Discards the message and the error.
    public func w(_ message: String, error: (any Error)?) {}

    /// Discards the message and the error.
    public func e(_ message: String, error: (any Error)?) {}
}

extension LogManager {
    /// A new ``NoneLogger``: logs nothing. Thread-safety: safe from any thread.
    public static var none: any Logger { NoneLogger() }
}
