import CGLib
import Foundation
import Testing

@testable import FileKeyring
import Gcrypt

/// The codec against GLib itself: what we serialize is byte for byte GLib's normal form of the same
/// value (parsed from GVariant text), and what GLib serializes we decode to the same values.
@Suite struct GVariantTests {
    /// GLib's normal-form serialization of `text` parsed as `type`.
    func glib(_ type: String, _ text: String) throws -> [UInt8] {
        let variantType = g_variant_type_new(type)
        defer { g_variant_type_free(variantType) }
        var error: UnsafeMutablePointer<GError>?
        guard let parsed = g_variant_parse(variantType, text, nil, nil, &error) else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "?"
            g_clear_error(&error)
            throw TestFailure("g_variant_parse: \(message)")
        }
        defer { g_variant_unref(parsed) }
        let normal = g_variant_get_normal_form(parsed)!
        defer { g_variant_unref(normal) }
        let size = g_variant_get_size(normal)
        guard size > 0 else { return [] }
        let data = g_variant_get_data(normal)!.assumingMemoryBound(to: UInt8.self)
        return Array(UnsafeBufferPointer(start: data, count: Int(size)))
    }

    func quoted(_ string: String) -> String {
        "'" + string.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    func byteList(_ bytes: [UInt8]) -> String {
        "[" + bytes.map { "byte \($0)" }.joined(separator: ", ") + "]"
    }

    func bodyText(_ file: KeyringFile) -> String {
        let records = file.records.map { record in
            let hashed = record.hashedAttributes.map { "\(quoted($0.name)): \(byteList($0.mac))" }
            return "({\(hashed.joined(separator: ", "))}, \(byteList(record.blob)))"
        }
        return "(uint32 \(file.salt.count), \(byteList(file.salt)), uint32 \(file.iterations), uint64 \(file.modified), "
            + "uint32 \(file.usageCount), [\(records.joined(separator: ", "))])"
    }

    func itemText(_ item: FileKeyringItem) -> String {
        let attributes = item.attributes.map { "\(quoted($0.key)): \(quoted($0.value))" }
        let secret = item.secret.withBytes { span in (0..<span.count).map { span[$0] } }
        return "({\(attributes.joined(separator: ", "))}, \(quoted(item.label)), uint64 \(item.created), "
            + "uint64 \(item.modified), \(byteList(secret)))"
    }

    static let bodyType = "(uayutua(a{say}ay))"
    static let itemType = "(a{ss}sttay)"

    func record(_ names: [String], blobSize: Int) -> EncryptedRecord {
        EncryptedRecord(
            hashedAttributes: names.map { .init(name: $0, mac: (0..<32).map { UInt8(($0 * 7) & 0xFF) }) },
            blob: (0..<blobSize).map { UInt8(truncatingIfNeeded: $0 * 31) })
    }

    static let files: [(String, KeyringFile)] = [
        ("empty", KeyringFile(salt: Array(0..<32), iterations: 100_000, modified: 1_700_000_000, usageCount: 0, records: [])),
        ("no salt", KeyringFile(salt: [], iterations: 1, modified: 0, usageCount: 7, records: [])),
    ]

    @Test("the body serializes as GLib does", arguments: [0, 1, 3, 40, 300])
    func bodyMatchesGLib(recordCount: Int) throws {
        let records = (0..<recordCount).map { index in
            record(index % 3 == 0 ? [] : ["account", "service", "ü\(index)"], blobSize: 64 + 16 * (index % 5))
        }
        let file = KeyringFile(salt: Array(0..<32), iterations: 100_000, modified: 1_796_124_155, usageCount: 9, records: records)
        let expected = try glib(Self.bodyType, bodyText(file))
        let ours = file.serialized()
        #expect(Array(ours[0..<18]) == KeyringFile.header + [1, 0])
        #expect(Array(ours[18...]) == expected)
        let decoded = try KeyringFile(parsing: KeyringFile.header + [1, 0] + expected, path: "test")
        #expect(decoded.records == records)
        #expect(decoded.salt == file.salt && decoded.iterations == file.iterations)
        #expect(decoded.modified == file.modified && decoded.usageCount == file.usageCount)
    }

    @Test("4-byte framing offsets (a body over 64 KiB)")
    func largeBody() throws {
        let file = KeyringFile(
            salt: Array(0..<32), iterations: 100_000, modified: 1, usageCount: 1,
            records: [record(["a"], blobSize: 70_000), record([], blobSize: 48)])
        #expect(Array(file.serialized()[18...]) == (try glib(Self.bodyType, bodyText(file))))
    }

    @Test("empty and tiny bodies", arguments: GVariantTests.files.map(\.0))
    func smallBodies(name: String) throws {
        let file = Self.files.first { $0.0 == name }!.1
        let expected = try glib(Self.bodyType, bodyText(file))
        #expect(Array(file.serialized()[18...]) == expected)
    }

    @Test("an item's plaintext serializes as GLib does, and decodes back", arguments: [0, 1, 2, 5, 300])
    func itemMatchesGLib(attributeCount: Int) throws {
        var attributes: [String: String] = [:]
        for index in 0..<attributeCount { attributes["name\(index)"] = index == 1 ? "é \"quoted\" 'single'" : "value\(index)" }
        let secretSize = [0: 0, 1: 6, 2: 255, 5: 300, 300: 70_000][attributeCount]!
        let item = FileKeyringItem(
            label: attributeCount == 0 ? "" : "Label ü \(attributeCount)", attributes: attributes,
            secret: FileKeyringSecret(copying: (0..<secretSize).map { UInt8(truncatingIfNeeded: $0) }),
            created: 1_700_000_000, modified: UInt64.max)
        let ours = ItemPlaintext.serialize(item).withSpan { span in (0..<span.count).map { span[$0] } }
        let expected = try glib(Self.itemType, itemText(item))
        // GLib keeps a{ss} in the order given; ours is sorted: compare after decoding both, and
        // byte for byte when the order cannot differ.
        if attributeCount <= 1 { #expect(ours == expected) }
        #expect(ours.count == expected.count)
        let decodedOurs = try ItemPlaintext.deserialize(SecretBytes(copying: ours))
        let decodedGLib = try ItemPlaintext.deserialize(SecretBytes(copying: expected))
        #expect(decodedOurs == item)
        #expect(decodedGLib == item)
    }

    @Test("sorted attributes serialize exactly as GLib's with the same order")
    func sortedItemBytes() throws {
        let item = FileKeyringItem(
            label: "L", attributes: ["b": "2", "a": "1", "service": "s", "account": "a"],
            secret: FileKeyringSecret(utf8: "s3cret"), created: 5, modified: 6)
        let sortedText = "({'a': '1', 'account': 'a', 'b': '2', 'service': 's'}, 'L', uint64 5, uint64 6, \(byteList(Array("s3cret".utf8))))"
        let ours = ItemPlaintext.serialize(item).withSpan { span in (0..<span.count).map { span[$0] } }
        #expect(ours == (try glib(Self.itemType, sortedText)))
    }

    @Test("malformed data is rejected, never read out of bounds")
    func malformed() throws {
        let file = KeyringFile(
            salt: Array(0..<32), iterations: 100_000, modified: 1, usageCount: 1,
            records: [record(["a", "b"], blobSize: 64), record(["c"], blobSize: 80)])
        let good = file.serialized()
        // Every truncation fails cleanly.
        for length in 0..<good.count {
            #expect(throws: FileKeyringError.self) { try KeyringFile(parsing: Array(good[0..<length]), path: "t") }
        }
        // Every single-byte change either fails cleanly or decodes (e.g. a changed timestamp).
        for index in 18..<good.count {
            for value: UInt8 in [0x00, 0xFF, good[index] ^ 0x01] where value != good[index] {
                var bad = good
                bad[index] = value
                _ = try? KeyringFile(parsing: bad, path: "t")
            }
        }
        // A string without its NUL, and an item whose plaintext is cut.
        let unterminated: [UInt8] = Array("abc".utf8)
        #expect(throws: MalformedGVariant.self) { try GVariantReader.string(unterminated.span, 0..<3) }
        let item = ItemPlaintext.serialize(FileKeyringItem(label: "L", attributes: ["a": "b"], secret: FileKeyringSecret(utf8: "x")))
        #expect(throws: MalformedGVariant.self) { try ItemPlaintext.deserialize(item.slice(0..<(item.count - 1))) }
    }
}
