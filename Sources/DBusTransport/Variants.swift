internal import CGLib
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// GVariant in and out: message bodies are described as `Argument` values and built here; replies
// are read through `Variant`. GVariant is immutable and its reference counting is thread-safe
// (GLib documents both), so building and reading happen on whatever thread sends or receives.

/// A D-Bus value to send.
package indirect enum Argument: Sendable {
    case string(String)
    case objectPath(ObjectPath)
    case boolean(Bool)
    case uint32(UInt32)
    /// `h`: an index into the message's file descriptors.
    case handle(Int32)
    case objectPaths([ObjectPath])
    /// `a{ss}`, sorted by name.
    case attributes([String: String])
    /// `a{sv}`, sorted by name.
    case properties([String: Argument])
    /// `v`.
    case variant(Argument)
    case tuple([Argument])
    /// `ay`.
    case bytes(Data)

    /// A new floating GVariant.
    package func build() -> OpaquePointer {
        switch self {
        case .string(let string): return g_variant_new_string(string)!
        case .objectPath(let path): return g_variant_new_object_path(path.rawValue)!
        case .boolean(let value): return g_variant_new_boolean(value ? 1 : 0)!
        case .uint32(let value): return g_variant_new_uint32(value)!
        case .handle(let index): return g_variant_new_handle(index)!
        case .objectPaths(let paths):
            return Self.array(of: "o", paths.map { g_variant_new_object_path($0.rawValue) })
        case .attributes(let attributes):
            return Self.array(of: "{ss}", attributes.sorted { $0.key < $1.key }.map {
                g_variant_new_dict_entry(g_variant_new_string($0.key), g_variant_new_string($0.value))
            })
        case .properties(let properties):
            return Self.array(of: "{sv}", properties.sorted { $0.key < $1.key }.map {
                g_variant_new_dict_entry(g_variant_new_string($0.key), g_variant_new_variant($0.value.build()))
            })
        case .variant(let inner): return g_variant_new_variant(inner.build())!
        case .tuple(let children):
            var built: [OpaquePointer?] = children.map { $0.build() }
            return built.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count))! }
        case .bytes(let bytes):
            return bytes.withUnsafeBytes { g_variant_new_fixed_array(variantType("y"), $0.baseAddress, gsize($0.count), 1)! }
        }
    }

    private static func array(of elementType: StaticString, _ elements: [OpaquePointer?]) -> OpaquePointer {
        var elements = elements
        return elements.withUnsafeMutableBufferPointer { buffer in
            g_variant_new_array(variantType(elementType), buffer.baseAddress, gsize(buffer.count))!
        }
    }
}

/// A `GVariantType` is its type string; a static string lives as long as the program, which is
/// what GLib expects of the `G_VARIANT_TYPE()` macro's argument.
func variantType(_ typeString: StaticString) -> OpaquePointer {
    OpaquePointer(typeString.utf8Start)
}

/// One reference to a received (or prebuilt) GVariant, and typed reads of it.
///
/// `@unchecked Sendable`: GVariant is immutable and thread-safe; the reference is dropped once.
package final class Variant: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes a new (sunk) reference to `pointer`.
    package init(retaining pointer: OpaquePointer) {
        self.pointer = g_variant_ref_sink(pointer)!
    }

    /// Takes over the reference the caller owns.
    package init(adopting pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { g_variant_unref(pointer) }

    package var typeString: String { String(cString: g_variant_get_type_string(pointer)) }

    package func isOfType(_ type: StaticString) -> Bool { g_variant_is_of_type(pointer, variantType(type)) != 0 }

    package var childCount: Int { Int(g_variant_n_children(pointer)) }

    package func child(_ index: Int) -> Variant { Variant(adopting: g_variant_get_child_value(pointer, gsize(index))!) }

    package var children: [Variant] { (0..<childCount).map(child) }

    /// The string of an `s`, `o` or `g` value.
    package var string: String { String(cString: g_variant_get_string(pointer, nil)) }

    package var boolean: Bool { g_variant_get_boolean(pointer) != 0 }
    package var uint32: UInt32 { UInt32(g_variant_get_uint32(pointer)) }
    package var uint64: UInt64 { UInt64(g_variant_get_uint64(pointer)) }

    /// The content of a `v`.
    package var unboxed: Variant { Variant(adopting: g_variant_get_variant(pointer)!) }

    /// The bytes of an `ay` (empty for any other type), valid during `body`: no copy is made.
    package func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        guard isOfType("ay") else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        var count: gsize = 0
        let base = g_variant_get_fixed_array(pointer, &count, 1)
        return body(UnsafeRawBufferPointer(start: base, count: Int(count)))
    }

    /// An `ao` or `as` as strings.
    package var strings: [String] { children.map(\.string) }

    /// An `a{ss}`.
    package var stringDictionary: [String: String] {
        var dictionary: [String: String] = [:]
        for entry in children { dictionary[entry.child(0).string] = entry.child(1).string }
        return dictionary
    }

    /// The value of `key` in an `a{sv}`, unboxed, if it has the expected type.
    package func lookup(_ key: String, _ type: StaticString) -> Variant? {
        g_variant_lookup_value(pointer, key, variantType(type)).map(Variant.init(adopting:))
    }
}

extension Variant {
    /// Checks that a reply body has `type`.
    /// - Throws: ``BusError/Code/unexpectedReply``, naming the operation.
    package func expecting(_ type: StaticString, in operation: String) throws(BusError) -> Variant {
        guard isOfType(type) else {
            throw BusError(.unexpectedReply, operation: operation, text: "expected a reply of type \(type), got \(typeString)")
        }
        return self
    }
}
