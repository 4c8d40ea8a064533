#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON document as `--json` prints it: object members in a fixed, documented order and
/// `null` written out rather than left out, so a field's presence never depends on the data.
///
/// (JSONEncoder drops nil optionals and orders keys either randomly or alphabetically; neither
/// suits a documented output format.)
enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case int(Int)
    /// A number as written in JSON text (`-1.5e3`), kept verbatim.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in the order given.
    case object([(String, JSONValue)])

    /// A string, or `null` when `value` is nil.
    static func string(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }

    /// An ISO 8601 UTC timestamp, e.g. `2026-11-29T13:41:31Z`.
    static func date(_ date: Date) -> JSONValue { .string(Timestamp.iso8601(date)) }

    /// The document, pretty-printed with two-space indentation and a final newline.
    var document: String { serialized(indent: 0) + "\n" }

    private func serialized(indent: Int) -> String {
        let inner = String(repeating: "  ", count: indent + 1)
        let outer = String(repeating: "  ", count: indent)
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .number(let text): return text
        case .string(let value): return Self.quoted(value)
        case .array(let elements):
            if elements.isEmpty { return "[]" }
            let body = elements.map { inner + $0.serialized(indent: indent + 1) }.joined(separator: ",\n")
            return "[\n\(body)\n\(outer)]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            let body = members.map { inner + Self.quoted($0.0) + ": " + $0.1.serialized(indent: indent + 1) }
                .joined(separator: ",\n")
            return "{\n\(body)\n\(outer)}"
        }
    }

    /// `value` as a JSON string literal (RFC 8259: quote, backslash and control characters escaped;
    /// everything else, non-ASCII included, written as UTF-8).
    static func quoted(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// How times are shown, in human and JSON output alike.
enum Timestamp {
    /// `2026-11-29T13:41:31Z`.
    static func iso8601(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
    }
}
