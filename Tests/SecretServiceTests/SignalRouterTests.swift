import CGLib
import Foundation
import Locking
import Testing
@testable import SecretService

/// The reply router without a bus: messages made here, handed to ``SignalRouter/receive(_:)`` as
/// GDBus's reader thread would. Replies reach their call once; signals are believed only from whom
/// they can come from.
@Suite("SignalRouter, without a bus")
struct SignalRouterTests {
    private static let provider = ":1.42"

    /// A router whose provider is ``provider`` (set by the answer to an owner query, as in use).
    private func routerWithOwner() -> SignalRouter {
        let router = SignalRouter(busName: ":1.7")
        register(router, serial: 1, isOwnerQuery: true) { _ in }
        #expect(receive(router, reply(to: 1, .tuple([.string(Self.provider)]))))
        #expect(router.owner == Self.provider)
        return router
    }

    private func register(_ router: SignalRouter, serial: UInt32, isOwnerQuery: Bool = false,
                          _ deliver: @escaping @Sendable (Result<Reply, SecretServiceError>) -> Void) {
        router.registering { _, register in
            register(serial, .init(destination: Self.provider, member: "GetSecret", operation: "read secret", phase: .call,
                                   isOwnerQuery: isOwnerQuery, deliver: deliver))
        }
    }

    private func reply(to serial: UInt32, _ body: Argument?, error: String? = nil) -> OpaquePointer {
        let message = g_dbus_message_new()!
        g_dbus_message_set_message_type(message, error == nil ? G_DBUS_MESSAGE_TYPE_METHOD_RETURN : G_DBUS_MESSAGE_TYPE_ERROR)
        g_dbus_message_set_reply_serial(message, serial)
        if let error { g_dbus_message_set_error_name(message, error) }
        if let body { g_dbus_message_set_body(message, body.build()) }
        return message
    }

    private func signal(from sender: String, path: String, _ interface: String, _ member: String, _ body: Argument?) -> OpaquePointer {
        let message = g_dbus_message_new_signal(path, interface, member)!
        g_dbus_message_set_sender(message, sender)
        if let body { g_dbus_message_set_body(message, body.build()) }
        return message
    }

    /// Hands `message` over; a message the router did not consume is released here, as the filter does.
    @discardableResult
    private func receive(_ router: SignalRouter, _ message: OpaquePointer) -> Bool {
        let consumed = router.receive(message)
        if !consumed { g_object_unref(UnsafeMutableRawPointer(message)) }
        return consumed
    }

