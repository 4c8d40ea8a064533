/// A logger that discards every message; the default value of ``LogManager/logger``.
///
/// Thread-safety: has no state; safe from any thread.
public final class NoneLogger: Logger {
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
