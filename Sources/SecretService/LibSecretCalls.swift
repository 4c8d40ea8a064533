internal import CLibSecret
import Locking
import Foundation

// The thin layer over libsecret and GIO: one wrapper per asynchronous C call, each started on the
// GLib loop thread and bridged to Swift by `PendingCall` (and GetSecret, sent from the calling
// thread and answered through `DirectReplies`, at the end). Raw pointers, `GError` and GLib
// ownership do not leave this file (and `GLibLoop.swift`); everything it returns is a Swift value
// or a `GObjectOwner`.

/// A `GError` copied into Swift. The `GError` itself is freed by `takeGError`.
struct GLibError: Error, Sendable {
    enum Domain: Sendable { case secret, io, dbus, other }
    let domain: Domain
    let code: Int32
    /// The message with any "GDBus.Error:name:" prefix removed. libsecret and GIO never put
    /// secret bytes in error messages; providers' messages are about objects and paths.
    let message: String
    /// The D-Bus error name when the error came from a remote peer.
    let remoteName: String?
    /// The GLib error domain's name, e.g. `g-io-error-quark`.
    var domainName: String = ""
}

/// Copies and frees a `GError` (the one place a `GError*` is released).
func takeGError(_ error: UnsafeMutablePointer<GError>) -> GLibError {
    defer { g_error_free(error) }
    var remoteName: String?
    if let remote = g_dbus_error_get_remote_error(error) {
        defer { g_free(remote) }
        remoteName = String(cString: remote)
        g_dbus_error_strip_remote_error(error)
    }
    let quark = error.pointee.domain
    let domain: GLibError.Domain =
        quark == clibsecret_secret_error_quark() ? .secret
        : quark == clibsecret_io_error_quark() ? .io
        : quark == clibsecret_dbus_error_quark() ? .dbus : .other
    let message = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
    var copied = GLibError(domain: domain, code: error.pointee.code, message: message, remoteName: remoteName)
    copied.domainName = g_quark_to_string(quark).map { String(cString: $0) } ?? ""
    return copied
}

/// Signal subscriptions and the ``DirectReplies`` filter on one D-Bus connection, removed (on the
/// loop thread) when released.
///
/// `@unchecked Sendable`: the connection pointer is only used on the loop thread, in `deinit`.
final class SignalSubscription: @unchecked Sendable {
    private let connection: OpaquePointer
    private let ids: [guint]
    private let filterID: guint

    /// Takes one reference to `connection`, released with the subscriptions.
    init(connection: OpaquePointer, ids: [guint], filterID: guint) {
        self.connection = connection
        self.ids = ids
        self.filterID = filterID
    }

    deinit {
        let subscription = LoopBound((connection, ids, filterID))
        GLibLoop.shared.perform {
            for id in subscription.value.1 { g_dbus_connection_signal_unsubscribe(subscription.value.0, id) }
            g_dbus_connection_remove_filter(subscription.value.0, subscription.value.2)
            g_object_unref(UnsafeMutableRawPointer(subscription.value.0))
        }
    }
}

/// The secret bytes and content type of a `SecretValue`, copied out of libsecret's secure memory.
struct RawSecret: Sendable {
    var bytes: Data
    var contentType: String
}

// MARK: - Callback plumbing

/// The body of one GAsyncReadyCallback. Created, invoked and released on the loop thread.
private final class AsyncCallback {
    let body: (OpaquePointer?) -> Void
    init(_ body: @escaping (OpaquePointer?) -> Void) { self.body = body }
}

/// Passes one retained `AsyncCallback` as user data; the trampoline takes it back exactly once.
private func callbackData(_ body: @escaping (_ result: OpaquePointer?) -> Void) -> gpointer {
    Unmanaged.passRetained(AsyncCallback(body)).toOpaque()
}

private let trampoline: GAsyncReadyCallback = { _, result, userData in
    Unmanaged<AsyncCallback>.fromOpaque(userData!).takeRetainedValue().body(result)
}

/// Finishes `call` with `value`, or with the error that the `_finish` function reported.
private func complete<Value>(
    _ call: PendingCall<Value>, _ value: Value?, _ error: UnsafeMutablePointer<GError>?
) {
    if let error {
        call.finish(.failure(takeGError(error)))
    } else if let value {
        call.finish(.success(value))
    } else {
        call.finish(.failure(GLibError(domain: .other, code: 0, message: "no result and no error", remoteName: nil)))
    }
}

// MARK: - GLib containers

