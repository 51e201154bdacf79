import Foundation

/// Python's `json.dumps` as transformers' `tojson` calls it: `ensure_ascii=False` by default,
/// separators `", "`/`": "` (`","` between items when indenting), `NaN`/`Infinity` for
/// non-finite floats, keys converted as Python does, errors where Python raises `TypeError`.
struct JSONWriter {
    let ensureASCII: Bool
    let indent: String?
    let itemSeparator: String
    let keySeparator: String
    let sortKeys: Bool
    let maxDepth: Int
    let maxBytes: Int
    private(set) var output = ""

    init(ensureASCII: Bool = false, indent: String? = nil, separators: (String, String)? = nil, sortKeys: Bool = false, maxDepth: Int, maxBytes: Int) {
        self.ensureASCII = ensureASCII
        self.indent = indent
        self.itemSeparator = separators?.0 ?? (indent == nil ? ", " : ",")
        self.keySeparator = separators?.1 ?? ": "
        self.sortKeys = sortKeys
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
    }

    mutating func write(_ value: JinjaValue, evaluator: Evaluator?, position: SourcePosition?, depth: Int = 0) throws {
        try evaluator?.tick(position)
        if depth > maxDepth { throw TemplateError(.limit, "a value nests deeper than \(maxDepth) levels", at: position) }
        if output.utf8.count > maxBytes { throw TemplateError(.limit, "JSON output is longer than \(maxBytes) bytes", at: position) }
        switch value {
        case .none: output += "null"
        case .bool(let b): output += b ? "true" : "false"
        case .int(let i): output += String(i)
        case .float(let d): output += JSONWriter.float(d)
        case .string(let s): writeString(s)
        case .list(let items), .tuple(let items):
            if items.isEmpty { output += "[]"; return }
            output += "["
            for (i, item) in items.enumerated() {
                if i > 0 { output += itemSeparator }
                newline(depth + 1)
                try write(item, evaluator: evaluator, position: position, depth: depth + 1)
            }
            newline(depth)
            output += "]"
        case .dict(let d):
            if d.isEmpty { output += "{}"; return }
            var entries = try d.entries.map { (try JSONWriter.key($0.key, position), $0.value) }
            if sortKeys {
                entries = entries.enumerated().sorted {
                    let c = PythonFormat.compare(.string($0.element.0), .string($1.element.0)) ?? 0
                    return c == 0 ? $0.offset < $1.offset : c == -1
                }.map { $0.element }
            }
            output += "{"
            for (i, (key, item)) in entries.enumerated() {
                if i > 0 { output += itemSeparator }
                newline(depth + 1)
                writeString(key)
                output += keySeparator
                try write(item, evaluator: evaluator, position: position, depth: depth + 1)
            }
            newline(depth)
            output += "}"
        case .undefined:
            throw TemplateError(.type, "Object of type Undefined is not JSON serializable", at: position)
        case .object(let o):
            throw TemplateError(.type, "Object of type \(o.typeName) is not JSON serializable", at: position)
        }
    }

    private mutating func newline(_ depth: Int) {
        guard let indent else { return }
        output += "\n"
        for _ in 0..<depth { output += indent }
    }

    static func float(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return PythonFormat.floatRepr(d)
    }

    static func key(_ k: JinjaValue, _ position: SourcePosition?) throws -> String {
        switch k {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .float(let d): return float(d)
        case .bool(let b): return b ? "true" : "false"
        case .none: return "null"
        default: throw TemplateError(.type, "keys must be str, int, float, bool or None, not \(k.typeName)", at: position)
        }
    }

    private mutating func writeString(_ s: String) {
        output += "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if c.value < 0x20 || (ensureASCII && c.value > 0x7E) {
                    if c.value > 0xFFFF {
                        let v = c.value - 0x10000
                        output += "\\u" + PythonFormat.hex(0xD800 + (v >> 10), width: 4) + "\\u" + PythonFormat.hex(0xDC00 + (v & 0x3FF), width: 4)
                    } else {
                        output += "\\u" + PythonFormat.hex(c.value, width: 4)
                    }
                } else {
                    output.unicodeScalars.append(c)
                }
            }
        }
        output += "\""
    }
}

