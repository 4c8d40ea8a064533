import CGLib
import DBusTransport
import Foundation
import Locking
import Testing
@testable import SecretService

/// Messages as GDBus's reader thread hands them to a connection's router, made here without a bus,
/// for the provider's traffic (``ProviderTraffic``) to read.
struct TrafficBench {
    static let provider = ":1.42"
    let traffic = ProviderTraffic()
    let router: MessageRouter

    /// A router whose provider is ``provider`` (as the answer to GetNameOwner sets it in use).
    init() {
        router = MessageRouter(busName: ":1.7", observer: traffic)
        traffic.attach(router)
        traffic.ownerAnswered(Self.provider)
    }

    func register(serial: UInt32, destination: String = provider, operation: String = "read secret",
                  _ deliver: @escaping @Sendable (Result<IncomingReply, BusError>) -> Void = { _ in }) {
        router.registering { _, register in
            register(serial, .init(destination: destination, path: "/org/freedesktop/secrets/collection/login/3",
                                   interface: "org.freedesktop.Secret.Item", member: "GetSecret", operation: operation, deliver: deliver))
        }
    }

    func reply(to serial: UInt32, _ body: Argument?, error: String? = nil, from sender: String = provider) -> OpaquePointer {
        let message = g_dbus_message_new()!
        g_dbus_message_set_sender(message, sender)
        g_dbus_message_set_message_type(message, error == nil ? G_DBUS_MESSAGE_TYPE_METHOD_RETURN : G_DBUS_MESSAGE_TYPE_ERROR)
        g_dbus_message_set_reply_serial(message, serial)
        if let error { g_dbus_message_set_error_name(message, error) }
        if let body { g_dbus_message_set_body(message, body.build()) }
        return message
    }

    func signal(from sender: String, path: String, _ interface: String, _ member: String, _ body: Argument?) -> OpaquePointer {
        let message = g_dbus_message_new_signal(path, interface, member)!
        g_dbus_message_set_sender(message, sender)
        if let body { g_dbus_message_set_body(message, body.build()) }
        return message
    }

    /// Hands `message` over; a message the router did not consume is released here, as the filter does.
    @discardableResult
    func receive(_ message: OpaquePointer) -> Bool {
        let consumed = router.receive(message)
        if !consumed { g_object_unref(UnsafeMutableRawPointer(message)) }
        return consumed
    }

    /// The router's answer to a call that got no reply, handed to the traffic as the connection does.
    func noReply(serial: UInt32) {
        if let pending = router.noReply(serial: serial) { traffic.noReply(to: pending) }
    }
}

