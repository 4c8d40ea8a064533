#if canImport(Glibc)
import Glibc
#endif

/// Where a client connects: the session bus, or any D-Bus address (a test's private bus).
public struct BusAddress: Sendable, Hashable, CustomStringConvertible {
    let address: String?

    /// The session bus: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`. Never autolaunches
    /// a bus (no bus is an error at once).
    public static let session = BusAddress(address: nil)

    /// A D-Bus address such as `unix:path=/run/user/1000/bus`.
    public static func address(_ address: String) -> BusAddress { BusAddress(address: address) }

    /// The address, or "the session bus".
    public var description: String { address ?? "the session bus" }

    /// The address to connect to, or nil when there is no session bus.
    package func resolved() -> String? {
        if let address { return address }
        if let value = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }), !value.isEmpty {
            return value
        }
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty {
            var info = stat()
            let socket = runtime + "/bus"
            if stat(socket, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { return "unix:path=" + socket }
        }
        return nil
    }
}