/// A new `GHashTable` of strings to strings; the caller unrefs it.
private func newAttributeTable(_ attributes: [String: String]) -> OpaquePointer {
    let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
    for (name, value) in attributes {
        g_hash_table_insert(table, g_strdup(name), g_strdup(value))
    }
    return table
}

/// Copies a NULL-terminated `gchar**` into Swift and frees it.
private func takeStringArray(_ array: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
    guard let array else { return [] }
    defer { g_strfreev(array) }
    var strings: [String] = []
    var index = 0
    while let element = array[index] {
        strings.append(String(cString: element))
        index += 1
    }
    return strings
}

/// Copies a `SecretValue` out and drops our reference to it.
private func takeSecretValue(_ value: OpaquePointer) -> RawSecret {
    defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
    var length: gsize = 0
    let bytes = secret_value_get(value, &length)
    let data = bytes.map { Data(bytes: $0, count: Int(length)) } ?? Data()
    let contentType = secret_value_get_content_type(value).map { String(cString: $0) } ?? ""
    return RawSecret(bytes: data, contentType: contentType)
}

/// A new `SecretValue` holding a copy of `secret`; the caller unrefs it.
private func newSecretValue(_ secret: RawSecret) -> OpaquePointer {
    secret.bytes.withUnsafeBytes { buffer in
        // secret_value_new copies into libsecret's non-pageable, wiped-on-free memory.
        let base = buffer.baseAddress?.assumingMemoryBound(to: gchar.self)
        return "".withCString { empty in
            secret_value_new(base ?? empty, gssize(buffer.count), secret.contentType)!
        }
    }
}

// MARK: - GVariant helpers (all run on the loop thread)

/// A `GVariantType` is its type string; a static string literal lives as long as the program,
/// which is what GLib expects of the `G_VARIANT_TYPE()` macro's argument.
private func variantType(_ typeString: StaticString) -> OpaquePointer {
    OpaquePointer(typeString.utf8Start)
}

private func stringVariant(_ string: String) -> OpaquePointer { g_variant_new_string(string)! }

private func attributesVariant(_ attributes: [String: String]) -> OpaquePointer {
    var entries: [OpaquePointer?] = attributes.sorted { $0.key < $1.key }.map { name, value in
        g_variant_new_dict_entry(stringVariant(name), stringVariant(value))
    }
    return entries.withUnsafeMutableBufferPointer { buffer in
        g_variant_new_array(variantType("{ss}"), buffer.baseAddress, gsize(buffer.count))!
    }
}

private func stringValue(_ variant: OpaquePointer) -> String {
    String(cString: g_variant_get_string(variant, nil))
}

/// Reads `a{ss}` into a dictionary.
private func attributesValue(_ variant: OpaquePointer) -> [String: String] {
    var attributes: [String: String] = [:]
    for index in 0..<g_variant_n_children(variant) {
        guard let entry = g_variant_get_child_value(variant, index) else { continue }
        defer { g_variant_unref(entry) }
        let name = g_variant_get_child_value(entry, 0)!
        let value = g_variant_get_child_value(entry, 1)!
        defer { g_variant_unref(name); g_variant_unref(value) }
        attributes[stringValue(name)] = stringValue(value)
    }
    return attributes
}

/// Item or collection properties from `org.freedesktop.DBus.Properties.GetAll`.
struct RawProperties: Sendable {
    var label: String?
    var attributes: [String: String]?
    var locked: Bool?
    var created: UInt64?
    var modified: UInt64?
    /// The service's `Collections` property.
    var collections: [String]?
}

private func parseProperties(_ reply: OpaquePointer) -> RawProperties {
    // reply is "(a{sv})"
    var properties = RawProperties()
    guard let dictionary = g_variant_get_child_value(reply, 0) else { return properties }
    defer { g_variant_unref(dictionary) }
    func lookup(_ key: String, _ type: StaticString) -> OpaquePointer? {
        g_variant_lookup_value(dictionary, key, variantType(type))
    }
    if let value = lookup("Label", "s") { properties.label = stringValue(value); g_variant_unref(value) }
    if let value = lookup("Attributes", "a{ss}") { properties.attributes = attributesValue(value); g_variant_unref(value) }
    if let value = lookup("Locked", "b") { properties.locked = g_variant_get_boolean(value) != 0; g_variant_unref(value) }
    if let value = lookup("Created", "t") { properties.created = UInt64(g_variant_get_uint64(value)); g_variant_unref(value) }
    if let value = lookup("Modified", "t") { properties.modified = UInt64(g_variant_get_uint64(value)); g_variant_unref(value) }
    if let value = lookup("Collections", "ao") {
        var paths: [String] = []
        for index in 0..<g_variant_n_children(value) {
            let child = g_variant_get_child_value(value, index)!
            paths.append(stringValue(child))
            g_variant_unref(child)
        }
        properties.collections = paths
        g_variant_unref(value)
    }
    return properties
}

