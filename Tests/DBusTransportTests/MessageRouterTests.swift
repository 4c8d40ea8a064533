import Foundation
import Locking
import Testing
@testable import DBusTransport

/// The reply router without a bus: messages made here, handed to ``MessageRouter/receive(_:)`` as
/// GDBus's reader thread would. Replies reach their call once; an awaited signal comes only from
/// its sender; the observer hears of everything, in order.
@Suite("MessageRouter, without a bus")
struct MessageRouterTests {
    private static let peer = ":1.42"

    /// Records what the router tells its observer, in order.
    final class Observer: BusObserver, @unchecked Sendable {
        // @unchecked Sendable: `events` is only touched under the lock.
        private let lock = NSLock()
        private var recorded: [String] = []
        var events: [String] { lock.withLock { recorded } }
        func signal(_ signal: IncomingSignal) { lock.withLock { recorded.append("signal \(signal.member) from \(signal.sender)") } }
        func reply(from sender: String?, isError: Bool) { lock.withLock { recorded.append("reply from \(sender ?? "?")\(isError ? " (error)" : "")") } }
        func noReply(to call: MessageRouter.PendingReply) { lock.withLock { recorded.append("no reply to \(call.member)") } }
        func closed() { lock.withLock { recorded.append("closed") } }
    }

    private func register(_ router: MessageRouter, serial: UInt32,
                          _ deliver: @escaping @Sendable (Result<IncomingReply, BusError>) -> Void) {
        router.registering { _, register in
            register(serial, .init(destination: Self.peer, path: "/org/x", interface: "org.example.I", member: "Get",
                                   operation: "get", deliver: deliver))
        }
    }

    @Test func aReplyReachesItsCallOnceAndAStrangerIsLeftAlone() throws {
        let observer = Observer()
        let router = MessageRouter(busName: ":1.7", observer: observer)
        let delivered = Locked<[Result<IncomingReply, BusError>]>([])
        register(router, serial: 9) { result in delivered.withLock { $0.append(result) } }
        #expect(!Messages.receive(router, Messages.reply(to: 8, .tuple([.string("x")]))), "no call waits for serial 8")
        #expect(Messages.receive(router, Messages.reply(to: 9, .tuple([.string("value")]), from: Self.peer)))
        #expect(!Messages.receive(router, Messages.reply(to: 9, .tuple([.string("again")]))), "a second reply to the same serial is not ours")
        let results = delivered.withLock { $0 }
        #expect(results.count == 1)
        let reply = try results[0].get()
        #expect(try reply.expecting("(s)", in: "get").child(0).string == "value")
        #expect(reply.sender == Self.peer)
        #expect(throws: BusError.self) { _ = try reply.expecting("(o)", in: "get") }
        #expect(observer.events == ["reply from :1.42"], "the observer hears of our replies only")
    }

    @Test func anErrorReplyIsARemoteErrorWithItsName() {
        let router = MessageRouter(busName: ":1.7", observer: nil)
        let delivered = Locked<[Result<IncomingReply, BusError>]>([])
        register(router, serial: 10) { result in delivered.withLock { $0.append(result) } }
        #expect(Messages.receive(router, Messages.reply(to: 10, .tuple([.string("Cannot find item")]),
                                                        error: "org.freedesktop.Secret.Error.NoSuchObject")))
        guard case .failure(let error)? = delivered.withLock({ $0.first }) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .remote && error.remoteName == "org.freedesktop.Secret.Error.NoSuchObject")
        #expect(error.text == "Cannot find item" && error.operation == "get")
    }

    @Test func anAwaitedSignalComesOnlyFromItsSenderAndOnceAndTheObserverHearsOfEverySignal() {
        let observer = Observer()
        let router = MessageRouter(busName: ":1.7", observer: observer)
        let prompt = "/org/freedesktop/secrets/prompt/p1"
        let delivered = Locked<[Result<Variant, BusError>]>([])
        let awaited = MessageRouter.AwaitedSignal(sender: Self.peer, interface: "org.freedesktop.Secret.Prompt", member: "Completed",
                                                  operation: "unlock") { result in delivered.withLock { $0.append(result) } }
        #expect(router.awaitSignal(awaited, on: ObjectPath(trusted: prompt)))
        #expect(router.isAwaiting(interface: "org.freedesktop.Secret.Prompt"))
        let completed = Argument.tuple([.boolean(false), .variant(.objectPaths([]))])
        Messages.receive(router, Messages.signal(from: ":1.99", path: prompt, "org.freedesktop.Secret.Prompt", "Completed", completed))
        #expect(delivered.withLock { $0 }.isEmpty, "a forged Completed is ignored")
        Messages.receive(router, Messages.signal(from: Self.peer, path: prompt, "org.freedesktop.Secret.Prompt", "Completed", completed))
        Messages.receive(router, Messages.signal(from: Self.peer, path: prompt, "org.freedesktop.Secret.Prompt", "Completed", completed))
        let results = delivered.withLock { $0 }
        #expect(results.count == 1)
        #expect((try? results[0].get().isOfType("(bv)")) == true)
        #expect(observer.events == ["signal Completed from :1.99", "signal Completed from :1.42", "signal Completed from :1.42"])
        #expect(!router.isAwaiting(interface: "org.freedesktop.Secret.Prompt"))
    }

    /// A peer that left the bus: every call to it and every signal awaited from it ends, on the loop
    /// thread, with the error given; others wait on.
    @Test func whatWaitsOnAPeerThatLeftEnds() async {
        let router = MessageRouter(busName: ":1.7", observer: nil)
        let ended = Locked<[String]>([])
        register(router, serial: 3) { result in if case .failure(let error) = result { ended.withLock { $0.append(error.text) } } }
        router.registering { _, register in
            register(4, .init(destination: ":1.5", path: "/", interface: "i", member: "m", operation: "other", deliver: { _ in
                ended.withLock { $0.append("other ended") }
            }))
        }
        _ = router.awaitSignal(.init(sender: Self.peer, interface: "i", member: "Done", operation: "wait") { result in
            if case .failure(let error) = result { ended.withLock { $0.append(error.text) } }
        }, on: ObjectPath(trusted: "/p"))
        router.fail(awaitingFrom: Self.peer) { BusError(.closed, operation: $0, text: "left") }
        await withCheckedContinuation { continuation in LoopThread.shared.perform { continuation.resume() } }
        #expect(ended.withLock { $0 } == ["left", "left"], "the call and the signal awaited from it; not the other peer's")
    }

    @Test func aClosedConnectionEndsEverythingAndAwaitsNothingMore() async {
        let observer = Observer()
        let router = MessageRouter(busName: ":1.7", observer: observer)
        let ended = Locked<[BusError.Code]>([])
        register(router, serial: 5) { result in if case .failure(let error) = result { ended.withLock { $0.append(error.code) } } }
        router.connectionClosed(reason: "the bus closed the connection")
        await withCheckedContinuation { continuation in LoopThread.shared.perform { continuation.resume() } }
        #expect(ended.withLock { $0 } == [.closed])
        #expect(observer.events == ["closed"])
        #expect(!router.awaitSignal(.init(sender: Self.peer, interface: "i", member: "m", operation: "o") { _ in }, on: .bus))
        #expect(router.registering { closed, _ in closed })
    }

    @Test func aCallWithoutAReplyIsForgottenAndReturnedOnce() {
        let router = MessageRouter(busName: ":1.7", observer: nil)
        register(router, serial: 6) { _ in }
        #expect(router.noReply(serial: 6)?.callDescription == "org.example.I.Get on /org/x (get)")
        #expect(router.noReply(serial: 6) == nil)
        #expect(!Messages.receive(router, Messages.reply(to: 6, nil)), "a reply that comes later is no one's")
    }
}

