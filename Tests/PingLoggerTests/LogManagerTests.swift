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
@Suite(.serialized)
struct LogManagerTests {
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
        LogManager.logger.d("one")
        LogManager.logger.i("two")
        LogManager.logger.w("three", error: nil)
        LogManager.logger.e("four", error: POSIXFailure(call: "x", code: 1))
        #expect(counting.calls.withLock { $0 } == ["d one", "i two", "w three", "e four"])
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
                        LogManager.logger.i("\(task)-\(round)")
                    }
                }
            }
        }
        let total = loggers.reduce(0) { $0 + $1.calls.withLock { $0.count } }
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