// MARK: - The calls

/// One wrapper per libsecret / GIO asynchronous function. Each runs on the loop thread and ends
/// its `PendingCall` from the C callback.
enum LibSecret {
    typealias Service = GObjectOwner<SecretService>
    typealias Item = GObjectOwner<SecretItem>

    /// Connects to the session bus and makes the process survive the bus closing (GIO's default
    /// for the shared bus connection is to exit the process). The corresponding C function is
    /// `g_bus_get`.
    static func busGet(deadline: Deadline) async throws {
        try await PendingCall<Bool>.run(operation: "connect to the session bus", deadline: deadline,
                                        dependsOnProvider: false) { call in
            g_bus_get(G_BUS_TYPE_SESSION, call.cancellable.pointer, trampoline, callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let connection = g_bus_get_finish(result, &error)
                if let connection {
                    g_dbus_connection_set_exit_on_close(connection, 0)
                    g_object_unref(UnsafeMutableRawPointer(connection))
                }
                complete(call, connection == nil ? nil : true, error)
            })
        }
    }

    /// Opens a new (unshared) `SecretService` proxy with a transport session. A fresh instance per
    /// connection is what lets the client recover after the daemon restarts. It is of our
    /// subclass (CLibSecret's `clibsecret_service_get_type`), which keeps libsecret 0.20.5 from
    /// crashing when the provider restarts. The corresponding C function is `secret_service_open`.
    static func serviceOpen(deadline: Deadline) async throws -> Service {
        try await PendingCall<Service>.run(operation: "open a Secret Service session", deadline: deadline) { call in
            secret_service_open(clibsecret_service_get_type(), nil, SECRET_SERVICE_OPEN_SESSION, call.cancellable.pointer, trampoline,
                                callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let service = secret_service_open_finish(result, &error)
                if let service {
                    // Deadlines are ours; GDBus must not time calls out on its own after 25 s.
                    g_dbus_proxy_set_default_timeout(clibsecret_service_as_proxy(service), Int32.max)
                }
                complete(call, service.map { Service(adopting: $0) }, error)
            })
        }
    }

    /// The transport algorithm the session negotiated: `plain` or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    /// Reads a property cached by the proxy; no D-Bus traffic. The corresponding C function is
    /// `secret_service_get_session_algorithms`.
    static func sessionAlgorithms(_ service: Service) async -> String {
        await withCheckedContinuation { continuation in
            GLibLoop.shared.perform {
                let algorithms = secret_service_get_session_algorithms(service.pointer)
                continuation.resume(returning: algorithms.map { String(cString: $0) } ?? "")
            }
        }
    }

    /// Subscribes to the provider's `ItemCreated` and `ItemDeleted` collection signals and its
    /// `Collection…` service signals, which advance ``ItemChanges/generation``, and to the bus's
    /// `NameOwnerChanged` for `org.freedesktop.secrets`, which advances
    /// ``ProviderChanges/epoch``; the ``DirectReplies`` filter installed here counts them. Returns
    /// the subscription, released by the owner. The corresponding C functions are
    /// `g_dbus_connection_signal_subscribe` and `g_dbus_connection_add_filter`.
    static func subscribeToChanges(_ service: Service) async -> SignalSubscription {
        await withCheckedContinuation { continuation in
            GLibLoop.shared.perform {
                let connection = g_dbus_proxy_get_connection(clibsecret_service_as_proxy(service.pointer))!
                // The subscriptions make the bus send us these signals (their match rules); the
                // counters are advanced by the DirectReplies filter, which sees each signal on
                // GDBus's reader thread in order with the replies that follow it. (Callbacks here
                // run later, on the loop: a reply handed straight to a task could overtake them.)
                let items = g_dbus_connection_signal_subscribe(
                    connection, "org.freedesktop.secrets", "org.freedesktop.Secret.Collection", nil, nil, nil,
                    G_DBUS_SIGNAL_FLAGS_NONE, { _, _, _, _, _, _, _ in }, nil, nil)
                let collections = g_dbus_connection_signal_subscribe(
                    connection, "org.freedesktop.secrets", "org.freedesktop.Secret.Service", nil,
                    "/org/freedesktop/secrets", nil, G_DBUS_SIGNAL_FLAGS_NONE, { _, _, _, _, _, _, _ in }, nil, nil)
                // arg0 is the name whose owner changed; only the provider's name matters here.
                let owner = g_dbus_connection_signal_subscribe(
                    connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                    "/org/freedesktop/DBus", "org.freedesktop.secrets", G_DBUS_SIGNAL_FLAGS_NONE,
                    { _, _, _, _, _, _, _ in }, nil, nil)
                let filter = DirectReplies.installFilter(on: connection)
                g_object_ref(UnsafeMutableRawPointer(connection))
                continuation.resume(returning: SignalSubscription(connection: connection, ids: [items, collections, owner], filterID: filter))
            }
        }
    }

    /// The unique bus name (":1.42") currently owning the service's well-known name, or nil when
    /// no one owns it. The proxy keeps it current from NameOwnerChanged; no D-Bus traffic. The
    /// corresponding C function is `g_dbus_proxy_get_name_owner`.
    static func nameOwner(_ service: Service) async -> String? {
        await withCheckedContinuation { continuation in
            GLibLoop.shared.perform {
                let owner = g_dbus_proxy_get_name_owner(clibsecret_service_as_proxy(service.pointer))
                defer { g_free(owner) }
                continuation.resume(returning: owner.map { String(cString: $0) })
            }
        }
    }

    /// The object path an alias points to, or nil when the alias is not set. The corresponding C
    /// function is `secret_service_read_alias_dbus_path`.
    static func readAlias(_ service: Service, alias: String, deadline: Deadline) async throws -> String? {
        let path = try await PendingCall<String>.run(operation: "read alias '\(alias)'", deadline: deadline) { call in
            secret_service_read_alias_dbus_path(service.pointer, alias, call.cancellable.pointer, trampoline,
                                                callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let path = secret_service_read_alias_dbus_path_finish(service.pointer, result, &error)
                defer { g_free(path) }
                // An unset alias is NULL without an error; "/" is how the spec spells "none".
                complete(call, error == nil ? (path.map { String(cString: $0) } ?? "/") : nil, error)
            })
        }
        return path == "/" ? nil : path
    }

    /// Item paths whose attributes include `attributes`, split by lock state. Searches every
    /// collection. The corresponding C function is `secret_service_search_for_dbus_paths`.
    static func searchPaths(
        _ service: Service, attributes: [String: String], deadline: Deadline
    ) async throws -> (unlocked: [String], locked: [String]) {
        let found = try await PendingCall<[[String]]>.run(operation: "search items", deadline: deadline) { call in
            let table = newAttributeTable(attributes)
            defer { g_hash_table_unref(table) }
            secret_service_search_for_dbus_paths(service.pointer, nil, table, call.cancellable.pointer, trampoline,
                                                 callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                let ok = secret_service_search_for_dbus_paths_finish(service.pointer, result, &unlocked, &locked, &error)
                let paths = [takeStringArray(unlocked), takeStringArray(locked)]
                complete(call, ok != 0 ? paths : nil, error)
            })
        }
        return (found[0], found[1])
    }

    /// A proxy for one item, with its properties loaded (one GetAll round trip). The corresponding
    /// C function is `secret_item_new_for_dbus_path`.
    static func itemProxy(_ service: Service, path: String, deadline: Deadline) async throws -> Item {
        try await PendingCall<Item>.run(operation: "load item", deadline: deadline) { call in
            secret_item_new_for_dbus_path(service.pointer, path, SECRET_ITEM_NONE, call.cancellable.pointer,
                                          trampoline, callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let item = secret_item_new_for_dbus_path_finish(result, &error)
                complete(call, item.map { Item(adopting: $0) }, error)
            })
        }
    }

    /// Replaces an item's secret in place (one SetSecret round trip, one keyring write). The
    /// corresponding C function is `secret_item_set_secret`.
    static func setSecret(_ item: Item, _ secret: RawSecret, deadline: Deadline) async throws {
        try await PendingCall<Bool>.run(operation: "write secret", deadline: deadline) { call in
            let value = newSecretValue(secret)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            secret_item_set_secret(item.pointer, value, call.cancellable.pointer, trampoline, callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = secret_item_set_secret_finish(item.pointer, result, &error)
                complete(call, ok != 0 ? true : nil, error)
            })
        }
    }

    /// Replaces an item's attributes. The corresponding C function is `secret_item_set_attributes`.
    static func setAttributes(_ item: Item, _ attributes: [String: String], deadline: Deadline) async throws {
        try await PendingCall<Bool>.run(operation: "write attributes", deadline: deadline) { call in
            let table = newAttributeTable(attributes)
            defer { g_hash_table_unref(table) }
            secret_item_set_attributes(item.pointer, nil, table, call.cancellable.pointer, trampoline,
                                       callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = secret_item_set_attributes_finish(item.pointer, result, &error)
                complete(call, ok != 0 ? true : nil, error)
            })
        }
    }

    /// Replaces an item's label. The corresponding C function is `secret_item_set_label`.
    static func setLabel(_ item: Item, _ label: String, deadline: Deadline) async throws {
        try await PendingCall<Bool>.run(operation: "write label", deadline: deadline) { call in
            secret_item_set_label(item.pointer, label, call.cancellable.pointer, trampoline, callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = secret_item_set_label_finish(item.pointer, result, &error)
                complete(call, ok != 0 ? true : nil, error)
            })
        }
    }

    /// Creates an item (CreateItem; with `replace`, the provider replaces an item with exactly the
    /// same attributes instead of adding a second one). Returns the new item's path. The
    /// corresponding C function is `secret_service_create_item_dbus_path`.
    static func createItem(
        _ service: Service, collection: String, label: String, attributes: [String: String],
        secret: RawSecret, replace: Bool, deadline: Deadline
    ) async throws -> String {
        try await PendingCall<String>.run(operation: "create item", deadline: deadline) { call in
            let properties = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, { g_variant_unref(OpaquePointer($0)) })!
            defer { g_hash_table_unref(properties) }
            g_hash_table_insert(properties, g_strdup("org.freedesktop.Secret.Item.Label"),
                                UnsafeMutableRawPointer(g_variant_ref_sink(stringVariant(label))))
            g_hash_table_insert(properties, g_strdup("org.freedesktop.Secret.Item.Attributes"),
                                UnsafeMutableRawPointer(g_variant_ref_sink(attributesVariant(attributes))))
            let value = newSecretValue(secret)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            let flags = replace ? SECRET_ITEM_CREATE_REPLACE : SECRET_ITEM_CREATE_NONE
            secret_service_create_item_dbus_path(service.pointer, collection, properties, value, flags,
                                                 call.cancellable.pointer, trampoline, callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let path = secret_service_create_item_dbus_path_finish(service.pointer, result, &error)
                defer { g_free(path) }
                complete(call, path.map { String(cString: $0) }, error)
            })
        }
    }

    /// Deletes an item (and completes any confirmation prompt the provider returns). The
    /// corresponding C function is `secret_service_delete_item_dbus_path`.
    static func deleteItem(_ service: Service, path: String, deadline: Deadline) async throws {
        try await PendingCall<Bool>.run(operation: "delete item", deadline: deadline) { call in
            secret_service_delete_item_dbus_path(service.pointer, path, call.cancellable.pointer, trampoline,
                                                 callbackData { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = secret_service_delete_item_dbus_path_finish(service.pointer, result, &error)
                complete(call, ok != 0 ? true : nil, error)
            })
        }
    }

    /// Asks the provider to unlock objects; may show a prompt. Returns the paths now unlocked.
    /// The corresponding C function is `secret_service_unlock_dbus_paths`.
    static func unlock(_ service: Service, paths: [String], deadline: Deadline) async throws -> [String] {
        try await PendingCall<[String]>.run(operation: "unlock", deadline: deadline) { call in
            var cStrings = paths.map { g_strdup($0) } + [nil]
            defer { cStrings.forEach { g_free($0) } }
            cStrings.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: buffer.count) { array in
                    secret_service_unlock_dbus_paths(service.pointer, array, call.cancellable.pointer, trampoline,
                                                     callbackData { result in
                        var error: UnsafeMutablePointer<GError>?
                        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                        _ = secret_service_unlock_dbus_paths_finish(service.pointer, result, &unlocked, &error)
                        let paths = takeStringArray(unlocked)
                        complete(call, error == nil ? paths : nil, error)
                    })
                }
            }
        }
    }

    /// Calls a D-Bus method with one string argument on the provider's connection and parses the
    /// reply on the loop thread (the reply is released afterwards). `destination` nil means the
    /// Secret Service itself. The corresponding C function is `g_dbus_connection_call`.
    private static func callMethod<Value: Sendable>(
        _ service: Service, operation: String, destination: String? = nil, path: String, interface: String,
        method: String, argument: String, replyType: StaticString, deadline: Deadline,
        parse: @escaping @Sendable (OpaquePointer) -> Value
    ) async throws -> Value {
        try await PendingCall<Value>.run(operation: operation, deadline: deadline) { call in
            let proxy = clibsecret_service_as_proxy(service.pointer)
            let connection = g_dbus_proxy_get_connection(proxy)
            var arguments: [OpaquePointer?] = [stringVariant(argument)]
            let parameters = arguments.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, 1) }
            g_dbus_connection_call(
                connection, destination ?? g_dbus_proxy_get_name(proxy).map { String(cString: $0) }, path,
                interface, method, parameters, variantType(replyType), G_DBUS_CALL_FLAGS_NONE, Int32.max,
                call.cancellable.pointer, trampoline, callbackData { result in
                    var error: UnsafeMutablePointer<GError>?
                    let reply = g_dbus_connection_call_finish(connection, result, &error)
                    defer { if let reply { g_variant_unref(reply) } }
                    complete(call, reply.map(parse), error)
                })
        }
    }

    /// The process ID of the connection owning `name` on the bus
    /// (`org.freedesktop.DBus.GetConnectionUnixProcessID`).
    static func processID(_ service: Service, owning name: String, deadline: Deadline) async throws -> UInt32 {
        try await callMethod(
            service, operation: "identify the provider", destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", method: "GetConnectionUnixProcessID",
            argument: name, replyType: "(u)", deadline: deadline
        ) { reply in
            let child = g_variant_get_child_value(reply, 0)!
            defer { g_variant_unref(child) }
            return UInt32(g_variant_get_uint32(child))
        }
    }

    /// All properties of an object (`org.freedesktop.DBus.Properties.GetAll`), read fresh from the
    /// provider rather than from a proxy's cache.
    static func properties(
        _ service: Service, path: String, interface: String, deadline: Deadline
    ) async throws -> RawProperties {
        try await callMethod(
            service, operation: "read properties", path: path, interface: "org.freedesktop.DBus.Properties",
            method: "GetAll", argument: interface, replyType: "(a{sv})", deadline: deadline, parse: parseProperties)
    }
}

