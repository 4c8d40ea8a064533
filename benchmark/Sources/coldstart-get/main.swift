// coldstart-get ACCOUNT: one `KeychainStorage<Token>.get()` in a fresh process, as an app that
// reads its token when it starts. pingstorage-benchmark times whole runs of it against
// `secret-tool lookup` of the same item (issue 15's cold start).
//
// Exit status: 0 when the item was read and decoded, 1 when there is none, 2 on an error (on
// stderr). It prints nothing on success: `secret-tool lookup` writes the secret to a /dev/null
// stdout in the benchmark, which costs microseconds, while re-encoding the token here would add
// work an app does not do.
import BenchmarkSupport
import Foundation
import PingStorage

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: coldstart-get ACCOUNT\n".utf8))
    exit(2)
}
let storage = KeychainStorage<Token>(account: CommandLine.arguments[1], configuration: Bench.configuration)
do {
    exit(try await storage.get() == nil ? 1 : 0)
} catch {
    FileHandle.standardError.write(Data("coldstart-get: \(error)\n".utf8))
    exit(2)
}
