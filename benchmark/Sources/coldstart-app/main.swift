// coldstart-app ACCOUNT | coldstart-app --floor: coldstart-get built as an app usually is. It
// imports full Foundation and benchmark/run builds it with the Swift runtime and Foundation linked
// dynamically (plain `swift build -c release`), where coldstart-get has FoundationEssentials and
// the runtime linked in. The cold-start section times both ways of running it side by side with
// `secret-tool lookup` (the app's cold start):
//
// - `ACCOUNT`: one `KeychainStorage<Token>.get()`, as coldstart-get (same exit statuses, prints
//   nothing on success);
// - `--floor`: the same binary doing nothing: the loader has mapped and bound the same libraries
//   (Foundation, FoundationInternationalization, ICU, GIO, libgcrypt), then it exits before
//   PingStorage is touched (and before the async main first suspends). The read's own share of a
//   cold start is this row subtracted from the other.
// - `--floor-await`: the same, after awaiting one empty detached task: the start of Swift
//   concurrency's threads (the first suspension of an async main), which an app pays once on its
//   first `await` of anything. Not the target's floor: it shows how much of the read's share that is.
import BenchmarkSupport
import Foundation
import PingStorage

func writeToStandardError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    writeToStandardError("usage: coldstart-app ACCOUNT | --floor | --floor-await\n")
    exit(2)
}
if arguments[1] == "--floor" { exit(0) }
if arguments[1] == "--floor-await" {
    await Task.detached {}.value
    exit(0)
}
let storage = KeychainStorage<Token>(account: arguments[1], configuration: Bench.configuration)
do {
    exit(try await storage.get() == nil ? 1 : 0)
} catch {
    writeToStandardError("coldstart-app: \(error)\n")
    exit(2)
}
