// coldstart-get ACCOUNT: one `KeychainStorage<Token>.get()` in a fresh process, as an app that
// reads its token when it starts. pingstorage-benchmark times whole runs of it against
// `secret-tool lookup` of the same item (the cold start).
//
// Exit status: 0 when the item was read and decoded, 1 when there is none, 2 on an error (on
// stderr). It prints nothing on success: `secret-tool lookup` writes the secret to a /dev/null
// stdout in the benchmark, which costs microseconds, while re-encoding the token here would add
// work an app does not do.
// FoundationEssentials, as ping-keyring: the row measures the library, not Foundation's ICU.
import BenchmarkSupport
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import PingStorage

func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

guard CommandLine.arguments.count == 2 else {
    writeToStandardError("usage: coldstart-get ACCOUNT\n")
    exit(2)
}
let storage = KeychainStorage<Token>(account: CommandLine.arguments[1], configuration: Bench.configuration)
do {
    exit(try await storage.get() == nil ? 1 : 0)
} catch {
    writeToStandardError("coldstart-get: \(error)\n")
    exit(2)
}
