internal import CGLib
import DBusTransport
import Foundation
import PingStorage
import SecretService
import Testing
import Waiting

/// A bus of the test's own with the fake Secret Service on it, which the test can kill (bus and
/// service apart) and drive with `control`.
final class PrivateProvider: @unchecked Sendable {
    // @unchecked Sendable: every property is immutable after init; the processes are only signalled.
    let directory: String
    let address: String
    private let bus: BackgroundProcess
    private let service: BackgroundProcess
    private let dbusTest = Harness.dbusTestDirectory

    /// - Parameter otherUser: run the service as `nobody` (the bus then lets other users in).
    init(scenario: String = "normal", otherUser: Bool = false) async throws {
        let environment = ProcessInfo.processInfo.environment
        directory = environment["DBUS_TEST_DIR"]! + "/private-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o777])
        if otherUser {
            // Let the other user through the throwaway directory (mode 700) to its own.
            try FileManager.default.setAttributes([.posixPermissions: 0o711], ofItemAtPath: environment["DBUS_TEST_DIR"]!)
        }
        var config = try String(contentsOfFile: environment["DBUS_TEST_DIR"]! + "/session.conf", encoding: .utf8)
        if otherUser {
            config = config.replacingOccurrences(
                of: "</busconfig>", with: "<policy context=\"default\"><allow user=\"*\"/></policy></busconfig>")
        }
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        bus = try BackgroundProcess(["dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--print-address=1"],
                                    stdoutPath: directory + "/bus-address")
        var found = ""
        for _ in 0..<250 where found.isEmpty {
            found = (try? String(contentsOfFile: directory + "/bus-address", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if found.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        }
        guard !found.isEmpty else { throw HarnessError("the private bus did not start") }
        address = found
        var serviceEnvironment = environment
        serviceEnvironment["DBUS_SESSION_BUS_ADDRESS"] = address
        serviceEnvironment["FAKE_SECRET_SERVICE_SCENARIO"] = scenario
        // The fake logs every call on stderr: into service.log with its stdout.
        let program = ["/bin/sh", "-c", "exec \"$@\" 2>&1", "sh",
                       "/usr/bin/python3", dbusTest + "/fake-secret-service/service.py", "--state", directory + "/state.json"]
        service = try BackgroundProcess(
            otherUser ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + program : program,
            stdoutPath: directory + "/service.log", environment: serviceEnvironment)
        for _ in 0..<250 {
            if try await run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                  "--method", "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.secrets"],
                       environment: self.environment, timeout: 10).output.contains("true") { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError("the fake Secret Service did not start")
    }

    deinit {
        service.stop(signal: SIGKILL)
        bus.stop(signal: SIGKILL)
    }

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        return environment
    }

    var configuration: KeychainConfiguration {
        KeychainConfiguration(collection: .default, timeout: .seconds(20), bus: .address(address))
    }

    func client(timeout: Duration = .seconds(20), allowsPrompts: Bool = true) -> SecretServiceClient {
        SecretServiceClient(bus: .address(address), options: .init(timeout: timeout, allowsPrompts: allowsPrompts))
    }

    /// Runs the fake's `control` with `arguments`.
    @discardableResult
    func control(_ arguments: [String]) throws -> String {
        let result = try run(dbusTest + "/fake-secret-service/control", arguments, environment: environment, timeout: 30)
        guard result.status == 0 else { throw HarnessError("control \(arguments) failed: \(result.stderr)") }
        return result.output
    }

    /// Everything the fake logged (one line per call, never a secret).
    var log: String { (try? String(contentsOfFile: directory + "/service.log", encoding: .utf8)) ?? "" }

    func killBus() { bus.stop(signal: SIGKILL) }

    /// Sends a signal to `destination` from another connection on this bus (anyone can).
    func emit(to destination: String, path: String, signal: String, _ arguments: [String]) throws {
        let result = try run("gdbus", ["emit", "--session", "--dest", destination, "--object-path", path, "--signal", signal]
                                 + arguments, environment: environment, timeout: 10)
        guard result.status == 0 else { throw HarnessError("gdbus emit failed: \(result.stderr)") }
    }
}

extension Integration {
    @Suite("The transport: bus closing, replies matched per connection, signals from anyone, cancellation")
    struct Transport {
        /// A client process on a bus that goes away: its next call fails with a typed error, and the
        /// process goes on (GLib's shared bus connection raised SIGTERM: exit-on-close).
        @Test func theProcessOutlivesItsBus() async throws {
            let provider = try await PrivateProvider()
            let ready = provider.directory + "/ready", go = provider.directory + "/go"
            async let child = Task.detached {
                try run(Harness.probePath, ["steps", "a"], input: Data("get\ntouch \(ready)\nawait \(go)\nget\n".utf8),
                        environment: provider.environment, timeout: 60)
            }.value
            while !FileManager.default.fileExists(atPath: ready) { try await Task.sleep(for: .milliseconds(20)) }
            provider.killBus()
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            let result = try await child
            #expect(result.status == 0, "the process survived: \(result.output) \(result.stderr)")
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines.prefix(3) == ["nil", "ok", "ok"])
            #expect(lines.last == "error: noSessionBus" || lines.last == "error: noSecretService", "\(lines)")
        }