    @Test func changeSignalsCountOnlyFromTheProvider() {
        let router = routerWithOwner()
        let start = router.token
        let collection = "/org/freedesktop/secrets/collection/login"
        receive(router, signal(from: ":1.99", path: collection, "org.freedesktop.Secret.Collection", "ItemCreated",
                               .tuple([.objectPath(try! ObjectPath(collection + "/1"))])))
        #expect(router.token.isUnchanged(since: start), "a forged ItemCreated is ignored")
        receive(router, signal(from: Self.provider, path: collection, "org.freedesktop.Secret.Collection", "ItemDeleted",
                               .tuple([.objectPath(try! ObjectPath(collection + "/1"))])))
        #expect(router.token.changes(since: start) == 1)
        receive(router, signal(from: Self.provider, path: "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                               "CollectionChanged", .tuple([.objectPath(try! ObjectPath(collection))])))
        #expect(router.token.changes(since: start) == 2, "a collection's change (its lock state) counts")
        receive(router, signal(from: Self.provider, path: collection, "org.freedesktop.DBus.Properties", "PropertiesChanged", nil))
        #expect(router.token.changes(since: start) == 2, "other signals do not")
    }

    @Test func theOwnerChangesOnlyOnTheBussWord() {
        let router = routerWithOwner()
        let owners = Argument.tuple([.string("org.freedesktop.secrets"), .string(Self.provider), .string(":1.66")])
        receive(router, signal(from: ":1.99", path: "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", owners))
        #expect(router.owner == Self.provider, "only the bus says who owns the name")
        receive(router, signal(from: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameOwnerChanged", .tuple([.string("org.example.Other"), .string(""), .string(":1.5")])))
        #expect(router.owner == Self.provider, "another name's owner is not ours")
        receive(router, signal(from: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", owners))
        #expect(router.owner == ":1.66")
    }

    @Test func aReplyReachesItsCallOnceAndAStrangerIsLeftAlone() throws {
        let router = routerWithOwner()
        let delivered = Locked<[Result<Reply, SecretServiceError>]>([])
        register(router, serial: 9) { result in delivered.withLock { $0.append(result) } }
        #expect(!receive(router, reply(to: 8, .tuple([.string("x")]))), "no call waits for serial 8")
        #expect(receive(router, reply(to: 9, .tuple([.string("value")]))))
        #expect(!receive(router, reply(to: 9, .tuple([.string("again")]))), "a second reply to the same serial is not ours")
        let results = delivered.withLock { $0 }
        #expect(results.count == 1)
        let body = try results[0].get().body("(s)", in: "read secret")
        #expect(body.child(0).string == "value")
        #expect(throws: SecretServiceError.self) { _ = try results[0].get().body("(o)", in: "read secret") }
    }

    @Test func anErrorReplyIsTranslatedOnce() {
        let router = routerWithOwner()
        let delivered = Locked<[Result<Reply, SecretServiceError>]>([])
        register(router, serial: 10) { result in delivered.withLock { $0.append(result) } }
        #expect(receive(router, reply(to: 10, .tuple([.string("Cannot find item")]), error: "org.freedesktop.Secret.Error.NoSuchObject")))
        guard case .failure(let error)? = delivered.withLock({ $0.first }) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .itemNotFound)
        #expect(error.dbusErrorName == "org.freedesktop.Secret.Error.NoSuchObject")
    }

    @Test func anAwaitedSignalComesOnlyFromItsSenderAndOnce() {
        let router = routerWithOwner()
        let prompt = "/org/freedesktop/secrets/prompt/p1"
        let delivered = Locked<[Result<Variant, SecretServiceError>]>([])
        let awaited = SignalRouter.AwaitedSignal(sender: Self.provider, interface: "org.freedesktop.Secret.Prompt", member: "Completed",
                                                 operation: "unlock") { result in delivered.withLock { $0.append(result) } }
        #expect(router.awaitSignal(awaited, on: try! ObjectPath(prompt), fromProvider: true))
        let completed = Argument.tuple([.boolean(false), .variant(.objectPaths([]))])
        receive(router, signal(from: ":1.99", path: prompt, "org.freedesktop.Secret.Prompt", "Completed", completed))
        #expect(delivered.withLock { $0 }.isEmpty, "a forged Completed is ignored")
        receive(router, signal(from: Self.provider, path: prompt, "org.freedesktop.Secret.Prompt", "Completed", completed))
        receive(router, signal(from: Self.provider, path: prompt, "org.freedesktop.Secret.Prompt", "Completed", completed))
        let results = delivered.withLock { $0 }
        #expect(results.count == 1)
        #expect((try? results[0].get().isOfType("(bv)")) == true)
        let other = SignalRouter.AwaitedSignal(sender: ":1.99", interface: "org.freedesktop.Secret.Prompt", member: "Completed",
                                               operation: "unlock") { _ in }
        #expect(!router.awaitSignal(other, on: try! ObjectPath(prompt), fromProvider: true),
                "a signal awaited from the provider must come from the process that owns the name")
    }
}

/// Reading arguments as replies carry them: typed, and a wrong type is a protocol error, never a crash.
@Suite("Argument decoding, without a bus")
struct ArgumentDecodingTests {
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

    @Test func aReplyOfAnotherTypeIsAProtocolError() {
        let reply = Reply(body: variant(.tuple([.string("/not/a/path/list")])), token: ChangeToken(connection: 1, count: 0))
        #expect(throws: SecretServiceError.self) { _ = try reply.body("(ao)", in: "search") }
        do {
            _ = try Reply(body: nil, token: ChangeToken(connection: 1, count: 0)).body("(o)", in: "create item")
            Issue.record("an empty reply must not pass")
        } catch {
            #expect(error.code == .protocolError && error.detail?.contains("(o)") == true)
        }
    }
}
