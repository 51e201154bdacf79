import Foundation
import HearthJSON

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

    private mutating func writeString(_ s: String) { JSON.quote(s, into: &output, asciiOnly: ensureASCII) }
}

extension JinjaValue {
    /// A value from JSON text (objects keep their key order, integers stay integers), read by
    /// HearthJSON's parser.
    ///
    /// - Throws: `TemplateError` (`.type`) when the text is not JSON, or nests deeper than
    ///   `maxDepth`.
    package static func fromJSON(_ text: String, maxDepth: Int = 256) throws -> JinjaValue {
        let json: JSON
        do { json = try JSON.parse(text) } catch {
            throw TemplateError(.type, "invalid JSON at offset \(error.offset): \(error.message)")
        }
        return try JinjaValue(json, maxDepth: maxDepth, depth: 0)
    }

    /// A JSON value as Python's `json.loads` gives it: objects as dicts in their key order
    /// (a repeated key keeps its first place and its last value), numbers written as integers
    /// that fit 64 bits as `int`, others as `float`.
    package init(json: JSON) {
        // HearthJSON's nesting bound (512) is below what the conversion's recursion can take.
        self = (try? JinjaValue(json, maxDepth: .max, depth: 0)) ?? .none
    }

    private init(_ json: JSON, maxDepth: Int, depth: Int) throws {
        guard depth <= maxDepth else { throw TemplateError(.type, "invalid JSON: nested deeper than \(maxDepth)") }
        switch json {
        case .null: self = .none
        case .bool(let flag): self = .bool(flag)
        case .number(let number): self = Int(number.text).map(JinjaValue.int) ?? .float(number.double)
        case .string(let text): self = .string(text)
        case .array(let items): self = .list(try items.map { try JinjaValue($0, maxDepth: maxDepth, depth: depth + 1) })
        case .object(let members):
            var dict = JinjaDict()
            for (key, value) in members { dict[.string(key)] = try JinjaValue(value, maxDepth: maxDepth, depth: depth + 1) }
            self = .dict(dict)
        }
    }
}
