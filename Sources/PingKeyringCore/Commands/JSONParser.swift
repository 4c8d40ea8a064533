extension JSONValue {
    /// Parses JSON text: UTF-8, exactly one value of any kind (RFC 8259), whitespace around it
    /// allowed. Numbers keep their text; members keep their order (duplicates too). nil for
    /// anything else: invalid UTF-8, a lone surrogate escape, trailing bytes, nesting deeper
    /// than 512.
    init?(parsing bytes: some Collection<UInt8>) {
        var parser = JSONParser(bytes: Array(bytes))
        guard let value = try? parser.document() else { return nil }
        self = value
    }
}

/// A strict recursive-descent JSON parser over bytes, for ``JSONValue/init(parsing:)``.
private struct JSONParser {
    struct Invalid: Error {}

    let bytes: [UInt8]
    var index = 0
    var depth = 0
    static let maximumDepth = 512

    mutating func document() throws(Invalid) -> JSONValue {
        skipWhitespace()
        let result = try value()
        skipWhitespace()
        guard index == bytes.count else { throw Invalid() }
        return result
    }

    private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = next, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws(Invalid) {
        guard next == byte else { throw Invalid() }
        index += 1
    }

    private mutating func value() throws(Invalid) -> JSONValue {
        guard let next else { throw Invalid() }
        switch next {
        case UInt8(ascii: "{"): return try container { parser throws(Invalid) in try parser.object() }
        case UInt8(ascii: "["): return try container { parser throws(Invalid) in try parser.array() }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw Invalid()
        }
    }

    /// An object or array, one level deeper.
    private mutating func container(_ parse: (inout JSONParser) throws(Invalid) -> JSONValue) throws(Invalid) -> JSONValue {
        depth += 1
        guard depth <= Self.maximumDepth else { throw Invalid() }
        defer { depth -= 1 }
        return try parse(&self)
    }

    private mutating func object() throws(Invalid) -> JSONValue {
        try expect(UInt8(ascii: "{"))
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if next == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            let key = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            members.append((key, try value()))
            skipWhitespace()
            if next == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            return .object(members)
        }
    }

    private mutating func array() throws(Invalid) -> JSONValue {
        try expect(UInt8(ascii: "["))
        var elements: [JSONValue] = []
        skipWhitespace()
        if next == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            if next == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            return .array(elements)
        }
    }

    private mutating func literal(_ word: String) throws(Invalid) {
        let text = Array(word.utf8)
        guard bytes.count - index >= text.count, bytes[index..<index + text.count].elementsEqual(text) else {
            throw Invalid()
        }
        index += text.count
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, as written.
    private mutating func number() throws(Invalid) -> String {
        let start = index
        if next == UInt8(ascii: "-") { index += 1 }
        if next == UInt8(ascii: "0") {
            index += 1
        } else {
            try digits()
        }
        if next == UInt8(ascii: ".") {
            index += 1
            try digits()
        }
        if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            index += 1
            if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { index += 1 }
            try digits()
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// One digit or more.
    private mutating func digits() throws(Invalid) {
        let start = index
        while let byte = next, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        guard index > start else { throw Invalid() }
    }

    private mutating func string() throws(Invalid) -> String {
        try expect(UInt8(ascii: "\""))
        var utf8: [UInt8] = []
        while true {
            guard let byte = next else { throw Invalid() }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else { throw Invalid() }
                return text
            case UInt8(ascii: "\\"):
                utf8.append(contentsOf: try escape())
            case 0..<0x20:
                throw Invalid()  // control characters must be escaped
            default:
                utf8.append(byte)
            }
        }
    }

    /// After a backslash: the UTF-8 of the character it stands for.
    private mutating func escape() throws(Invalid) -> [UInt8] {
        guard let byte = next else { throw Invalid() }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return [byte]
        case UInt8(ascii: "b"): return [0x08]
        case UInt8(ascii: "f"): return [0x0C]
        case UInt8(ascii: "n"): return [0x0A]
        case UInt8(ascii: "r"): return [0x0D]
        case UInt8(ascii: "t"): return [0x09]
        case UInt8(ascii: "u"):
            var code = try hex4()
            if (0xD800..<0xDC00).contains(code) {
                // A high surrogate must be followed by an escaped low one.
                try expect(UInt8(ascii: "\\"))
                try expect(UInt8(ascii: "u"))
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw Invalid() }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(code) else { throw Invalid() }  // a lone low surrogate
            return Array(String(Character(scalar)).utf8)
        default: throw Invalid()
        }
    }

    private mutating func hex4() throws(Invalid) -> UInt32 {
        guard bytes.count - index >= 4 else { throw Invalid() }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let digit: UInt32 = switch bytes[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(bytes[index] - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(bytes[index] - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(bytes[index] - UInt8(ascii: "A") + 10)
            default: throw Invalid()
            }
            code = code << 4 | digit
            index += 1
        }
        return code
    }
}