// MARK: - GetSecret without a hop to the loop thread

/// Reads a known item's secret with one GetSecret round trip that never passes through the GLib
/// loop thread.
///
/// libsecret's asynchronous calls must start, and report back, on the loop's main context: a read
/// costs the hop from the calling thread to the loop, and the hop from GDBus's worker thread to
/// the loop, on top of the round trip itself. Here the calling thread sends the message (GDBus's
/// send is thread-safe and never blocks), and a message filter — which GDBus runs on its worker
/// thread as the reply is read — hands the reply straight to the waiting task. The secret is then
/// decrypted with libsecret's own session (`secret_service_decode_dbus_secret`) on the caller's
/// thread. Deadlines are kept by one timer on the loop, armed only for the earliest pending call.
/// A GLib object that passes from one thread to another, used by one thread at a time: the
/// message the calling thread builds and sends, the reply the filter hands to the waiting task.
///
/// `@unchecked Sendable`: whoever hands the value over never touches it again (the filter returns
/// NULL to GDBus for a reply it hands over, and the sender only reads the reply it was given), and
/// GObject reference counting is thread-safe.
struct HandedOver<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

final class DirectReplies: Sendable {
    static let shared = DirectReplies()

    /// One call waiting for its reply: resumed exactly once, by the reply, the deadline or
    /// cancellation.
    final class Waiter: Sendable {
        private enum Phase {
            case notStarted
            case waiting(CheckedContinuation<HandedOver<OpaquePointer>, any Error>)
            case finished
        }
        let operation: String
        let deadline: Deadline
        private let phase = Locked<Phase>(.notStarted)