extension JinjaValue {
    /// A value from JSON text (objects keep their key order, integers stay integers).
    ///
    /// - Throws: `TemplateError` (`.type`) when the text is not JSON, or nests deeper than
    ///   `maxDepth`.
    public static func fromJSON(_ text: String, maxDepth: Int = 256) throws -> JinjaValue {
        var parser = JSONReader(scalars: Array(text.unicodeScalars), maxDepth: maxDepth)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == parser.scalars.count else { throw parser.error("trailing characters") }
        return value
    }
}

/// A small JSON reader that keeps object key order (Foundation's does not).
private struct JSONReader {
    let scalars: [Unicode.Scalar]
    let maxDepth: Int
    var index = 0

    init(scalars: [Unicode.Scalar], maxDepth: Int) {
        self.scalars = scalars
        self.maxDepth = maxDepth
    }

    func error(_ message: String) -> TemplateError { TemplateError(.type, "invalid JSON at offset \(index): \(message)") }

    mutating func skipSpace() {
        while index < scalars.count, [" ", "\n", "\r", "\t"].contains(scalars[index]) { index += 1 }
    }

    mutating func literal(_ word: String) -> Bool {
        let w = Array(word.unicodeScalars)
        guard index + w.count <= scalars.count, Array(scalars[index..<(index + w.count)]) == w else { return false }
        index += w.count
        return true
    }

    mutating func value(depth: Int) throws -> JinjaValue {
        guard depth <= maxDepth else { throw error("nested deeper than \(maxDepth)") }
        guard index < scalars.count else { throw error("unexpected end") }
        switch scalars[index] {
        case "{":
            index += 1
            var d = JinjaDict()
            skipSpace()
            if index < scalars.count, scalars[index] == "}" { index += 1; return .dict(d) }
            while true {
                skipSpace()
                guard index < scalars.count, scalars[index] == "\"" else { throw error("expected a key") }
                let key = try string()
                skipSpace()
                guard index < scalars.count, scalars[index] == ":" else { throw error("expected ':'") }
                index += 1
                skipSpace()
                d[.string(key)] = try value(depth: depth + 1)
                skipSpace()
                guard index < scalars.count else { throw error("unexpected end") }
                if scalars[index] == "," { index += 1; continue }
                if scalars[index] == "}" { index += 1; return .dict(d) }
                throw error("expected ',' or '}'")
            }
        case "[":
            index += 1
            var items: [JinjaValue] = []
            skipSpace()
            if index < scalars.count, scalars[index] == "]" { index += 1; return .list(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard index < scalars.count else { throw error("unexpected end") }
                if scalars[index] == "," { index += 1; continue }
                if scalars[index] == "]" { index += 1; return .list(items) }
                throw error("expected ',' or ']'")
            }
        case "\"":
            return .string(try string())
        default:
            if literal("true") { return .bool(true) }
            if literal("false") { return .bool(false) }
            if literal("null") { return .none }
            return try number()
        }
    }

    mutating func string() throws -> String {
        index += 1
        var out = String.UnicodeScalarView()
        while true {
            guard index < scalars.count else { throw error("unterminated string") }
            let c = scalars[index]
            index += 1
            if c == "\"" { return String(out) }
            if c != "\\" { out.append(c); continue }
            guard index < scalars.count else { throw error("unterminated string") }
            let e = scalars[index]
            index += 1
            switch e {
            case "\"": out.append("\"")
            case "\\": out.append("\\")
            case "/": out.append("/")
            case "b": out.append("\u{08}")
            case "f": out.append("\u{0C}")
            case "n": out.append("\n")
            case "r": out.append("\r")
            case "t": out.append("\t")
            case "u":
                var v = try hex4()
                if v >= 0xD800 && v < 0xDC00, index + 1 < scalars.count, scalars[index] == "\\", scalars[index + 1] == "u" {
                    index += 2
                    let low = try hex4()
                    v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                }
                out.append(Unicode.Scalar(v) ?? "\u{FFFD}")
            default: throw error("bad escape")
            }
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard index + 4 <= scalars.count, let v = UInt32(String(String.UnicodeScalarView(scalars[index..<(index + 4)])), radix: 16) else {
            throw error("bad \\u escape")
        }
        index += 4
        return v
    }

    mutating func number() throws -> JinjaValue {
        let start = index
        while index < scalars.count, "+-0123456789.eE".unicodeScalars.contains(scalars[index]) { index += 1 }
        let text = String(String.UnicodeScalarView(scalars[start..<index]))
        if let i = Int(text) { return .int(i) }
        if let d = Double(text) { return .float(d) }
        throw error("unexpected character")
    }
}
