import CGLib
import Foundation
@testable import DBusTransport

final class Counter: @unchecked Sendable {
    // @unchecked Sendable: the count is only touched under the lock.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Messages as GDBus's reader thread hands them to a router, made here without a bus.
enum Messages {
    static func reply(to serial: UInt32, _ body: Argument?, error: String? = nil, from sender: String? = nil) -> OpaquePointer {
        let message = g_dbus_message_new()!
        if let sender { g_dbus_message_set_sender(message, sender) }
        g_dbus_message_set_message_type(message, error == nil ? G_DBUS_MESSAGE_TYPE_METHOD_RETURN : G_DBUS_MESSAGE_TYPE_ERROR)
        g_dbus_message_set_reply_serial(message, serial)
        if let error { g_dbus_message_set_error_name(message, error) }
        if let body { g_dbus_message_set_body(message, body.build()) }
        return message
    }

    static func signal(from sender: String, path: String, _ interface: String, _ member: String, _ body: Argument?) -> OpaquePointer {
        let message = g_dbus_message_new_signal(path, interface, member)!
        g_dbus_message_set_sender(message, sender)
        if let body { g_dbus_message_set_body(message, body.build()) }
        return message
    }

    /// Hands `message` over; a message the router did not consume is released here, as the filter does.
    @discardableResult
    static func receive(_ router: MessageRouter, _ message: OpaquePointer) -> Bool {
        let consumed = router.receive(message)
        if !consumed { g_object_unref(UnsafeMutableRawPointer(message)) }
        return consumed
    }
}