        init(operation: String, deadline: Deadline) {
            self.operation = operation
            self.deadline = deadline
        }

        /// Starts waiting; false when the call already ended (its Task was cancelled first).
        func install(_ continuation: CheckedContinuation<HandedOver<OpaquePointer>, any Error>) -> Bool {
            phase.withLock { phase in
                guard case .notStarted = phase else { return false }
                phase = .waiting(continuation)
                return true
            }
        }

        /// Delivers `result` unless the call already ended; a reply that comes too late is released.
        func finish(_ result: Result<OpaquePointer, any Error>) {
            let waiting = phase.withLock { phase -> CheckedContinuation<HandedOver<OpaquePointer>, any Error>? in
                defer { phase = .finished }
                if case .waiting(let continuation) = phase { return continuation }
                return nil
            }
            guard let waiting else {
                if case .success(let message) = result { g_object_unref(UnsafeMutableRawPointer(message)) }
                return
            }
            waiting.resume(with: result.map { HandedOver($0) })
        }
    }

    private struct State {
        var waiting: [UInt32: Waiter] = [:]
        /// When the armed deadline timer fires, if one is armed.
        var timerDue: ContinuousClock.Instant?
    }
    private let state = Locked(State())

    /// Adds the reply filter to `connection`; returns its id for `g_dbus_connection_remove_filter`.
    /// The filter holds no reference to anything (it looks replies up in `shared`). It also
    /// advances ``ItemChanges`` on `ItemCreated`/`ItemDeleted` and ``ProviderChanges`` (with
    /// ``ItemChanges``: a new provider's items are not the old one's) on `NameOwnerChanged` for
    /// `org.freedesktop.secrets`, here and not later on the loop: a provider sends the signal
    /// before the reply to the call that caused it, and this is the one place that sees both in
    /// that order before any task does.
    static func installFilter(on connection: OpaquePointer) -> guint {
        g_dbus_connection_add_filter(connection, { _, message, incoming, _ in
            guard let message, incoming != 0 else { return message }
            switch g_dbus_message_get_message_type(message) {
            case G_DBUS_MESSAGE_TYPE_SIGNAL:
                DirectReplies.countChange(message)
                return message
            case G_DBUS_MESSAGE_TYPE_METHOD_RETURN, G_DBUS_MESSAGE_TYPE_ERROR:
                let serial = g_dbus_message_get_reply_serial(message)
                guard let waiter = DirectReplies.shared.state.withLock({ $0.waiting.removeValue(forKey: serial) }) else {
                    return message
                }
                waiter.finish(.success(message))
                return nil
            default:
                return message
            }
        }, nil, nil)
    }

