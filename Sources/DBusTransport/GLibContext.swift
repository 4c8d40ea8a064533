internal import CGLib
#if canImport(Glibc)
import Glibc
#endif

/// What the TPM target needs of GLib and D-Bus outside the transport's loop: both block the
/// calling thread, so they are for a thread of its own (the TPM's), never Swift's cooperative
/// threads.
package enum BlockingBus {
    /// Runs `body` with a GLib main context of its own as the thread's default, then dispatches
    /// what is left on it and drops it. tpm2-abrmd's TCTI uses GDBus, which attaches its sources (a
    /// closed connection's signal, a proxy's subscriptions) to the thread-default context when
    /// there is one, and to the application's global default context otherwise: a GTK app would
    /// then run them on its main loop.
    package static func withPrivateMainContext<Value>(_ body: () -> Value) -> Value {
        let context = g_main_context_new()
        g_main_context_push_thread_default(context)
        defer {
            while g_main_context_iteration(context, 0) != 0 {}
            g_main_context_pop_thread_default(context)
            g_main_context_unref(context)
        }
        return body()
    }

    /// Whether `name` has an owner on the bus at `address`, asked on a private connection closed
    /// afterwards, within `timeout` for the call (GDBus's own limit for the connection); false when
    /// the bus cannot be reached. Blocks the calling thread.
    package static func nameHasOwner(_ name: String, onBusAt address: String, timeout: Duration) -> Bool {
        // No socket at a plain unix:path address: no bus, and no need for GDBus to say so.
        if address.hasPrefix("unix:path="), !address.contains(","), access(String(address.dropFirst(10)), F_OK) != 0 {
            return false
        }
        let flags = GDBusConnectionFlags(rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                                         | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        guard let connection = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, nil) else { return false }
        defer {
            g_dbus_connection_close_sync(connection, nil, nil)
            g_object_unref(UnsafeMutableRawPointer(connection))
        }
        var arguments = [g_variant_new_string(name)]
        let parameters = arguments.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, 1) }
        let milliseconds = Int32(clamping: LoopThread.milliseconds(timeout))
        guard let reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
            parameters, nil, G_DBUS_CALL_FLAGS_NO_AUTO_START, milliseconds, nil, nil) else { return false }
        defer { g_variant_unref(reply) }
        guard let value = g_variant_get_child_value(reply, 0) else { return false }
        defer { g_variant_unref(value) }
        return g_variant_get_boolean(value) != 0
    }
}
