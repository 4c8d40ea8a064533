import BenchmarkSupport
import Foundation

/// What the workloads measured (main actor, cold start, memory of many accounts, many accounts
/// saved at once, scale), as `latest.json`'s `workloads` object, and the targets they are judged
/// by. They run in Workloads.swift; their text is in WorkloadText.swift.
struct WorkloadResults: Codable, Sendable {
    /// A ping-keyring build the cold-start rows started.
    struct Build: Codable, Sendable {
        var label: String
        var path: String
        var bytes: Int
    }

    /// Another build of coldstart-get or coldstart-app, timed in the same rounds as the first
    /// (`--coldstart-get`, a second `--coldstart-app`): its rows' ids are `id` and `id.floor`.
    struct ComparedBuild: Codable, Sendable {
        var program: String
        var id: String
        var label: String
        var path: String
        var bytes: Int
    }

    /// A figure without a target, printed as an `info` line.
    struct Info: Codable, Sendable {
        var id: String
        var text: String
    }

    var mainActor: MainActorBenchmark.Result?
    var coldStart: [ColdStartBenchmark.Result] = []
    var coldStartRounds = 0
    var pingKeyringBuilds: [Build] = []
    var comparedBuilds: [ComparedBuild] = []
    var accountsMemory: AccountsMemoryBenchmark.Result?
    var concurrentSaves: ConcurrentSavesBenchmark.Result?
    var scale: ScaleBenchmark.Result?
    /// Sections that could not run, with the reason.
    var unavailable: [Report.Unavailable] = []

    func coldStart(_ id: String) -> ColdStartBenchmark.Result? { coldStart.first { $0.id == id } }

    /// A cold-start command's median over `secret-tool lookup`'s.
    func overLookup(_ id: String) -> Double? {
        guard let own = coldStart(id)?.medianMilliseconds,
              let base = coldStart("secret-tool.lookup")?.medianMilliseconds, base > 0 else { return nil }
        return own / base
    }

    /// The targets of the workloads, evaluated on this run (group `workloads` in the JSON).
    var targets: [Report.Target] {
        func target(_ id: String, _ description: String, _ measured: Double?, _ limit: Double,
                    _ unit: String) -> Report.Target {
            Report.Target(id: id, description: description, measured: measured, limit: limit, comparison: "at_most",
                          unit: unit, pass: measured.map { $0 <= limit }, group: .workloads)
        }
        var targets = [
            target("main_actor_cached_get", "cached get from @MainActor ≤ 1 µs median",
                   mainActor?.cachedMainActorMedianMicroseconds, 1.0, "µs"),
            target("main_actor_uncached_get_vs_detached", "uncached get: @MainActor ≤ 1.05× a detached task",
                   mainActor?.uncachedMainOverDetached, 1.05, "ratio"),
            target("coldstart_get_vs_secret_tool", "cold start: coldstart-get ≤ 1.2× secret-tool lookup",
                   overLookup("coldstart-get"), 1.2, "ratio"),
            target("ping_keyring_get_vs_secret_tool", "cold start: ping-keyring get ≤ 1.2× secret-tool lookup",
                   overLookup("ping-keyring.get"), 1.2, "ratio"),
            target("ping_keyring_help", "ping-keyring --help ≤ 3 ms median",
                   coldStart("ping-keyring.help")?.medianMilliseconds, 3.0, "ms"),
            target("ping_keyring_get_peak_rss", "ping-keyring get peak RSS ≤ 16 MiB",
                   coldStart("ping-keyring.get")?.medianMaxRssKib.map { $0 / 1024 }, 16.0, "MiB"),
        ]
        for size in scale?.sizes ?? [] {
            let items = grouped(size.items)
            targets.append(target("scale_get_\(size.items)", "\(items) items: get ≤ 1.0× raw libsecret lookup",
                                  size.getRatio, 1.0, "ratio"))
            targets.append(target("scale_save_\(size.items)", "\(items) items: save ≤ 1.0× raw libsecret store",
                                  size.saveRatio, 1.0, "ratio"))
            targets.append(target("scale_delete_\(size.items)", "\(items) items: delete ≤ 1.0× raw libsecret clear",
                                  size.deleteRatio, 1.0, "ratio"))
        }
        return targets
    }

