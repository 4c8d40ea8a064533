internal import CGLib

// Ownership of GLib things: the one GError helper and the one GObject owner. Raw pointers,
// `GError` and GLib reference counts stay in this target (this file, Variants.swift,
// BusConnection.swift, MessageRouter.swift with a message filter's C callback, LoopThread.swift with
// the main context and its sources, GLibContext.swift); libgcrypt's are in the Gcrypt module. Every
// target above sees Swift values.

/// A `GError`, copied into Swift (the `GError` itself is freed by ``takeGError(_:)``).
struct CapturedError: Sendable, Hashable {
    enum Domain: Sendable, Hashable { case io, dbus, other }
    var domain: Domain
    var code: Int32
    /// The message with GDBus's "GDBus.Error:name: " prefix removed. GLib never puts secret bytes
    /// in error messages.
    var message: String
    /// The D-Bus error name when the error came from a remote peer.
    var remoteName: String?
    /// The GLib error domain's name, e.g. `g-io-error-quark`.
    var domainName: String

    /// An error reply received as a D-Bus message (the transport reads these itself).
    static func remote(name: String, message: String) -> CapturedError {
        CapturedError(domain: .dbus, code: 0, message: message, remoteName: name, domainName: "remote")
    }

    /// What a developer needs to see: the domain, the code and the message.
    var developerText: String {
        "\(message) (\(remoteName ?? "\(domainName) \(code)"))"
    }

    /// The transport's error for it: the one translation of a `GError` and of an error reply.
    func busError(operation: String) -> BusError {
        if let remoteName { return BusError(.remote, operation: operation, remoteName: remoteName, text: message) }
        switch (domain, code) {
        case (.io, Int32(G_IO_ERROR_CANCELLED.rawValue)):
            return BusError(.cancelled, operation: operation, text: developerText)
        case (.io, Int32(G_IO_ERROR_TIMED_OUT.rawValue)):
            return BusError(.timedOut, operation: operation, text: developerText)
        case (.io, Int32(G_IO_ERROR_CLOSED.rawValue)), (.io, Int32(G_IO_ERROR_BROKEN_PIPE.rawValue)),
             (.io, Int32(G_IO_ERROR_CONNECTION_CLOSED.rawValue)):
            return BusError(.closed, operation: operation, text: developerText)
        default:
            return BusError(.failed, operation: operation, text: developerText)
        }
    }
}

/// Copies and frees a `GError`: the one place a `GError*` is released.
func takeGError(_ error: UnsafeMutablePointer<GError>) -> CapturedError {
    defer { g_error_free(error) }
    var remoteName: String?
    if let remote = g_dbus_error_get_remote_error(error) {
        defer { g_free(remote) }
        remoteName = String(cString: remote)
        g_dbus_error_strip_remote_error(error)
    }
    let quark = error.pointee.domain
    let domain: CapturedError.Domain =
        quark == g_io_error_quark() ? .io
        : quark == g_dbus_error_quark() ? .dbus : .other
    return CapturedError(
        domain: domain, code: error.pointee.code,
        message: error.pointee.message.map { String(cString: $0) } ?? "unknown error",
        remoteName: remoteName, domainName: g_quark_to_string(quark).map { String(cString: $0) } ?? "")
}

/// Owns one reference to a GObject and drops it on the loop thread.
///
/// `@unchecked Sendable`: the pointer never changes, and the object is used only where its type
/// allows: a `GDBusConnection` or `GCancellable` from any thread (GIO documents both as
/// thread-safe). The last reference is dropped on the loop thread, where the connection's
/// `closed` signal handler was connected.
final class GObjectOwner: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    /// Takes ownership of one reference (a `transfer full` return).
    init(adopting raw: UnsafeMutableRawPointer) { self.raw = raw }
    convenience init(adopting opaque: OpaquePointer) { self.init(adopting: UnsafeMutableRawPointer(opaque)) }
    convenience init<T>(adopting typed: UnsafeMutablePointer<T>) { self.init(adopting: UnsafeMutableRawPointer(typed)) }

    /// The object, for GObject types Swift imports as opaque (GDBusConnection, GCancellable).
    var opaque: OpaquePointer { OpaquePointer(raw) }
    /// The object as a pointer to its C struct.
    func typed<T>(_ type: T.Type) -> UnsafeMutablePointer<T> { raw.assumingMemoryBound(to: type) }

    deinit {
        let raw = LoopBound(raw)
        LoopThread.shared.perform { g_object_unref(raw.value) }
    }
}

/// The body of one GAsyncReadyCallback: created on the loop thread, invoked and released there.
final class AsyncCallback {
    let body: (OpaquePointer?) -> Void
    init(_ body: @escaping (OpaquePointer?) -> Void) { self.body = body }

    /// Passes one retained callback as user data; ``trampoline`` takes it back exactly once.
    static func userData(_ body: @escaping (_ result: OpaquePointer?) -> Void) -> gpointer {
        Unmanaged.passRetained(AsyncCallback(body)).toOpaque()
    }

    static let trampoline: GAsyncReadyCallback = { _, result, userData in
        Unmanaged<AsyncCallback>.fromOpaque(userData!).takeRetainedValue().body(result)
    }
}
