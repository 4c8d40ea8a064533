// libFuzzer harness: the Secret Service client's decoding of D-Bus replies into Swift values.
//
// The first byte chooses a reply type the client reads; the rest becomes a GVariant of that type
// exactly as a reply from the bus does: g_variant_new_from_bytes with trusted = FALSE, not in
// normal form (GLib checks it lazily, as it reads, and substitutes defaults for what is
// malformed). The client's reads of that reply (the Variant accessors, ObjectPath(trusted:),
// whose assertion holds only if GLib never yields an invalid `o`, ItemPath, lookups in `a{sv}`,
// SecretValue) then run as the client runs them (SecretServiceClient+Items.swift,
// UnlockPolicy.swift, SessionCrypto.swift, ProviderSession.swift, Prompts.swift,
// ProviderTraffic.swift, and DBusTransport's MessageRouter.swift): those reads are written inline
// in the async calls, so they are repeated here, call for call.
import CGLib
import Foundation
@testable import DBusTransport
@testable import SecretService

/// The reply types, in the order the first byte picks them.
let types: [StaticString] = ["(oo)", "(o)", "(aoao)", "(a{sv})", "((oayays))", "(aoo)", "(v)", "(vo)", "(s)", "(bv)", "(sss)"]

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    // Lazy one-time initialisations (globals, GLib's type caches) happen here, not in the first
    // input, whose unfreed allocations libFuzzer would report as a leak.
    if let directory = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) {
        writeSeeds(to: directory)
        exit(0)
    }
    for first in 0..<11 { _ = [UInt8(first), 0, 0, 0, 0, 0, 0, 0].withUnsafeBufferPointer { fuzzReplies($0.baseAddress, $0.count) } }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReplies(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    let type = types[Int(data[0]) % types.count]
    let bytes = g_bytes_new(data + 1, gsize(size - 1))
    defer { g_bytes_unref(bytes) }
    let body = Variant(retaining: g_variant_new_from_bytes(variantType(type), bytes, 0)!)
    guard (try? body.expecting(type, in: "fuzz")) != nil else { fatalError("a reply of \(type) is not of its type") }
    decode(body, as: type)
    return 0
}

func decode(_ body: Variant, as type: StaticString) {
    switch "\(type)" {
    case "(oo)":  // CreateItem: the item and the prompt.
        let itemPath = body.child(0).string
        _ = ObjectPath(trusted: body.child(1).string) != .none
        _ = try? ItemPath(itemPath)
    case "(o)":  // Delete, ReadAlias, the portal's request handle.
        _ = ObjectPath(trusted: body.child(0).string)
    case "(aoao)":  // SearchItems, with and without a collection prefix.
        for prefix in [nil, "/org/freedesktop/secrets/collection/login/"] as [String?] {
            for index in 0..<2 {
                _ = body.child(index).strings.filter { prefix == nil || $0.hasPrefix(prefix!) }.compactMap { try? ItemPath($0) }
            }
        }
    case "(a{sv})":  // GetAll of an item and of a collection; GetConnectionCredentials.
        let properties = body.child(0)
        func date(_ key: String) -> Date {
            Date(timeIntervalSince1970: TimeInterval(properties.lookup(key, "t")?.uint64 ?? 0))
        }
        _ = SecretItemInfo(path: try! ItemPath("/org/freedesktop/secrets/collection/login/1"),
                           label: properties.lookup("Label", "s")?.string ?? "",
                           attributes: properties.lookup("Attributes", "a{ss}")?.stringDictionary ?? [:],
                           created: date("Created"), modified: date("Modified"),
                           isLocked: properties.lookup("Locked", "b")?.boolean ?? false)
        _ = properties.lookup("UnixUserID", "u")?.uint32
        _ = properties.lookup("ProcessID", "u")?.uint32
    case "((oayays))":  // GetSecret in a plain session (SessionCrypto.decode without a key).
        let structure = body.child(0)
        guard structure.isOfType("(oayays)") else { fatalError("a (oayays) child is not of its type") }
        _ = structure.child(0).string == "/org/freedesktop/secrets/session/1"
        let parameters = structure.child(1), value = structure.child(2)
        let contentType = structure.child(3).string
        parameters.withBytes { _ = $0.count }
        let secret = value.withBytes { SecretValue(bytes: Data($0), contentType: contentType) }
        _ = SecretValue.contentType(for: secret.bytes)
    case "(aoo)":  // Unlock, Lock.
        _ = Set(body.child(0).strings)
        _ = ObjectPath(trusted: body.child(1).string) != .none
    case "(v)":  // Get Collections.
        let value = body.child(0).unboxed
        if value.isOfType("ao") { _ = value.strings.map(ObjectPath.init(trusted:)) } else { _ = value.typeString }
    case "(vo)":  // OpenSession: the provider's public key and the session's path.
        _ = try? ObjectPath(body.child(1).string)
        let output = body.child(0).unboxed
        if output.isOfType("ay") { output.withBytes { _ = $0.count } } else { _ = output.typeString }
    case "(s)":  // GetNameOwner; an error's message.
        _ = body.child(0).string
    case "(bv)":  // A prompt's Completed signal, for each result type the client awaits.
        _ = body.child(0).boolean
        let result = body.child(1).unboxed
        if result.isOfType("o") { _ = ObjectPath(trusted: result.string) }
        if result.isOfType("ao") { _ = result.strings }
    case "(sss)":  // NameOwnerChanged.
        _ = body.child(0).string == "org.freedesktop.secrets"
        _ = (body.child(1).string, body.child(2).string)
    default:
        fatalError("no decoder for \(type)")
    }
}


