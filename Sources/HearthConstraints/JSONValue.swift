/// A JSON document that keeps object members in their written order (a schema's property order
/// is the output's) and numbers as their literal text (so bounds stay exact decimals).
enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The number as written (`-1.5e3`).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([Member])

    struct Member: Hashable, Sendable {
        var key: String
        var value: JSONValue
    }

    /// The first member named `key` of an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var objectMembers: [Member]? {
        if case .object(let m) = self { return m }
        return nil
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The JSON type name (`integer` for numbers without a fractional part, as JSON Schema counts).
    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number(let text): return DecimalNumber(text)?.isInteger == true ? "integer" : "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Compact JSON: no whitespace, members in order, strings with canonical escapes (as Python's
    /// `json.dumps(…, ensure_ascii=False, separators=(",", ":"))` writes them), numbers as written.
    var compactText: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let text): return text
        case .string(let s): return "\"" + CharacterEncoding.jsonEscaped(s) + "\""
        case .array(let items): return "[" + items.map(\.compactText).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { JSONValue.string($0.key).compactText + ":" + $0.value.compactText }.joined(separator: ",") + "}"
        }
    }

    /// Parses a JSON document. Errors are `.syntax` at `line L, column C` (columns in bytes).
    static func parse(_ text: String) throws -> JSONValue {
        var p = JSONParser(bytes: Array(text.utf8))
        p.skipWhitespace()
        let value = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.i == p.bytes.count else { throw p.error("unexpected text after the JSON value") }
        return value
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    var i = 0

    func error(_ message: String) -> ConstraintError {
        var line = 1, column = 1
        for b in bytes[..<min(i, bytes.count)] {
            if b == 0x0A { line += 1; column = 1 } else { column += 1 }
        }
        return ConstraintError(.syntax, "invalid JSON: \(message)", at: "line \(line), column \(column)")
    }

    mutating func skipWhitespace() {
        while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    mutating func expect(_ word: String) throws {
        let w = Array(word.utf8)
        guard bytes.count - i >= w.count, Array(bytes[i..<(i + w.count)]) == w else { throw error("expected '\(word)'") }
        i += w.count
    }

    mutating func value(depth: Int) throws -> JSONValue {
        guard depth < 512 else { throw error("nested more than 512 deep") }
        guard i < bytes.count else { throw error("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            var members: [JSONValue.Member] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a member name in quotes") }
                let key = try string()
                skipWhitespace()
                try expect(":")
                skipWhitespace()
                members.append(.init(key: key, value: try value(depth: depth + 1)))
                skipWhitespace()
                guard i < bytes.count else { throw error("unexpected end of input in an object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw error("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            i += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard i < bytes.count else { throw error("unexpected end of input in an array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw error("expected ',' or ']'")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        default:
            return .number(try number())
        }
    }

    mutating func number() throws -> String {
        let start = i
        func digits() -> Int {
            let s = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            return i - s
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, (0x30...0x39).contains(bytes[i]) else { throw error("expected a value") }
        if bytes[i] == 0x30 { i += 1 } else { _ = digits() }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw error("expected digits after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw error("expected digits in the exponent") }
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    mutating func string() throws -> String {
        i += 1  // the opening quote
        var scalars = String.UnicodeScalarView()
        var run = i  // start of the current run of plain bytes
        func flush(_ end: Int) { scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars) }
        while true {
            guard i < bytes.count else { throw error("unterminated string") }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { flush(i); i += 1; return String(scalars) }
            if b < 0x20 { throw error("control character in a string (write it escaped)") }
            if b != UInt8(ascii: "\\") { i += 1; continue }
            flush(i)
            i += 1
            guard i < bytes.count else { throw error("unterminated string") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var v = try hex4()
                if (0xD800...0xDBFF).contains(v), bytes.count - i >= 6, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") {
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate escape") }
                    v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let s = Unicode.Scalar(v) else { throw error("unpaired surrogate escape") }
                scalars.append(s)
            default:
                throw error("invalid escape")
            }
            run = i
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard bytes.count - i >= 4 else { throw error("expected four hexadecimal digits") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = hexValue(Unicode.Scalar(bytes[i])) else { throw error("expected four hexadecimal digits") }
            v = v * 16 + UInt32(d)
            i += 1
        }
        return v
    }
}

/// An exact decimal: sign, integer digits (no leading zeros; "0" for zero) and fraction digits
/// (no trailing zeros). Made from a JSON number literal, exponents applied.
struct DecimalNumber: Hashable, Sendable {
    var negative: Bool
    var integer: String
    var fraction: String

    /// Literals whose digits (after the exponent is applied) exceed this are not handled.
    static let maxDigits = 60

    init(negative: Bool, integer: String, fraction: String) {
        var intDigits = Substring(integer)
        while intDigits.count > 1, intDigits.first == "0" { intDigits = intDigits.dropFirst() }
        var frac = Substring(fraction)
        while frac.last == "0" { frac = frac.dropLast() }
        self.integer = intDigits.isEmpty ? "0" : String(intDigits)
        self.fraction = String(frac)
        self.negative = negative && !(self.integer == "0" && self.fraction.isEmpty)
    }

    init?(_ text: String) {
        var s = Substring(text)
        let negative = s.first == "-"
        if negative { s = s.dropFirst() }
        var exponent = 0
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let x = Int(s[s.index(after: e)...]), abs(x) <= Self.maxDigits else { return nil }
            exponent = x
            s = s[..<e]
        }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }) else { return nil }
        var digits = String(parts[0]) + (parts.count == 2 ? String(parts[1]) : "")
        var point = parts[0].count + exponent  // digits before the point
        if point < 0 { digits = String(repeating: "0", count: -point) + digits; point = 0 }
        if point > digits.count { digits += String(repeating: "0", count: point - digits.count) }
        guard digits.count <= Self.maxDigits + 40 else { return nil }
        self.init(negative: negative, integer: String(digits.prefix(point)), fraction: String(digits.dropFirst(point)))
    }

    var isInteger: Bool { fraction.isEmpty }
    var isZero: Bool { integer == "0" && fraction.isEmpty }

    /// The integer part as an Int, when it fits in 18 digits.
    var integerValue: Int? { integer.count <= 18 ? Int(integer) : nil }

    var negated: DecimalNumber { DecimalNumber(negative: !negative, integer: integer, fraction: fraction) }

    /// Numeric order.
    static func < (a: DecimalNumber, b: DecimalNumber) -> Bool {
        if a.negative != b.negative { return a.negative }
        let magnitudeLess = a.integer.count != b.integer.count
            ? a.integer.count < b.integer.count
            : (a.integer != b.integer ? a.integer < b.integer : a.fraction < b.fraction && a.fraction != b.fraction)
        let magnitudeEqual = a.integer == b.integer && a.fraction == b.fraction
        if magnitudeEqual { return false }
        return a.negative ? !magnitudeLess : magnitudeLess
    }

    var text: String { (negative ? "-" : "") + integer + (fraction.isEmpty ? "" : "." + fraction) }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
