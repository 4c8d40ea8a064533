import BenchmarkSupport
import Foundation

/// The app's cold start: coldstart-app, the read built as an app usually is (full Foundation,
/// the runtime linked dynamically), against `secret-tool lookup` in the same rounds. A whole process
/// of such an app mostly measures its start-up (the loader binding Foundation and ICU), which no
/// library can change; so the target judges the read's own share: each side's process minus the
/// same binary's start-up doing nothing (coldstart-app --floor; secret-tool --help, which links the
/// same libraries and prints its usage).
extension WorkloadResults {
    /// What the app's cold-start rows measured, from the medians of one run's rounds.
    struct AppColdStart: Sendable {
        var app: Double
        var appFloor: Double
        var lookup: Double
        var lookupFloor: Double
        /// coldstart-app --floor-await: the floor plus Swift concurrency's first suspension.
        var appFloorAwait: Double?

        /// The whole process over `secret-tool lookup`'s.
        var wholeProcess: Double { app / lookup }
        /// (coldstart-app − its floor) / (secret-tool lookup − secret-tool --help).
        var readShare: Double? { share(over: appFloor) }
        /// The same over the floor that has awaited once: the read less the start of the
        /// concurrency runtime's threads, which any async app pays at its first await.
        var readShareAfterAwait: Double? { appFloorAwait.flatMap(share(over:)) }

        private func share(over floor: Double) -> Double? {
            lookup > lookupFloor ? (app - floor) / (lookup - lookupFloor) : nil
        }
    }

    /// The medians (ms) of the app's cold-start rows, when its read, its floor and secret-tool's two ran.
    var appColdStart: AppColdStart? { appColdStart(id: "coldstart-app") }

    /// The same for one build of coldstart-app: `coldstart-app` (the judged one) or a compared
    /// build's id (`coldstart-app.1`…, timed without `--floor-await`).
    func appColdStart(id: String) -> AppColdStart? {
        guard let app = coldStart(id)?.medianMilliseconds,
              let appFloor = coldStart(id + ".floor")?.medianMilliseconds,
              let lookup = coldStart("secret-tool.lookup")?.medianMilliseconds,
              let lookupFloor = coldStart("secret-tool.help")?.medianMilliseconds, lookup > 0 else { return nil }
        return AppColdStart(app: app, appFloor: appFloor, lookup: lookup, lookupFloor: lookupFloor,
                            appFloorAwait: coldStart(id + ".floor-await")?.medianMilliseconds)
    }

    /// The line under the cold-start table.
    var appColdStartText: [String] {
        guard let row = appColdStart else { return [] }
        return [String(format: "  coldstart-app, the read's own share: (%.2f − %.2f ms) / (secret-tool lookup %.2f − --help %.2f ms)",
                       row.app, row.appFloor, row.lookup, row.lookupFloor)
                + " = \(formatRatio(row.readShare)); the whole process \(formatRatio(row.wholeProcess))"]
    }

    /// The targets of the app's cold start (group `app_cold_start` in the JSON).
    var appColdStartTargets: [Report.Target] {
        let share = appColdStart?.readShare
        return [Report.Target(id: "coldstart_app_read_share_vs_secret_tool",
                              description: "coldstart-app: the read's own share ≤ 1.0× secret-tool's",
                              measured: share, limit: 1.0, comparison: "at_most", unit: "ratio",
                              pass: share.map { $0 <= 1.0 }, group: .appColdStart)]
    }

    /// The `Targets (app cold start)` lines, and the whole process as an info line (no limit: it is
    /// mostly the app's start-up).
    func appColdStartTargetText(_ targets: [Report.Target]) -> [String] {
        var lines = ["", "Targets (app cold start):"] + Report.targetLines(targets)
        if let row = appColdStart {
            lines.append("  info  coldstart-app (full Foundation, dynamic): whole process \(formatRatio(row.wholeProcess)) "
                         + String(format: "secret-tool lookup; its floor %.2f ms, secret-tool --help %.2f ms",
                                  row.appFloor, row.lookupFloor))
            if let floorAwait = row.appFloorAwait {
                lines.append("  info  coldstart-app, the read's share over its floor after one await "
                             + String(format: "(%.2f ms): ", floorAwait) + formatRatio(row.readShareAfterAwait)
                             + " (the rest is Swift concurrency's start, paid at an app's first await)")
            }
        }
        for build in comparedBuilds where build.program == "coldstart-app" {
            guard let other = appColdStart(id: build.id), let share = other.readShare else { continue }
            let first = appColdStart?.readShare
            lines.append("  info  coldstart-app (\(build.label)): the read's own share \(formatRatio(share)) "
                         + "(\(formatRatio(first.map { share / $0 })) the first build's); whole process "
                         + "\(formatRatio(other.wholeProcess)) secret-tool lookup, "
                         + String(format: "%.2f ms, its floor %.2f ms", other.app, other.appFloor))
        }
        return lines
    }
}
