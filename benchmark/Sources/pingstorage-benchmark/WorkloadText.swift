import BenchmarkSupport
import Foundation

/// The text of the workloads in `latest.txt`, and the data of the scale plot.
extension WorkloadResults {
    /// A pointer to the documentation, at the top of these sections.
    static let about = [
        "Workloads (benchmark/README.md describes each section): main actor, cold start, memory of many accounts,",
        "many accounts saved at once, scale; in the same run and process as the table above, ratios of medians.",
    ]

    /// The sections, each starting with an empty line.
    var text: [String] {
        var lines: [String] = [""] + Self.about
        if let mainActor {
            lines += ["", "Main actor: KeychainStorage.get awaited from @MainActor code and from a detached task, interleaved",
                      "in shuffled rounds. The main actor is the main queue (checked) of an async main, served by",
                      "\(mainActor.mainQueueThread)."]
            lines.append(column("caller", 58) + column("median", 11, right: true) + column("p95", 11, right: true)
                         + column("n", 7, right: true))
            for row in mainActor.rows {
                lines.append(column(row.label, 58) + column(formatLatency(row.medianMicroseconds.map { $0 / 1e6 }), 11, right: true)
                             + column(formatLatency(row.p95Microseconds.map { $0 / 1e6 }), 11, right: true)
                             + column(String(row.samples), 7, right: true))
            }
            lines.append("  uncached get: @MainActor / detached task = \(formatRatio(mainActor.uncachedMainOverDetached))")
        }
        if !coldStart.isEmpty {
            lines += ["", "Cold start: whole processes started by spawn-measure (wall time spawn → exit, ru_maxrss), "
                      + "\(coldStartRounds) rounds,", "every command once per round in a shuffled order, item of 2 KiB "
                      + "(the same item for every reader)"]
            lines.append(column("command", 50) + column("median", 11, right: true) + column("p95", 11, right: true)
                         + column("× lookup", 10, right: true) + column("peak RSS", 11, right: true))
            for result in coldStart {
                lines.append(column(result.label, 50)
                             + column(formatLatency(result.medianMilliseconds.map { $0 / 1e3 }), 11, right: true)
                             + column(formatLatency(result.p95Milliseconds.map { $0 / 1e3 }), 11, right: true)
                             + column(formatRatio(overLookup(result.id)), 10, right: true)
                             + column(result.medianMaxRssKib.map { String(format: "%.1f MiB", $0 / 1024) } ?? "—", 11, right: true))
            }
            for build in pingKeyringBuilds {
                lines.append("  ping-keyring (\(build.label)): \(build.bytes / 1024) KiB, \(relativePath(build.path))")
            }
            for build in comparedBuilds {
                lines.append("  \(build.program) (\(build.label)): \(build.bytes / 1024) KiB, \(relativePath(build.path))")
            }
            lines += appColdStartText
            lines.append("  The launcher's own peak RSS is the floor of every figure (the /bin/true row).")
        }
        if let memory = accountsMemory {
            lines += ["", "Memory of \(grouped(memory.accounts)) accounts: a process of its own (accounts-rss) holding a "
                      + "KeychainStorage per account,", "after one save and one get on each (\(memory.collection) collection; "
                      + "median of \(memory.runs) runs)"]
            lines.append(String(format: "  RSS at start %.0f KiB; after one warm-up account %.0f KiB; after the accounts "
                                + "%.0f KiB", memory.rssStartKib, memory.rssBeforeKib, memory.rssAfterKib))
            lines.append(String(format: "  growth %.0f KiB: %.2f KiB per account (%.1f s of saves and gets)", memory.growthKib,
                                memory.kibPerAccount, memory.seconds))
        }
        if let saves = concurrentSaves {
            lines += ["", "\(saves.accounts) accounts saved at once from one process (\(saves.collection) collection, "
                      + "\(saves.rounds) rounds, median)"]
            lines.append(String(format: "  KeychainStorage, %d tasks, one save each:           %6.0f saves/s", saves.accounts,
                                saves.oursSavesPerSecond))
            lines.append(String(format: "  raw libsecret, secret_password_storev, all in flight: %6.0f saves/s", saves.rawSavesPerSecond))
            lines.append("  KeychainStorage / raw libsecret throughput: \(formatRatio(saves.throughputRatio))")
        }
        if let scale { lines += scaleText(scale) }
        for missing in unavailable {
            lines.append("not measured: \(missing.contender): \(missing.reason)")
        }
        return lines
    }