    /// Figures reported without a limit.
    var infos: [Info] {
        var infos: [Info] = []
        for (index, build) in pingKeyringBuilds.enumerated() where index > 0 {
            let suffix = ".\(index)"
            let get = formatRatio(overLookup("ping-keyring.get" + suffix))
            let help = coldStart("ping-keyring.help" + suffix)?.medianMilliseconds.map { String(format: "%.2f ms", $0) } ?? "—"
            let rss = coldStart("ping-keyring.get" + suffix)?.medianMaxRssKib.map { String(format: "%.1f MiB", $0 / 1024) } ?? "—"
            infos.append(Info(id: "ping_keyring\(suffix)", text: "ping-keyring (\(build.label)): get \(get) secret-tool "
                              + "lookup, --help \(help), get peak RSS \(rss), binary \(build.bytes / 1024) KiB"))
        }
        for build in comparedBuilds where build.program == "coldstart-get" {
            guard let other = coldStart(build.id)?.medianMilliseconds,
                  let first = coldStart("coldstart-get")?.medianMilliseconds, first > 0 else { continue }
            infos.append(Info(id: build.id.replacingOccurrences(of: "-", with: "_"), text: String(
                format: "coldstart-get (%@): %@ secret-tool lookup, %@ the first build's (%.2f ms against %.2f ms)",
                build.label, formatRatio(overLookup(build.id)), formatRatio(other / first), other, first)))
        }
        if let help = coldStart("secret-tool.help")?.medianMilliseconds,
           let rss = coldStart("secret-tool.lookup")?.medianMaxRssKib {
            infos.append(Info(id: "secret_tool_reference", text: String(
                format: "secret-tool for reference: --help %.2f ms, lookup peak RSS %.1f MiB", help, rss / 1024)))
        }
        if let ours = coldStart("ping-keyring.help")?.medianMilliseconds,
           let hello = coldStart("floor.swift-hello")?.medianMilliseconds,
           let spawn = coldStart("floor.true")?.medianMilliseconds,
           let tool = coldStart("secret-tool.help")?.medianMilliseconds, tool > 0 {
            // What a --help costs on this machine, whoever writes it: the 3 ms target against floors.
            infos.append(Info(id: "help_floors", text: String(
                format: "--help floors here: /bin/true %.2f ms, swift-hello %.2f ms, secret-tool --help %.2f ms; "
                    + "ping-keyring --help %.2f ms = %.2f× secret-tool --help", spawn, hello, tool, ours, ours / tool)))
        }
        if let memory = accountsMemory {
            infos.append(Info(id: "accounts_memory", text: String(
                format: "%@ accounts held: RSS +%.0f KiB, %.2f KiB per account", grouped(memory.accounts), memory.growthKib,
                memory.kibPerAccount)))
        }
        if let saves = concurrentSaves {
            infos.append(Info(id: "concurrent_saves", text: String(
                format: "%d accounts saved at once: %.0f saves/s, %@ raw libsecret's %.0f saves/s", saves.accounts,
                saves.oursSavesPerSecond, formatRatio(saves.throughputRatio), saves.rawSavesPerSecond)))
        }
        if let scale, let largest = scale.sizes.max(by: { $0.items < $1.items }) {
            // The fairest comparison: the fastest way of storing them into the login collection.
            let fastest = scale.trial?.approaches.filter { $0.id != "raw.64.session" }
                .min { $0.projectedMinutes < $1.projectedMinutes }
            infos.append(Info(id: "scale_population", text: String(
                format: "%@ items written as a keyring file + restart: %.1f s", grouped(largest.items), largest.populationSeconds)
                + (fastest.map { "; stored one by one, the fastest way: ≈ \(formatMinutes($0.projectedMinutes)) (projected)" } ?? "")))
        }
        return infos
    }
}
