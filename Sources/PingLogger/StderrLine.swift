import Glibc

/// The standard-error form of a message:
/// `2025-01-31T09:41:07.123Z [PingStorage] INFO message\n` (UTC, milliseconds).
package enum StderrLine {
    /// The line for `message` at `level`, logged at `time` (a `CLOCK_REALTIME` reading).
    package static func format(_ level: LogLevel, _ message: String, at time: timespec) -> String {
        timestamp(time) + " [PingStorage] " + level.label + " " + message + "\n"
    }

    /// The line for `message` at `level`, logged now.
    package static func format(_ level: LogLevel, _ message: String) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return format(level, message, at: now)
    }

    /// `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    static func timestamp(_ time: timespec) -> String {
        var seconds = time.tv_sec
        var utc = tm()
        guard gmtime_r(&seconds, &utc) != nil else { return "????-??-??T??:??:??.???Z" }
        return digits(Int(utc.tm_year) + 1900, 4) + "-" + digits(Int(utc.tm_mon) + 1, 2) + "-"
            + digits(Int(utc.tm_mday), 2) + "T" + digits(Int(utc.tm_hour), 2) + ":"
            + digits(Int(utc.tm_min), 2) + ":" + digits(Int(utc.tm_sec), 2) + "."
            + digits(Int(time.tv_nsec) / 1_000_000, 3) + "Z"
    }

    /// `value` in decimal, zero-padded on the left to `width` digits.
    private static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