/// What the provider's traffic teaches: changes counted only from the provider, its owner only on
/// the bus's word, and calls and prompts ended when the provider leaves.
@Suite("The provider's traffic, without a bus")
struct ProviderTrafficTests {
    @Test func changeSignalsCountOnlyFromTheProvider() {
        let bench = TrafficBench()
        let start = bench.traffic.token
        let collection = "/org/freedesktop/secrets/collection/login"
        bench.receive(bench.signal(from: ":1.99", path: collection, "org.freedesktop.Secret.Collection", "ItemCreated",
                                   .tuple([.objectPath(try! ObjectPath(collection + "/1"))])))
        #expect(bench.traffic.token.isUnchanged(since: start), "a forged ItemCreated is ignored")
        bench.receive(bench.signal(from: TrafficBench.provider, path: collection, "org.freedesktop.Secret.Collection", "ItemDeleted",
                                   .tuple([.objectPath(try! ObjectPath(collection + "/1"))])))
        #expect(bench.traffic.token.changes(since: start) == 1)
        bench.receive(bench.signal(from: TrafficBench.provider, path: "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                                   "CollectionChanged", .tuple([.objectPath(try! ObjectPath(collection))])))
        #expect(bench.traffic.token.changes(since: start) == 2, "a collection's change (its lock state) counts")
        bench.receive(bench.signal(from: TrafficBench.provider, path: collection, "org.freedesktop.DBus.Properties", "PropertiesChanged", nil))
        #expect(bench.traffic.token.changes(since: start) == 2, "other signals do not")
    }

    @Test func theOwnerChangesOnlyOnTheBussWord() {
        let bench = TrafficBench()
        let owners = Argument.tuple([.string("org.freedesktop.secrets"), .string(TrafficBench.provider), .string(":1.66")])
        bench.receive(bench.signal(from: ":1.99", path: "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", owners))
        #expect(bench.traffic.owner == TrafficBench.provider, "only the bus says who owns the name")
        bench.receive(bench.signal(from: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                   "NameOwnerChanged", .tuple([.string("org.example.Other"), .string(""), .string(":1.5")])))
        #expect(bench.traffic.owner == TrafficBench.provider, "another name's owner is not ours")
        bench.receive(bench.signal(from: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                   "NameOwnerChanged", owners))
        #expect(bench.traffic.owner == ":1.66")
    }

    /// The provider left the bus: its calls end at once as disconnected (the bus would leave a
    /// prompt waiting for ever), translated once for SecretService.
    @Test func callsToAProviderThatLeftEnd() async {
        let bench = TrafficBench()
        let ended = Locked<[SecretServiceError.Code]>([])
        bench.register(serial: 9) { result in
            if case .failure(let error) = result { ended.withLock { $0.append(SecretServiceError.translating(error, phase: .call).code) } }
        }
        bench.receive(bench.signal(from: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                                   .tuple([.string("org.freedesktop.secrets"), .string(TrafficBench.provider), .string("")])))
        await withCheckedContinuation { continuation in LoopThread.shared.perform { continuation.resume() } }
        #expect(ended.withLock { $0 } == [.disconnected])
        #expect(bench.traffic.owner == nil)
    }
}

@Suite("A connection's traffic and router are freed together")
struct TrafficLifetimeTests {
    /// The router holds its observer, the traffic, and the traffic the router (to end what waits on
    /// a provider that left): weakly, or neither would ever be freed (LeakSanitizer, 11 of each).
    @Test func aTrafficAndItsRouterAreFreed() {
        weak var traffic: ProviderTraffic?
        weak var router: MessageRouter?
        do {
            let bench = TrafficBench()
            (traffic, router) = (bench.traffic, bench.router)
            #expect(traffic != nil && router != nil)
        }
        #expect(traffic == nil && router == nil)
    }
}

@Suite("The provider's item announcements, without a bus")
struct ItemAnnouncementTests {
    private static let login = "/org/freedesktop/secrets/collection/login"

    private func item(_ kind: String, _ number: Int, from sender: String = TrafficBench.provider, _ bench: TrafficBench) {
        bench.receive(bench.signal(from: sender, path: Self.login, "org.freedesktop.Secret.Collection", kind,
                                   .tuple([.objectPath(try! ObjectPath("\(Self.login)/\(number)"))])))
    }

    /// Created, changed and deleted items are heard in order with their paths; another sender's are
    /// not; a mark tells what came since. The change token counts every announcement, ItemChanged
    /// included: an item whose attributes changed may now be another account's, or an app's own.
    @Test func announcementsAreHeardInOrderFromTheProviderAlone() throws {
        let bench = TrafficBench()
        let start = bench.traffic.announcementMark
        item("ItemCreated", 1, bench)
        item("ItemChanged", 1, bench)
        item("ItemChanged", 2, from: ":1.99", bench)
        item("ItemDeleted", 1, bench)
        let heard = try #require(bench.traffic.announcements(since: start))
        #expect(heard == [ItemAnnouncement(kind: .created, item: try ItemPath("\(Self.login)/1")),
                          ItemAnnouncement(kind: .changed, item: try ItemPath("\(Self.login)/1")),
                          ItemAnnouncement(kind: .deleted, item: try ItemPath("\(Self.login)/1"))])
        #expect(bench.traffic.announcements(since: bench.traffic.announcementMark) == [])
        #expect(bench.traffic.token.changes(since: ChangeToken(connection: bench.traffic.token.connection, count: 0)) == 4,
                "the owner answer, the creation, the change and the deletion")
        #expect(bench.traffic.token.count == bench.traffic.announcementMark.count, "one announcement per change")
    }

    /// A closed connection and a provider that changed hands may have hidden announcements: lost.
    @Test func aClosedConnectionOrANewProviderIsALoss() throws {
        let bench = TrafficBench()
        let start = bench.traffic.announcementMark
        bench.receive(bench.signal(from: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                                   .tuple([.string("org.freedesktop.secrets"), .string(TrafficBench.provider), .string(":1.50")])))
        bench.traffic.closed()
        #expect(try #require(bench.traffic.announcements(since: start)).map(\.kind) == [.lost, .lost])
    }

    /// Only the latest announcements are kept: a mark older than them is answered "unknown".
    @Test func aMarkOlderThanTheLogIsUnknown() {
        let bench = TrafficBench()
        let start = bench.traffic.announcementMark
        for number in 0...AnnouncementLog.capacity { item("ItemChanged", number, bench) }
        #expect(bench.traffic.announcements(since: start) == nil)
        #expect(bench.traffic.announcements(since: AnnouncementMark(connection: 1, count: 0)) == nil, "another connection's")
    }
}
