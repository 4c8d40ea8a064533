import Foundation

/// Latency samples of one operation, in seconds, with the summary statistics the report uses.
struct Samples: Sendable {
    private(set) var values: [Double] = []

    var count: Int { values.count }

    mutating func append(contentsOf durations: [Duration]) {
        values.append(contentsOf: durations.map(\.seconds))
    }

    mutating func append(seconds: Double) {
        values.append(seconds)
    }

    /// The median, nil without samples.
    var median: Double? { percentile(50) }
    /// The arithmetic mean, nil without samples.
    var mean: Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }
    /// The 95th percentile, nil without samples.
    var p95: Double? { percentile(95) }

    /// The `p`-th percentile by linear interpolation between closest ranks.
    func percentile(_ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = p / 100 * Double(sorted.count - 1)
        let lower = Int(rank.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        return sorted[lower] + (sorted[upper] - sorted[lower]) * (rank - Double(lower))
    }
}

extension Duration {
    /// The duration as a floating-point number of seconds.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}

/// Times `body` with the continuous clock.
@inline(__always)
func timed(_ body: () throws -> Void) rethrows -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return clock.now - start
}

/// Times an async `body` with the continuous clock.
@inline(__always)
func timed(_ body: () async throws -> Void) async rethrows -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    try await body()
    return clock.now - start
}

/// Formats a latency for the table: µs below 1 ms, ms above.
func formatLatency(_ seconds: Double?) -> String {
    guard let seconds else { return "—" }
    let micro = seconds * 1e6
    if micro < 10 { return String(format: "%.2f µs", micro) }
    if micro < 1000 { return String(format: "%.0f µs", micro) }
    return String(format: "%.2f ms", micro / 1000)
}

/// Formats a ratio for the table, or a dash.
func formatRatio(_ ratio: Double?) -> String {
    guard let ratio else { return "—" }
    return ratio < 0.1 ? String(format: "%.4f×", ratio) : String(format: "%.2f×", ratio)
}

/// Pads or truncates `text` to `width` characters (left-aligned), or right-aligns with `right`.
func column(_ text: String, _ width: Int, right: Bool = false) -> String {
    let count = text.count
    if count >= width { return text }
    let padding = String(repeating: " ", count: width - count)
    return right ? padding + text : text + padding
}

/// A count with thousands separators, as the report writes them: 5000 → "5,000".
func grouped(_ number: Int) -> String {
    let digits = Array(String(number.magnitude))
    var text = ""
    for (index, digit) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { text.append(",") }
        text.append(digit)
    }
    return (number < 0 ? "-" : "") + text
}

/// Minutes as the report shows them: seconds below one minute.
func formatMinutes(_ minutes: Double) -> String {
    minutes < 1 ? String(format: "%.1f s", minutes * 60) : String(format: "%.1f min", minutes)
}
