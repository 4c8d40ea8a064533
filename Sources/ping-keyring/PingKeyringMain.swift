// ping-keyring: inspect and manage what PingStorage keeps in the keyring (Secret Service or file keyring).
// Everything but reading stdin and writing the result out lives in PingKeyringCore (`ping-keyring --help`).
// FoundationEssentials, not Foundation: loading Foundation and ICU would cost most of a `--help`.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Glibc
import PingKeyringCore

/// Writes all of `bytes` to `descriptor`, retrying short writes and EINTR; gives up on other errors
/// (a closed pipe: there is no one left to tell).
func writeAll(_ bytes: some Collection<UInt8>, to descriptor: Int32) {
    let bytes = Array(bytes)
    var written = 0
    while written < bytes.count {
        let result = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
        if result > 0 {
            written += result
        } else if result < 0 && errno == EINTR {
            continue
        } else {
            return
        }
    }
}

/// The value `save` reads, on a queue of its own: a terminal waits for the user, and that wait
/// must not hold the main actor or a cooperative-pool thread. At a terminal, one line typed with
/// echo off after a prompt (``HiddenInput``); otherwise all of standard input.
func readStandardInputOffTheExecutors() async throws(PingKeyring.InputFailure) -> Data {
    try await withCheckedContinuation { continuation in
        DispatchQueue(label: "ping-keyring.stdin").async {
            continuation.resume(returning: isatty(STDIN_FILENO) == 1
                ? HiddenInput.readLine(from: STDIN_FILENO, prompt: HiddenInput.prompt, output: STDERR_FILENO)
                : readStandardInput())
        }
    }.get()
}

/// All of standard input, up to end of file; blocks. A read error is a failure, never a value cut
/// short.
func readStandardInput() -> Result<Data, PingKeyring.InputFailure> {
    var input = Data()
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress!, $0.count) }
        if count > 0 {
            input.append(contentsOf: chunk[..<count])
        } else if count == 0 {
            return .success(input)
        } else if errno != EINTR {
            return .failure(PingKeyring.InputFailure(reason: String(cString: strerror(errno))))
        }
    }
}

/// The entry point. Synchronous on purpose: `--help`, `--version`, `completion`, `manual` and usage
/// errors are answered before Swift concurrency starts (its executor threads cost about 2 ms of a
/// 10 ms run); the other commands run as a detached task while the main thread waits for it to
/// end the process; `save` reads stdin (at a terminal, without echo) on a queue of its own.
@main
enum PingKeyringMain {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let outcome = PingKeyring.outcomeWithoutTheKeyring(arguments: arguments) {
            finish(outcome)
        }
        let environment = ProcessInfo.processInfo.environment
        Task.detached {
            finish(await PingKeyring.run(
                arguments: arguments,
                environment: environment,
                readInput: { @Sendable () async throws(PingKeyring.InputFailure) -> Data in
                    try await readStandardInputOffTheExecutors()
                }))
        }
        // The task ends the process (finish exits). The main thread only waits: not
        // dispatchMain(), which on Linux hands the main queue to a new worker thread, one more
        // thread for a short-lived process to start.
        while true { pause() }
    }

    static func finish(_ outcome: PingKeyring.Outcome) -> Never {
        writeAll(outcome.standardOutput, to: STDOUT_FILENO)
        if outcome.newlineOnTerminal, isatty(STDOUT_FILENO) == 1 { writeAll("\n".utf8, to: STDOUT_FILENO) }
        writeAll(outcome.standardError.utf8, to: STDERR_FILENO)
        exit(outcome.status)
    }
}
