/// The four levels of ``Logger``, with their journal priority and their standard-error label.
package enum LogLevel: Sendable, CaseIterable {
    case debug, info, warning, error

    /// The syslog priority the journal stores in `PRIORITY` (`LOG_DEBUG` … `LOG_ERR`).
    package var priority: Int {
        switch self {
        case .debug: 7
        case .info: 6
        case .warning: 4
        case .error: 3
        }
    }

    /// The word on a standard-error line.
    package var label: String {
        switch self {
        case .debug: "DEBUG"
        case .info: "INFO"
        case .warning: "WARNING"
        case .error: "ERROR"
        }
    }
}
