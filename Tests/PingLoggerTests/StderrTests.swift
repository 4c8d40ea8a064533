import Dispatch
import Glibc
import PingLogger
import Testing

struct DiskOnFire: Error, CustomStringConvertible {
    var description: String { "disk on fire" }
}

@Suite struct StderrTests {
    @Test func lineFormatWithAFixedTime() {
        // 2001-09-09T01:46:40Z is 1_000_000_000 seconds after the epoch.
        let time = timespec(tv_sec: 1_000_000_000, tv_nsec: 7_999_999)
        #expect(StderrLine.format(.debug, "hello", at: time) == "2001-09-09T01:46:40.007Z [PingStorage] DEBUG hello\n")
        #expect(StderrLine.format(.info, "a b", at: time) == "2001-09-09T01:46:40.007Z [PingStorage] INFO a b\n")
        #expect(StderrLine.format(.warning, "", at: time) == "2001-09-09T01:46:40.007Z [PingStorage] WARNING \n")
        let early = timespec(tv_sec: 0, tv_nsec: 999_000_000)
        #expect(StderrLine.format(.error, "x", at: early) == "1970-01-01T00:00:00.999Z [PingStorage] ERROR x\n")
    }

    @Test func withoutAJournalEveryLevelGoesToTheFallbackDescriptor() throws {
        let pipe = try Pipe()
        let destination = LogDestination(journalSocketPath: nil, fallbackDescriptor: pipe.writeEnd)
        let logger = StandardLogger(destination: destination, logsDebugMessages: true)
        logger.d("debug message")
        logger.i("info message")
        logger.w("warning message", error: nil)
        logger.e("error message", error: DiskOnFire())
        let lines = pipe.drain().split(separator: "\n", omittingEmptySubsequences: false)
        let expected = [
            "DEBUG debug message", "INFO info message", "WARNING warning message",
            "ERROR error message, Error: disk on fire", "",
        ]
        #expect(lines.count == expected.count)
        for (line, tail) in zip(lines, expected) where !tail.isEmpty {
            let match = line.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[PingStorage\] (.*)/)
            #expect(match?.output.1 == Substring(tail), "\(line)")
        }
        #expect(destination.route == .fallback)
        #expect(destination.droppedCount == 0)
    }

    @Test func warningLoggerWritesOnlyWarningsAndErrors() throws {
        let pipe = try Pipe()
        let logger = WarningLogger(destination: LogDestination(journalSocketPath: nil, fallbackDescriptor: pipe.writeEnd),
                                   logsDebugMessages: true)
        logger.d("no")
        logger.i("no")
        logger.w("yes w", error: DiskOnFire())
        logger.e("yes e", error: nil)
        let lines = pipe.drain().split(separator: "\n").map { $0.split(separator: " ", maxSplits: 2)[2] }
        #expect(lines == ["WARNING yes w, Error: disk on fire", "ERROR yes e"])
    }

    @Test func concurrentLinesAreNeverInterleaved() throws {
        // Four threads write 2000 lines each to one file opened with O_APPEND (no capacity limit,
        // unlike a pipe). A line written in more than one write(2) would soon be split by another.
        let file = try AppendOnlyFile()
        let logger = StandardLogger(destination: LogDestination(journalSocketPath: nil, fallbackDescriptor: file.descriptor),
                                    logsDebugMessages: true)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<2000 { logger.i("thread \(thread) round \(round) " + String(repeating: "x", count: 40)) }
        }
        let lines = try file.contents().split(separator: "\n")
        #expect(lines.count == 8000)
        let pattern = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[PingStorage\] INFO thread \d round \d+ x{40}/
        #expect(lines.allSatisfy { $0.wholeMatch(of: pattern) != nil })
    }

    @Test func aFailedFallbackWriteIsCountedNotFatal() throws {
        // -1 is never an open descriptor: the write fails with EBADF.
        let destination = LogDestination(journalSocketPath: nil, fallbackDescriptor: -1)
        StandardLogger(destination: destination, logsDebugMessages: true).i("lost")
        #expect(destination.droppedCount == 1)
    }
}