/// Replies as gnome-keyring sends them (GVariant text; serialised by GLib in normal form).
let seeds: [(name: String, type: StaticString, text: String)] = [
    ("create-item", "(oo)", "('/org/freedesktop/secrets/collection/login/7', '/')"),
    ("create-item-prompt", "(oo)", "('/', '/org/freedesktop/secrets/prompt/u3')"),
    ("delete", "(o)", "('/',)"),
    ("read-alias", "(o)", "('/org/freedesktop/secrets/collection/login',)"),
    ("search", "(aoao)", "(['/org/freedesktop/secrets/collection/login/1', '/org/freedesktop/secrets/collection/login/2'], ['/org/freedesktop/secrets/collection/other/1'])"),
    ("item-properties", "(a{sv})", """
        ({'Locked': <false>, 'Attributes': <{'xdg:schema': 'com.pingidentity.storage', 'service': 'com.example.app', 'account': 'alice'}>, \
        'Label': <'com.example.app: alice'>, 'Created': <uint64 1700000000>, 'Modified': <uint64 1700000100>},)
        """),
    ("collection-properties", "(a{sv})", "({'Items': <@ao []>, 'Label': <'Login'>, 'Locked': <true>, 'Created': <uint64 1>, 'Modified': <uint64 2>},)"),
    ("credentials", "(a{sv})", "({'UnixUserID': <uint32 1000>, 'ProcessID': <uint32 4242>},)"),
    ("get-secret", "((oayays))", """
        (('/org/freedesktop/secrets/session/s1', [byte 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff], \
        [byte 0x74, 0xd7, 0x65, 0x19, 0xfb, 0x21, 0xf9, 0xdc, 0x22, 0xe2, 0xce, 0xd7, 0x0a, 0x72, 0x95, 0x72], 'text/plain'),)
        """),
    ("get-secret-plain", "((oayays))", "(('/org/freedesktop/secrets/session/s1', @ay [], b'hunter2', 'text/plain; charset=utf8'),)"),
    ("unlock", "(aoo)", "(['/org/freedesktop/secrets/collection/login'], '/')"),
    ("lock-prompt", "(aoo)", "(@ao [], '/org/freedesktop/secrets/prompt/p1')"),
    ("collections", "(v)", "(<['/org/freedesktop/secrets/collection/login', '/org/freedesktop/secrets/collection/session']>,)"),
    ("open-session", "(vo)", "(<[byte \(Array(repeating: "0x5a", count: 128).joined(separator: ", "))]>, '/org/freedesktop/secrets/session/s1')"),
    ("open-session-plain", "(vo)", "(<''>, '/org/freedesktop/secrets/session/s2')"),
    ("name-owner", "(s)", "(':1.42',)"),
    ("prompt-completed", "(bv)", "(false, <['/org/freedesktop/secrets/collection/login']>)"),
    ("prompt-dismissed", "(bv)", "(true, <''>)"),
    ("name-owner-changed", "(sss)", "('org.freedesktop.secrets', ':1.42', ':1.43')"),
]

func writeSeeds(to directory: String) {
    for seed in seeds {
        var error: UnsafeMutablePointer<GError>?
        guard let value = g_variant_parse(variantType(seed.type), seed.text, nil, nil, &error) else {
            fatalError("seed \(seed.name): \(String(cString: error!.pointee.message))")
        }
        defer { g_variant_unref(value) }  // g_variant_parse gives a reference of our own (not floating)
        let index = UInt8(types.firstIndex { "\($0)" == "\(seed.type)" }!)
        let data = UnsafeRawBufferPointer(start: g_variant_get_data(value), count: Int(g_variant_get_size(value)))
        let bytes = [index] + Array(data)
        let file = fopen("\(directory)/\(seed.name)", "wb")!
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
}