        /// The connection the client uses is the one told not to end the process (GLib's default
        /// for a shared session-bus connection is the opposite).
        @Test func theConnectionInUseNeverEndsTheProcess() async throws {
            let client = SecretServiceClient()
            _ = try await client.provider()
            #expect(client.connectionExitsOnClose == false)
        }

        /// A call waiting on a connection whose bus closes ends at once with `.disconnected`.
        @Test func aClosedConnectionEndsItsCallsAtOnce() async throws {
            let provider = try await PrivateProvider()
            let client = provider.client()
            let item = try await client.createItem(in: .default, label: "l", attributes: ["k": "v"],
                                                   secret: SecretValue(bytes: Data("v".utf8)), replacing: false).path
            try provider.control(["scenario", "slow", "delay=15"])
            let call = Task { try await client.secret(of: item) }
            try await Task.sleep(for: .milliseconds(300))
            let started = ContinuousClock.now
            provider.killBus()
            do {
                _ = try await call.value
                Issue.record("the call cannot succeed without its bus")
            } catch let error as SecretServiceError {
                // Disconnected; the client then tries a new connection, and finds no bus.
                #expect(error.code == .disconnected || error.code == .noSessionBus, "\(error)")
            }
            #expect(ContinuousClock.now - started < .seconds(10), "not at the 20 s deadline")
        }

        /// Two connections whose calls carry the same serials: each reply goes to its own call.
        @Test func repliesAreMatchedWithinTheirOwnConnection() async throws {
            let first = try await PrivateProvider(), second = try await PrivateProvider()
            let clients = [first.client(), second.client()]
            // The same calls in the same order on two fresh connections: the same serials.
            var items: [ItemPath] = []
            for (index, client) in clients.enumerated() {
                items.append(try await client.createItem(in: .default, label: "l", attributes: ["k": "v"],
                                                         secret: SecretValue(bytes: Data("value \(index)".utf8)),
                                                         replacing: false).path)
            }
            try first.control(["scenario", "slow", "delay=1.5"])
            let slowItem = items[0]
            async let slow = clients[0].secret(of: slowItem)
            try await Task.sleep(for: .milliseconds(200))
            let quick = try await clients[1].secret(of: items[1])
            #expect(quick.value.bytes == Data("value 1".utf8))
            #expect(try await slow.value.bytes == Data("value 0".utf8), "the slow call gets its own reply")
        }

        /// What the provider announced before answering another connection's call is heard once
        /// that call has returned and one round trip to the bus is made: the bus routes the
        /// announcement before the answer, and answers the round trip after it.
        @Test func anAnnouncementRoutedBeforeAnotherClientsAnswerIsHeardAfterOneRoundTrip() async throws {
            let provider = try await PrivateProvider()
            let (listener, writer) = (provider.client(), provider.client())
            _ = try await listener.provider()
            try await listener.hearAnnouncementsRoutedSoFar()
            let mark = try #require(listener.announcementMark)
            for index in 0..<20 {
                let created = try await writer.createItem(in: .default, label: "l", attributes: ["n": "\(index)"],
                                                          secret: SecretValue(bytes: Data("\(index)".utf8)), replacing: false)
                try await listener.hearAnnouncementsRoutedSoFar()
                let heard = try #require(listener.announcements(since: mark))
                #expect(heard.contains(ItemAnnouncement(kind: .created, item: created.path)), "creation \(index)")
            }
        }

