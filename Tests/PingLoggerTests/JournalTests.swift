import Foundation
import Glibc
import PingLogger
import Synchronization
import Testing

/// `LogDestination` and `StandardLogger` against a journald stand-in (``DatagramReceiver``).
@Suite struct JournalTests {
    /// The fields a message at `priority` from identifier `pingtest` should have.
    func expectedFields(_ message: String, priority: Int) -> [String: String] {
        [
            "MESSAGE": message, "PRIORITY": String(priority), "SYSLOG_IDENTIFIER": "pingtest",
            "PINGSTORAGE_SUBSYSTEM": "com.pingidentity.ios",
        ]
    }

    @Test func aSimpleMessageIsExactlyTheseBytes() throws {
        let journal = try DatagramReceiver()
        let destination = LogDestination(journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest")
        StandardLogger(destination: destination, logsDebugMessages: true).i("Opened the collection")
        let received = try #require(journal.receive())
        #expect(received.memfdContents == nil)
        let expected = "MESSAGE=Opened the collection\nPRIORITY=6\nSYSLOG_IDENTIFIER=pingtest\n"
            + "PINGSTORAGE_SUBSYSTEM=com.pingidentity.ios\n"
        #expect(String(decoding: received.datagram, as: UTF8.self) == expected)
        #expect(destination.route == .journal)
    }

    @Test func aMultiLineMessageUsesTheBinaryForm() throws {
        let journal = try DatagramReceiver()
        let destination = LogDestination(journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest")
        StandardLogger(destination: destination, logsDebugMessages: true).d("line 1\nline 2=x\n")
        let received = try #require(journal.receive())
        let message = Array("line 1\nline 2=x\n".utf8)  // 16 bytes
        let expected: [UInt8] = Array("MESSAGE\n".utf8) + [16, 0, 0, 0, 0, 0, 0, 0] + message + [0x0A]
            + Array("PRIORITY=7\nSYSLOG_IDENTIFIER=pingtest\nPINGSTORAGE_SUBSYSTEM=com.pingidentity.ios\n".utf8)
        #expect(received.datagram == expected)
        #expect(journalFields(received.datagram) == expectedFields("line 1\nline 2=x\n", priority: 7))
    }

    @Test func eachLevelHasItsPriorityAndErrorsAreAppended() throws {
        let journal = try DatagramReceiver()
        let logger = StandardLogger(
            destination: LogDestination(journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest"),
            logsDebugMessages: true)
        logger.d("d")
        logger.i("i")
        logger.w("w", error: nil)
        logger.w("w2", error: DiskOnFire())
        logger.e("e", error: nil)
        logger.e("e2", error: DiskOnFire())
        let expected = [
            expectedFields("d", priority: 7), expectedFields("i", priority: 6), expectedFields("w", priority: 4),
            expectedFields("w2, Error: disk on fire", priority: 4), expectedFields("e", priority: 3),
            expectedFields("e2, Error: disk on fire", priority: 3),
        ]
        for fields in expected {
            let received = try #require(journal.receive())
            #expect(journalFields(received.datagram) == fields)
        }
    }

    @Test func warningLoggerSendsOnlyWarningsAndErrors() throws {
        let journal = try DatagramReceiver(timeout: 1)
        let logger = WarningLogger(
            destination: LogDestination(journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest"),
            logsDebugMessages: true)
        logger.d("d")
        logger.i("i")
        logger.w("w", error: nil)
        logger.e("e", error: nil)
        #expect(journal.receive().flatMap { journalFields($0.datagram) } == expectedFields("w", priority: 4))
        #expect(journal.receive().flatMap { journalFields($0.datagram) } == expectedFields("e", priority: 3))
        #expect(journal.receive() == nil)
    }

    @Test func aMessageOverTheDatagramLimitGoesInASealedMemfd() throws {
        let journal = try DatagramReceiver()
        let destination = LogDestination(
            journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest", datagramLimit: 1000)
        let message = String(repeating: "0123456789", count: 100) + "\nend"
        StandardLogger(destination: destination, logsDebugMessages: true).e(message, error: nil)
        let received = try #require(journal.receive())
        #expect(received.datagram.isEmpty)
        #expect(received.memfdSeals == 0xF)  // SEAL | SHRINK | GROW | WRITE
        #expect(journalFields(try #require(received.memfdContents)) == expectedFields(message, priority: 3))
    }

    @Test func aMessageTheKernelRefusesAsTooBigGoesInAMemfd() throws {
        // 1 MiB is more than a socket's send buffer (net.core.wmem_default, 208 KiB here), so
        // sendto fails with EMSGSIZE and the memfd takes over.
        let journal = try DatagramReceiver()
        let destination = LogDestination(
            journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest", datagramLimit: .max)
        let message = String(repeating: "abcdefgh", count: 128 * 1024)
        StandardLogger(destination: destination, logsDebugMessages: true).i(message)
        let received = try #require(journal.receive())
        #expect(received.memfdContents != nil)
        #expect(journalFields(received.payload) == expectedFields(message, priority: 6))
        #expect(destination.droppedCount == 0)
    }

    @Test func withoutMemfdsAnOversizedMessageIsTruncatedWithAMarker() throws {
        let journal = try DatagramReceiver()
        let destination = LogDestination(
            journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest", datagramLimit: 1000,
            usesMemfd: false)
        let message = String(repeating: "é", count: 2000)  // 4000 bytes, 2 per character
        StandardLogger(destination: destination, logsDebugMessages: true).i(message)
        let received = try #require(journal.receive())
        #expect(received.memfdContents == nil)
        #expect(received.datagram.count <= 1000)
        let fields = try #require(journalFields(received.datagram))
        let text = try #require(fields["MESSAGE"])
        let parts = text.split(separator: "\n")
        #expect(parts.count == 2)
        #expect(parts.first.map { $0.allSatisfy { $0 == "é" } } == true)
        let kept = parts[0].utf8.count
        #expect(kept > 500)
        #expect(parts.last == "[message truncated by PingLogger: kept \(kept) of 4000 bytes]")
        #expect(fields["PRIORITY"] == "6")
    }

    @Test func aFullJournalDropsMessagesWithoutBlocking() async throws {
        // The receiver does not read while the messages are sent: its queue
        // (net.unix.max_dgram_qlen) fills up, and sendto would block without MSG_DONTWAIT. The
        // sends run on a thread so that a blocked send fails the test instead of hanging it.
        let journal = try DatagramReceiver()
        let fallback = try AppendOnlyFile()
        let destination = LogDestination(journalSocketPath: journal.path, fallbackDescriptor: fallback.descriptor)
        let done = Flag()
        Thread {
            let logger = StandardLogger(destination: destination, logsDebugMessages: true)
            for index in 0..<2000 { logger.i("message \(index)") }
            done.value.store(true, ordering: .releasing)
        }.start()
        var waited = 0
        // Waiting with Task.sleep: a test blocking one of Swift's cooperative threads (as many as
        // cores) stalls every other test of the process.
        while !done.value.load(ordering: .acquiring), waited < 300 {
            try await Task.sleep(for: .milliseconds(100))
            waited += 1
        }
        let finished = done.value.load(ordering: .acquiring)
        try #require(finished, "2000 sends to a full journal took over 30 s: they block")
        #expect(destination.droppedCount > 0)
        #expect(destination.route == .journal)
        #expect(try fallback.contents().isEmpty, "nothing goes to the fallback once the journal is chosen")
        var received = 0
        while received < 2000 - destination.droppedCount, journal.receive() != nil { received += 1 }
        #expect(received + destination.droppedCount == 2000)
    }

    @Test func noSocketAtThePathMeansTheFallbackForGood() throws {
        let directory = try TemporaryDirectory()
        let pipe = try Pipe()
        let destination = LogDestination(journalSocketPath: directory.path + "/absent", fallbackDescriptor: pipe.writeEnd)
        #expect(destination.route == .undecided)
        StandardLogger(destination: destination, logsDebugMessages: true).i("first")
        #expect(destination.route == .fallback)
        // A journal that appears later is not used: the decision is made once.
        let late = try DatagramReceiver(timeout: 1)
        _ = rename(late.path, directory.path + "/absent")
        StandardLogger(destination: destination, logsDebugMessages: true).i("second")
        #expect(late.receive() == nil)
        let lines = pipe.drain().split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasSuffix(" [PingStorage] INFO first") == true)
        #expect(lines.last?.hasSuffix(" [PingStorage] INFO second") == true)
        #expect(destination.droppedCount == 0)
    }

    @Test func aPathThatIsNotASocketMeansTheFallback() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/plain-file"
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let pipe = try Pipe()
        let destination = LogDestination(journalSocketPath: path, fallbackDescriptor: pipe.writeEnd)
        StandardLogger(destination: destination, logsDebugMessages: true).w("careful", error: nil)
        #expect(destination.route == .fallback)
        #expect(pipe.drain().hasSuffix(" [PingStorage] WARNING careful\n"))
    }

    @Test func aJournalThatGoesAwayLaterCostsMessagesNotTheFallback() throws {
        let pipe = try Pipe()
        var journal: DatagramReceiver? = try DatagramReceiver()
        let destination = LogDestination(journalSocketPath: journal!.path, fallbackDescriptor: pipe.writeEnd)
        let logger = StandardLogger(destination: destination, logsDebugMessages: true)
        logger.i("while it is there")
        #expect(journal?.receive() != nil)
        journal = nil  // closes the socket; the path now refuses datagrams
        logger.i("after")
        #expect(destination.route == .journal)
        #expect(destination.droppedCount == 1)
        #expect(pipe.drain().isEmpty)
    }

    @Test func concurrentFirstMessagesAreAllAccountedFor() async throws {
        let journal = try DatagramReceiver(timeout: 2)
        let destination = LogDestination(journalSocketPath: journal.path, fallbackDescriptor: -1, identifier: "pingtest")
        let received = Collected()
        let reader = Thread {
            while let message = journal.receive() {
                let text = journalFields(message.datagram)?["MESSAGE"] ?? "malformed"
                received.texts.withLock { $0.append(text) }
            }
        }
        reader.start()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            let logger = StandardLogger(destination: destination, logsDebugMessages: true)
            for round in 0..<100 { logger.i("\(worker)-\(round)") }
        }
        // The reader stops after 2 s without a message.
        while !reader.isFinished { try await Task.sleep(for: .milliseconds(50)) }
        let texts = received.texts.withLock { $0 }
        #expect(!texts.contains("malformed"))
        #expect(Set(texts).count == texts.count)
        #expect(texts.count + destination.droppedCount == 400)
        #expect(texts.count > 0)
    }
}

/// Texts collected by a reader thread.
final class Collected: Sendable {
    let texts = Mutex<[String]>([])
}

/// A flag set by another thread.
final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}