    fileprivate static func countChange(_ signal: OpaquePointer) {
        guard let interface = g_dbus_message_get_interface(signal), let member = g_dbus_message_get_member(signal) else {
            return
        }
        if strcmp(interface, "org.freedesktop.Secret.Collection") == 0,
           strcmp(member, "ItemCreated") == 0 || strcmp(member, "ItemDeleted") == 0 {
            ItemChanges.advance()
        } else if strcmp(interface, "org.freedesktop.Secret.Service") == 0, strncmp(member, "Collection", 10) == 0 {
            // CollectionChanged (locked or unlocked, among others), CollectionCreated/Deleted: a
            // remembered item is not trusted past them. KWallet, locked, still accepts SetSecret
            // and Delete on an item and answers GetSecret with an empty secret instead of an error;
            // only a search shows that its items are locked.
            ItemChanges.advance()
        } else if strcmp(interface, "org.freedesktop.DBus") == 0, strcmp(member, "NameOwnerChanged") == 0,
                  let name = g_dbus_message_get_arg0(signal), strcmp(name, "org.freedesktop.secrets") == 0 {
            ProviderChanges.advance()
            ItemChanges.advance()
            // (name, old owner, new owner): a provider that had an owner went away or was replaced.
            if let body = g_dbus_message_get_body(signal), g_variant_is_of_type(body, variantType("(sss)")) != 0,
               let oldOwner = g_variant_get_child_value(body, 1) {
                defer { g_variant_unref(oldOwner) }
                if g_variant_get_string(oldOwner, nil).pointee != 0 {
                    InFlightCalls.shared.providerWentAway(epoch: ProviderChanges.epoch)
                }
            }
        }
    }

