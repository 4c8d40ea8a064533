import Glibc
import PingLogger
import Synchronization
import Testing

/// A logger that counts its calls (the README's "custom logger", with state).
final class CountingLogger: Logger {
    let calls = Mutex<[String]>([])
    func d(_ message: String) { calls.withLock { $0.append("d " + message) } }
    func i(_ message: String) { calls.withLock { $0.append("i " + message) } }
    func w(_ message: String, error: (any Error)?) { calls.withLock { $0.append("w " + message) } }
    func e(_ message: String, error: (any Error)?) { calls.withLock { $0.append("e " + message) } }

    /// The calls whose message starts with `mark`, without it: what one test logged, whoever else logs.
    func ownCalls(marked mark: String) -> [String] {
        calls.withLock { calls in
            calls.compactMap { call in
                let (level, message) = (call.prefix(2), call.dropFirst(2))
                guard message.hasPrefix(mark + " ") else { return nil }
                return String(level + message.dropFirst(mark.count + 1))
            }
        }
    }
}

/// The iOS SDK's README example of a custom logger, written as SDK users write it (a struct,
/// `Error?` without `any`, a `LogManager` extension), to prove it compiles unchanged.
struct WarningErrorOnlyLogger: Logger {
    func i(_ message: String) {}
    func d(_ message: String) {}
    func w(_ message: String, error: Error?) {}
    func e(_ message: String, error: Error?) {}
}

extension LogManager {
    static var warningErrorOnly: Logger { WarningErrorOnlyLogger() }
}

/// The tests that touch the process-wide `LogManager.logger`; serialized, each restores `none`.
///
/// The library logs through the same logger from other suites running in parallel, so each test counts
/// only the messages that carry its own mark.
@Suite(.serialized)
struct LogManagerTests {
    let ownMark = "[LogManagerTests \(UInt64.random(in: 0 ... .max))]"

    @Test func sharedLoggerDefaultsToNoneAndCanBeSet() {
        #expect(LogManager.logger is NoneLogger)
        LogManager.logger = LogManager.standard
        #expect(LogManager.logger is StandardLogger)
        LogManager.logger = LogManager.warning
        #expect(LogManager.logger is WarningLogger)
        LogManager.logger = LogManager.warningErrorOnly
        #expect(LogManager.logger is WarningErrorOnlyLogger)
        let counting = CountingLogger()
        LogManager.logger = counting
        LogManager.logger.d("\(ownMark) one")
        LogManager.logger.i("\(ownMark) two")
        LogManager.logger.w("\(ownMark) three", error: nil)
        LogManager.logger.e("\(ownMark) four", error: POSIXFailure(call: "x", code: 1))
        #expect(counting.ownCalls(marked: ownMark) == ["d one", "i two", "w three", "e four"])
        LogManager.logger = LogManager.none
        #expect(LogManager.logger is NoneLogger)
    }

    @Test func sharedLoggerCanBeSetAndUsedFromManyTasksAtOnce() async {
        let loggers = (0..<4).map { _ in CountingLogger() }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<500 {
                        if round % 10 == 0 { LogManager.logger = loggers[(task + round) % loggers.count] }
                        LogManager.logger.i("\(ownMark) \(task)-\(round)")
                    }
                }
            }
        }
        let total = loggers.reduce(0) { $0 + $1.ownCalls(marked: ownMark).count }
        #expect(total == 8 * 500)
        LogManager.logger = LogManager.none
    }
}

@Suite struct BuiltInLoggerTests {
    @Test func builtInLoggersHaveTheirTypes() {
        #expect(LogManager.none is NoneLogger)
        #expect(LogManager.standard is StandardLogger)
        #expect(LogManager.warning is WarningLogger)
        #expect(LogManager.warning is StandardLogger)
        #expect(!(LogManager.standard is WarningLogger))
    }
}
