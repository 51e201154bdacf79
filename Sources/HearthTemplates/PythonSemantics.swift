/// Python's printing, equality and ordering of values, as templates depend on them
/// (`{{ [1, 'a', None] }}` prints `[1, 'a', None]`; `1 == 1.0 == True`).
enum PythonFormat {
    /// Python's whitespace (`str.isspace`, `\s` in a `str` pattern).
    static func isSpace(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
            return true
        default: return false
        }
    }

    /// Python's `str(value)` as jinja2 prints it (`Undefined` prints empty).
    static func str(_ value: JinjaValue, limit: Int = 200) -> String {
        switch value {
        case .undefined: return ""
        case .string(let s): return s
        default: return repr(value, depth: 0, limit: limit)
        }
    }

    /// Python's `repr(value)`; `depth` counts nesting, refused past `limit` (returns a marker;
    /// callers that need an error check depth themselves through `Evaluator`).
    static func repr(_ value: JinjaValue, depth: Int, limit: Int) -> String {
        if depth > limit { return "..." }
        switch value {
        case .undefined: return ""
        case .none: return "None"
        case .bool(let b): return b ? "True" : "False"
        case .int(let i): return String(i)
        case .float(let d): return floatRepr(d)
        case .string(let s): return stringRepr(s)
        case .list(let a): return "[" + a.map { repr($0, depth: depth + 1, limit: limit) }.joined(separator: ", ") + "]"
        case .tuple(let a):
            if a.count == 1 { return "(" + repr(a[0], depth: depth + 1, limit: limit) + ",)" }
            return "(" + a.map { repr($0, depth: depth + 1, limit: limit) }.joined(separator: ", ") + ")"
        case .dict(let d):
            return "{"
                + d.entries.map { repr($0.key, depth: depth + 1, limit: limit) + ": " + repr($0.value, depth: depth + 1, limit: limit) }
                .joined(separator: ", ") + "}"
        case .object(let o):
            if let ns = o as? NamespaceObject {
                return "<Namespace " + repr(.dict(ns.attributes), depth: depth + 1, limit: limit) + ">"
            }
            return "<\(o.typeName)>"
        }
    }

    /// Python's `repr(float)`: shortest round-trip digits, exponent from 1e16 and below 1e-4.
    static func floatRepr(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        // Swift's description is the same shortest round-trip digit string; only the switch to
        // exponent notation and its spelling differ.
        let desc = d.description  // e.g. "1e-05", "1.0", "1e+16", "5e-324"
        var mantissa = desc
        var exponent: Int? = nil
        if let e = desc.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = String(desc[..<e])
            exponent = Int(desc[desc.index(after: e)...].replacingOccurrences(of: "+", with: ""))
        }
        // Digits and decimal exponent of the shortest representation.
        var negative = false
        if mantissa.hasPrefix("-") { negative = true; mantissa.removeFirst() }
        var digits = mantissa.replacingOccurrences(of: ".", with: "")
        let pointIndex = mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count
        var exp10 = pointIndex + (exponent ?? 0)  // value = 0.digits * 10^exp10
        // Strip leading zeros.
        while digits.count > 1, digits.first == "0" { digits.removeFirst(); exp10 -= 1 }
        while digits.count > 1, digits.last == "0" { digits.removeLast() }
        if digits == "0" { return negative ? "-0.0" : "0.0" }
        let sign = negative ? "-" : ""
        let decimalExponent = exp10 - 1  // value = d.ddd * 10^decimalExponent
        if decimalExponent >= 16 || decimalExponent < -4 {
            var m = String(digits.prefix(1))
            if digits.count > 1 { m += "." + digits.dropFirst() }
            let e = decimalExponent
            return sign + m + "e" + (e < 0 ? "-" : "+") + (abs(e) < 10 ? "0" : "") + String(abs(e))
        }
        if exp10 <= 0 {
            return sign + "0." + String(repeating: "0", count: -exp10) + digits
        }
        if exp10 >= digits.count {
            return sign + digits + String(repeating: "0", count: exp10 - digits.count) + ".0"
        }
        let idx = digits.index(digits.startIndex, offsetBy: exp10)
        return sign + digits[..<idx] + "." + digits[idx...]
    }

    /// Python's `repr(str)`.
    static func stringRepr(_ s: String) -> String {
        // Printable ASCII without a quote or a backslash (most keys and names): quoted as is.
        if s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "'") && $0 != UInt8(ascii: "\\") }) {
            return "'" + s + "'"
        }
        let quote: Character = (s.contains("'") && !s.contains("\"")) ? "\"" : "'"
        var out = String(quote)
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if Character(c) == quote {
                    out += "\\" + String(quote)
                } else if c.value < 0x20 || c.value == 0x7F {
                    out += "\\x" + hex(c.value, width: 2)
                } else if c.value >= 0x80 && !isPrintable(c) {
                    if c.value <= 0xFF {
                        out += "\\x" + hex(c.value, width: 2)
                    } else if c.value <= 0xFFFF {
                        out += "\\u" + hex(c.value, width: 4)
                    } else {
                        out += "\\U" + hex(c.value, width: 8)
                    }
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        out.append(quote)
        return out
    }

    static func hex(_ v: UInt32, width: Int) -> String {
        let h = String(v, radix: 16)
        return String(repeating: "0", count: max(0, width - h.count)) + h
    }

    /// Python's `str.isprintable` for one non-ASCII scalar.
    static func isPrintable(_ c: Unicode.Scalar) -> Bool {
        switch c.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator:
            return false
        case .spaceSeparator:
            return c == " "
        default:
            return true
        }
    }

    /// Python's `str ==`: equal code points. Strings of different UTF-8 lengths are unequal
    /// (Swift's `==` would call canonically equivalent ones equal, "é" and "e\u{301}"; Python
    /// does not), and the length test skips Swift's slower comparison for most unequal pairs.
    @inline(__always) static func stringsEqual(_ x: String, _ y: String) -> Bool {
        x.utf8.count == y.utf8.count && x == y
    }

    /// Python `==`.
    static func equal(_ a: JinjaValue, _ b: JinjaValue, depth: Int = 0) -> Bool {
        // Two strings (most comparisons: `message.role == 'user'`) without building the pair.
        if case .string(let x) = a, case .string(let y) = b { return stringsEqual(x, y) }
        if depth > 512 { return false }
        switch (a, b) {
        case (.undefined, .undefined), (.none, .none): return true
        case (.string(let x), .string(let y)): return stringsEqual(x, y)
        case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)):
            guard x.count == y.count else { return false }
            for i in x.indices where !equal(x[i], y[i], depth: depth + 1) { return false }
            return true
        case (.dict(let x), .dict(let y)):
            guard x.count == y.count else { return false }
            for (k, v) in x.entries {
                guard let w = y[k], equal(v, w, depth: depth + 1) else { return false }
            }
            return true
        case (.object(let x), .object(let y)): return x === y
        default:
            if let x = number(a), let y = number(b) {
                switch (x, y) {
                case (.int(let i), .int(let j)): return i == j
                default: return double(x) == double(y)
                }
            }
            return false
        }
    }

    /// A number's value (bools are ints, as in Python), or nil.
    static func number(_ v: JinjaValue) -> JinjaValue? {
        switch v {
        case .bool(let b): return .int(b ? 1 : 0)
        case .int, .float: return v
        default: return nil
        }
    }

    static func double(_ v: JinjaValue) -> Double {
        switch v {
        case .int(let i): return Double(i)
        case .float(let d): return d
        case .bool(let b): return b ? 1 : 0
        default: return .nan
        }
    }

    /// Python `<` ordering: -1, 0, 1, or nil when Python raises `TypeError`.
    static func compare(_ a: JinjaValue, _ b: JinjaValue, depth: Int = 0) -> Int? {
        if depth > 512 { return nil }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            // Python compares code points.
            if x == y { return 0 }
            return x.unicodeScalars.lexicographicallyPrecedes(y.unicodeScalars, by: { $0.value < $1.value }) ? -1 : 1
        case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)):
            for i in 0..<min(x.count, y.count) where !equal(x[i], y[i]) {
                return compare(x[i], y[i], depth: depth + 1)
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        default:
            guard let x = number(a), let y = number(b) else { return nil }
            if case .int(let i) = x, case .int(let j) = y { return i == j ? 0 : (i < j ? -1 : 1) }
            let p = double(x), q = double(y)
            if p.isNaN || q.isNaN { return 2 }  // every comparison with nan is false
            return p == q ? 0 : (p < q ? -1 : 1)
        }
    }
}