    /// Sends `message` (taking ownership of it) on `connection` and waits for its reply, which the
    /// caller releases. Throws `SecretServiceError.timedOut` at the deadline, `CancellationError`
    /// when the Task is cancelled, or the send's error.
    func send(_ message: OpaquePointer, on connection: OpaquePointer, operation: String,
              deadline: Deadline) async throws -> OpaquePointer {
        defer { g_object_unref(UnsafeMutableRawPointer(message)) }
        let waiter = Waiter(operation: operation, deadline: deadline)
        let sent = HandedOver((message, connection))
        let reply = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard waiter.install(continuation) else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                guard deadline.remaining != nil else {
                    waiter.finish(.failure(SecretServiceError.timedOut(operation, after: deadline.timeout)))
                    return
                }
                // Registered under the lock the filter takes, so a reply that arrives before
                // `send_message` returns still finds its waiter.
                let failure: GLibError? = state.withLock { state in
                    var serial: guint32 = 0
                    var error: UnsafeMutablePointer<GError>?
                    guard g_dbus_connection_send_message(sent.value.1, sent.value.0, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                                         &serial, &error) != 0 else {
                        return error.map(takeGError)
                            ?? GLibError(domain: .other, code: 0, message: "the message was not sent", remoteName: nil)
                    }
                    state.waiting[serial] = waiter
                    return nil
                }
                if let failure {
                    waiter.finish(.failure(failure))
                } else {
                    armTimer(for: deadline.instant)
                }
            }
        } onCancel: {
            waiter.finish(.failure(CancellationError()))
        }
        return reply.value
    }

    /// Makes sure a timer fires by `instant`. Calls share one timer, due at the earliest pending
    /// deadline; with the same timeout for every call, later calls never need a new one.
    private func armTimer(for instant: ContinuousClock.Instant) {
        let arm = state.withLock { state -> Bool in
            if let due = state.timerDue, due <= instant { return false }
            state.timerDue = instant
            return true
        }
        guard arm else { return }
        // g_source_attach is thread-safe: the timer goes onto the loop from this thread.
        GLibLoop.shared.attachTimeout(after: max(instant - .now, .zero)) { [self] in expire() }
    }

    /// Ends the calls whose deadline passed, and arms the timer for the next one (on the loop).
    private func expire() {
        let now = ContinuousClock.now
        let (expired, next) = state.withLock { state -> ([Waiter], ContinuousClock.Instant?) in
            let expired = state.waiting.filter { $0.value.deadline.instant <= now }
            for serial in expired.keys { state.waiting[serial] = nil }
            let next = state.waiting.values.map(\.deadline.instant).min()
            // A timer due earlier than this one may still be pending; forget only this one.
            if let due = state.timerDue, due <= now { state.timerDue = nil }
            return (Array(expired.values), next)
        }
        for waiter in expired {
            waiter.finish(.failure(SecretServiceError.timedOut(waiter.operation, after: waiter.deadline.timeout)))
        }
        if let next { armTimer(for: next) }
    }
}