    private func scaleText(_ scale: ScaleBenchmark.Result) -> [String] {
        var lines = ["", "Scale: the login collection (alias default) holding N items, written as gnome-keyring's keyring file",
                     "while the daemon is stopped (storing them one by one would take tens of minutes at 5,000: see the trial);",
                     "\(scale.rounds) rounds per size, \(scale.readsPerBatch) gets or \(scale.writesPerBatch) writes per batch; "
                     + "measured items hold the 2 KiB token, fillers \(scale.fillerSecretBytes)-byte secrets"]
        lines.append(column("items", 7) + column("populate", 10, right: true)
                     + ["get", "save", "delete"].map { column("\($0) ours", 12, right: true) + column("raw", 10, right: true)
                         + column("× raw", 8, right: true) }.joined())
        for size in scale.sizes {
            func median(_ id: String) -> String {
                formatLatency(size.rows.first { $0.id == id }?.medianMicroseconds.map { $0 / 1e6 })
            }
            lines.append(column(grouped(size.items), 7) + column(String(format: "%.1f s", size.populationSeconds), 10, right: true)
                         + column(median("keychain.get"), 12, right: true) + column(median("libsecret.lookup"), 10, right: true)
                         + column(formatRatio(size.getRatio), 8, right: true)
                         + column(median("keychain.save"), 12, right: true) + column(median("libsecret.store"), 10, right: true)
                         + column(formatRatio(size.saveRatio), 8, right: true)
                         + column(median("keychain.delete"), 12, right: true) + column(median("libsecret.clear"), 10, right: true)
                         + column(formatRatio(size.deleteRatio), 8, right: true))
        }
        if let trial = scale.trial {
            lines += ["", "Population trial: \(trial.approaches.first?.items ?? 0) items per approach, from "
                      + "\(grouped(trial.collectionSize)) items (the collection grows with each approach, in this order);",
                      "projected: the time to store \(grouped(trial.largestSize)) items that way, a write costing in "
                      + "proportion to the items present"]
            lines.append(column("approach", 78) + column("per item", 11, right: true) + column("projected", 12, right: true))
            for approach in trial.approaches {
                lines.append(column(approach.label, 78)
                             + column(String(format: "%.1f ms", approach.millisecondsPerItem), 11, right: true)
                             + column(formatMinutes(approach.projectedMinutes), 12, right: true))
            }
            let files = scale.sizes.map { "\(grouped($0.items)): " + String(format: "%.1f s", $0.populationSeconds) }
            lines.append(column("chosen: the keyring file written directly, then gnome-keyring restarted", 78)
                         + "  " + files.joined(separator: ", "))
            lines.append("  (the session collection is never written to disk, so it is no stand-in for the login collection)")
        }
        return lines
    }

    /// The `Targets (workloads)` lines and the `info` lines.
    func targetText(_ targets: [Report.Target]) -> [String] {
        var lines = ["", "Targets (workloads):"] + Report.targetLines(targets)
        if let judged = pingKeyringBuilds.first {
            lines.append("  (the ping-keyring targets judge the \(judged.label) build; others are info lines)")
        }
        return lines + infos.map { "  info  " + $0.text }
    }

    /// Tab-separated data for the scale plot: items, then the median in ms of ours and raw for
    /// get, save and delete.
    var scaleTSV: String {
        (scale?.sizes ?? []).map { size in
            let ids = ["keychain.get", "libsecret.lookup", "keychain.save", "libsecret.store", "keychain.delete", "libsecret.clear"]
            let values = ids.map { id in
                size.rows.first { $0.id == id }?.medianMicroseconds.map { String($0 / 1000) } ?? "NaN"
            }
            return ([String(size.items)] + values).joined(separator: "\t")
        }.joined(separator: "\n") + "\n"
    }
}

/// `path` relative to the working directory (the repository, for benchmark/run) when inside it.
private func relativePath(_ path: String) -> String {
    let directory = FileManager.default.currentDirectoryPath + "/"
    return path.hasPrefix(directory) ? String(path.dropFirst(directory.count)) : path
}