        /// Anyone on the bus can send a signal to our unique name: a NameOwnerChanged that does not
        /// come from the bus, or an ItemCreated that does not come from the provider, changes nothing.
        @Test func signalsFromOtherPeersAreIgnored() async throws {
            let provider = try await PrivateProvider()
            let client = provider.client()
            let me = try await client.provider()
            let item = try await client.createItem(in: .default, label: "l", attributes: ["k": "v"],
                                                   secret: SecretValue(bytes: Data("kept".utf8)), replacing: false).path
            let before = try #require(client.currentChangeToken)
            try provider.emit(to: me.clientName, path: "/org/freedesktop/secrets/collection/login",
                              signal: "org.freedesktop.Secret.Collection.ItemCreated", ["objectpath '/forged'"])
            try await Task.sleep(for: .milliseconds(300))  // the bus has routed it by now
            _ = try await client.itemInfo(item)
            #expect(client.currentChangeToken == before, "a forged ItemCreated counts for nothing \(String(describing: client.currentChangeToken)) \(before)")

            let getSecretsBefore = provider.log.components(separatedBy: "GetSecret").count - 1  // the write's read-back
            try provider.control(["scenario", "slow", "delay=1.5"])
            async let read = client.secret(of: item)
            try await Task.sleep(for: .milliseconds(300))
            try provider.emit(to: me.clientName, path: "/org/freedesktop/DBus", signal: "org.freedesktop.DBus.NameOwnerChanged",
                              ["org.freedesktop.secrets", me.uniqueName, ""])
            #expect(try await read.value.bytes == Data("kept".utf8))
            let log = provider.log
            #expect(log.components(separatedBy: "GetSecret").count - 1 == getSecretsBefore + 1, "the call in flight was not failed and retried")
            #expect(log.components(separatedBy: "OpenSession").count - 1 == 1, "no new session was opened: \(log)")
        }

        /// Cancelling a call whose prompt never completes dismisses the prompt from the library's
        /// own thread: nothing lands on the application's default GLib main context.
        @Test func cancellingAPromptLeavesTheApplicationsMainContextAlone() async throws {
            let provider = try await PrivateProvider(scenario: "prompt-never-completes")
            let client = provider.client()
            let login = try ObjectPath("/org/freedesktop/secrets/collection/login")
            let unlock = Task { try await client.unlock([login]) }
            try await Task.sleep(for: .milliseconds(500))
            unlock.cancel()
            do {
                try await unlock.value
                Issue.record("the prompt never completes")
            } catch let error as SecretServiceError {
                #expect(error.code == .cancelled)
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(provider.log.contains("Dismiss"), "the prompt was dismissed: \(provider.log.suffix(500))")
            #expect(g_main_context_pending(nil) == 0, "nothing waits on the default main context")
        }

        /// A connection's first message can be a signal from another process, read on GDBus's
        /// reader thread before any call of ours has woken it: it still reaches the connection's
        /// observer, and the router made on the loop thread reaches that thread through a lock
        /// ThreadSanitizer sees (through GLib's own lock alone, TSan reported the hand-over as a
        /// race: this test is in its run).
        @Test func aSignalThatIsAConnectionsFirstMessageReachesItsObserver() async throws {
            let heard = HeardSignals()
            for round in 0..<8 {
                let connection = try await BusConnection.open(.session, observer: heard, deadline: Deadline(timeout: .seconds(20)))
                let result = try await run("gdbus", ["emit", "--session", "--dest", connection.uniqueName, "--object-path", "/test",
                                                     "--signal", "org.example.Test.Ping", "'\(round)'"], timeout: 10)
                #expect(result.status == 0, "gdbus emit: \(result.stderr)")
                let arrived = ContinuousClock.now + .seconds(10)
                while !heard.pings.contains("\(round)"), ContinuousClock.now < arrived { try await Task.sleep(for: .milliseconds(10)) }
                #expect(heard.pings.contains("\(round)"), "connection \(round) heard its ping: \(heard.pings)")
            }
        }

        /// The library only talks to a Secret Service that runs as the same Unix user.
        @Test func aProviderRunningAsAnotherUserIsRefused() async throws {
            let provider = try await PrivateProvider(otherUser: true)
            do {
                _ = try await provider.client().provider()
                Issue.record("a provider of another user was accepted")
            } catch {
                #expect(error.code == .untrustedProvider)
                #expect(error.message.contains("uid 65534"))
            }
            let storage = KeychainStorage<String>(account: "a", configuration: provider.configuration)
            #expect(await keychainError { try await storage.save(item: "never sent") }?.kind == "untrustedProvider")
            #expect(try JSONSerialization.jsonObject(with: Data(provider.control(["state"]).utf8)) is [String: Any])
            #expect(!provider.log.contains("CreateItem"), "nothing was stored there")
        }
    }
}

/// The `Ping` signals a connection's observer heard (their string argument), in order.
final class HeardSignals: BusObserver, @unchecked Sendable {
    // @unchecked Sendable: `heard` is only touched under the lock.
    private let lock = NSLock()
    private var heard: [String] = []
    var pings: [String] { lock.withLock { heard } }
    func signal(_ signal: IncomingSignal) {
        guard signal.member == "Ping", let argument = signal.body?.child(0).string else { return }
        lock.withLock { heard.append(argument) }
    }
    func reply(from sender: String?, isError: Bool) {}
    func noReply(to call: MessageRouter.PendingReply) {}
    func closed() {}
}