extension LibSecret {
    /// An item's secret through ``DirectReplies``: one GetSecret round trip, decrypted with the
    /// service's session. Returns nil when the reply carries no secret libsecret can decode (the
    /// session's keys disagree with the provider's); throws the provider's error (e.g. a locked
    /// item). The corresponding C functions are `g_dbus_connection_send_message` and
    /// `secret_service_decode_dbus_secret`.
    static func getSecretDirectly(
        _ service: Service, destination: String?, path: String, deadline: Deadline
    ) async throws -> RawSecret? {
        let proxy = clibsecret_service_as_proxy(service.pointer)
        guard let session = secret_service_get_session_dbus_path(service.pointer),
              let connection = g_dbus_proxy_get_connection(proxy) else {
            throw GLibError(domain: .other, code: 0, message: "the Secret Service session is not open", remoteName: nil)
        }
        let message = g_dbus_message_new_method_call(
            destination ?? "org.freedesktop.secrets", path, "org.freedesktop.Secret.Item", "GetSecret")!
        var arguments: [OpaquePointer?] = [g_variant_new_object_path(session)]
        g_dbus_message_set_body(message, arguments.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, 1) })
        let reply = try await DirectReplies.shared.send(message, on: connection, operation: "read secret", deadline: deadline)
        defer { g_object_unref(UnsafeMutableRawPointer(reply)) }
        var error: UnsafeMutablePointer<GError>?
        if g_dbus_message_to_gerror(reply, &error) != 0, let error {
            throw takeGError(error)
        }
        guard let body = g_dbus_message_get_body(reply),
              g_variant_is_of_type(body, variantType("((oayays))")) != 0,
              let secret = g_variant_get_child_value(body, 0) else {
            throw GLibError(domain: .other, code: 0, message: "GetSecret answered with an unexpected type", remoteName: nil)
        }
        defer { g_variant_unref(secret) }
        return secret_service_decode_dbus_secret(service.pointer, secret).map(takeSecretValue)
    }
}