/// Reading arguments as replies carry them: typed, and a wrong type is an error, never a crash.
@Suite("Arguments, variants and paths, without a bus")
struct VariantTests {
    private func variant(_ argument: Argument) -> Variant { Variant(retaining: argument.build()) }

    @Test func attributesPropertiesAndPathsReadBack() throws {
        let attributes = ["service": "s", "account": "a", "xdg:schema": "x"]
        #expect(variant(.attributes(attributes)).stringDictionary == attributes)
        let paths = try ["/a/1", "/a/2"].map { try ObjectPath($0) }
        #expect(variant(.objectPaths(paths)).strings == ["/a/1", "/a/2"])
        let properties = variant(.properties(["Label": .string("l"), "Locked": .boolean(true), "Created": .uint32(7)]))
        #expect(properties.lookup("Label", "s")?.string == "l")
        #expect(properties.lookup("Locked", "b")?.boolean == true)
        #expect(properties.lookup("Locked", "s") == nil, "a key of another type is absent, not misread")
        #expect(properties.lookup("Missing", "s") == nil)
        #expect(variant(.bytes(Data([0, 1, 255]))).withBytes { Array($0) } == [0, 1, 255])
        #expect(variant(.string("x")).withBytes { $0.count } == 0, "bytes of something else are none")
    }

    @Test func aReplyOfAnotherTypeIsAnUnexpectedReply() {
        let reply = IncomingReply(body: variant(.tuple([.string("/not/a/path/list")])), sender: nil)
        #expect(throws: BusError.self) { _ = try reply.expecting("(ao)", in: "search") }
        do {
            _ = try IncomingReply(body: nil, sender: nil).expecting("(o)", in: "create item")
            Issue.record("an empty reply must not pass")
        } catch {
            #expect(error.code == .unexpectedReply && error.text.contains("(o)"))
        }
    }

    @Test func malformedObjectPathsAreRefusedWhenMade() {
        for bad in ["", "relative", "/trailing/", "//double", "/a//b", "/with space", "/dash-ed", "/ümlaut", "/a/"] {
            #expect(throws: InvalidObjectPath.self) { try ObjectPath(bad) }
        }
        for good in ["/", "/org/freedesktop/secrets", "/org/freedesktop/secrets/collection/login/7", "/_a/B_9"] {
            #expect((try? ObjectPath(good))?.rawValue == good)
        }
        #expect(ObjectPath(trusted: "/a/b").parent?.rawValue == "/a" && ObjectPath.none.parent == nil)
    }

    /// GLib's errors, each translated once into the transport's own.
    @Test func gioErrorsBecomeTheTransportsCodes() {
        func code(_ domain: CapturedError.Domain, _ code: Int32) -> BusError.Code {
            CapturedError(domain: domain, code: code, message: "m", remoteName: nil, domainName: "test-quark").busError(operation: "op").code
        }
        #expect(code(.io, 24) == .timedOut)
        #expect(code(.io, 18) == .closed)
        #expect(code(.io, 19) == .cancelled)
        #expect(code(.other, 7) == .failed)
        let remote = CapturedError.remote(name: "org.example.E", message: "nope").busError(operation: "op")
        #expect(remote.code == .remote && remote.remoteName == "org.example.E" && remote.text == "nope")
    }
}
