import Foundation

/// jinja2's built-in filters and tests (with transformers' `tojson`), as chat templates use them.
extension Evaluator {
    func applyFilter(_ name: String, _ value: JinjaValue, _ arguments: Arguments, _ scope: Scope, _ position: SourcePosition) throws -> JinjaValue {
        let positional = try arguments.positional.map { try eval($0, scope) }
        let keyword = try arguments.keyword.map { ($0.0, try eval($0.1, scope)) }
        return try filter(name, value, positional, keyword, position)
    }

    // Long: one case per built-in Jinja filter (57), each a few lines and independent of the others; a
    // table read top to bottom, and split by filter it would scatter the argument helpers every case
    // shares.
    func filter(_ name: String, _ value: JinjaValue, _ positional: [JinjaValue], _ keyword: [(String, JinjaValue)], _ position: SourcePosition) throws -> JinjaValue {
        func arg(_ i: Int, _ key: String) -> JinjaValue? {
            if i < positional.count { return positional[i] }
            return keyword.first { $0.0 == key }?.1
        }
        func flag(_ i: Int, _ key: String, _ def: Bool) -> Bool { arg(i, key)?.isTruthy ?? def }
        func undefinedCheck() throws {
            if case .undefined(let n) = value { throw undefinedError(n, position) }
        }
        switch name {
        case "length", "count":
            switch value {
            case .string(let s): return .int(StringOps.scalarCount(s))
            case .list(let a), .tuple(let a): return .int(a.count)
            case .dict(let d): return .int(d.count)
            case .undefined: return .int(0)
            case .object(let o):
                if let ns = o as? NamespaceObject { _ = ns }
                throw TemplateError(.type, "object of type '\(o.typeName)' has no len()", at: position)
            default: throw TemplateError(.type, "object of type '\(value.typeName)' has no len()", at: position)
            }
        case "default", "d":
            let fallback = arg(0, "default_value") ?? .string("")
            if value.isUndefined || (flag(1, "boolean", false) && !value.isTruthy) { return fallback }
            return value
        case "trim":
            var chars: String? = nil
            if case .string(let c) = arg(0, "chars") ?? JinjaValue.none { chars = c }
            return .string(StringOps.strip(try str(value, position), chars, leading: true, trailing: true))
        case "upper": return .string(try str(value, position).uppercased())
        case "lower": return .string(try str(value, position).lowercased())
        case "capitalize": return .string(StringOps.capitalize(try str(value, position)))
        case "title": return .string(jinjaTitle(try str(value, position)))
        case "string": return try checkString(try str(value, position), position)
        case "safe", "escape", "e", "forceescape":
            if name == "safe" { return value.isUndefined ? .string("") : (isStr(value) ? value : .string(try str(value, position))) }
            return .string(htmlEscape(try str(value, position)))
        case "replace":
            guard let old = arg(0, "old"), let new = arg(1, "new") else { throw TemplateError(.type, "replace() needs old and new", at: position) }
            let count = arg(2, "count").flatMap(intValue) ?? -1
            return try checkString(StringOps.replace(try str(value, position), try str(old, position), try str(new, position), count: count), position)
        case "tojson":
            var indent: String? = nil
            switch arg(1, "indent") ?? JinjaValue.none {
            case .none: break
            case .int(let n): indent = String(repeating: " ", count: max(0, min(n, 64)))
            case .string(let s): indent = s
            default: throw TemplateError(.type, "tojson indent must be an integer or a string", at: position)
            }
            var separators: (String, String)? = nil
            if let sep = arg(2, "separators"), case .list(let parts) = sep, parts.count == 2 {
                separators = (try str(parts[0], position), try str(parts[1], position))
            } else if let sep = arg(2, "separators"), case .tuple(let parts) = sep, parts.count == 2 {
                separators = (try str(parts[0], position), try str(parts[1], position))
            }
            var writer = JSONWriter(
                ensureASCII: flag(0, "ensure_ascii", false), indent: indent, separators: separators, sortKeys: flag(3, "sort_keys", false),
                maxDepth: limits.maxValueDepth, maxBytes: limits.maxOutputBytes)
            try writer.write(value, evaluator: self, position: position)
            return .string(writer.output)
        case "join":
            let separator = try str(arg(0, "d") ?? .string(""), position)
            var items = try iterate(value, position)
            if let attribute = arg(1, "attribute") { items = try items.map { try lookupAttribute($0, attribute, position) } }
            try tick(position, items.count / 8)
            var out = ""
            for (i, item) in items.enumerated() {
                if i > 0 { out += separator }
                out += try str(item, position)
                if out.utf8.count > limits.maxOutputBytes { _ = try checkString(out, position) }
            }
            return .string(out)
        case "first":
            if case .undefined(let n) = value { throw undefinedError(n, position) }
            return try iterate(value, position).first ?? .undefined("no first item, sequence was empty")
        case "last":
            if case .undefined(let n) = value { throw undefinedError(n, position) }
            if case .dict = value { throw TemplateError(.type, "'dict' object is not reversible", at: position) }
            if case .object(let o) = value, o is GeneratorObject { throw TemplateError(.type, "'generator' object is not reversible", at: position) }
            return try iterate(value, position).last ?? .undefined("no last item, sequence was empty")
        case "list":
            return .list(try iterate(value, position))
        case "reverse":
            if case .string(let s) = value { return .string(String(String.UnicodeScalarView(s.unicodeScalars.reversed()))) }
            return .object(GeneratorObject(try iterate(value, position).reversed()))
        case "items":
            if value.isUndefined { return .object(GeneratorObject([])) }
            guard case .dict(let d) = value else { throw TemplateError(.type, "items filter expects a mapping, got \(value.typeName)", at: position) }
            return .object(GeneratorObject(d.entries.map { .tuple([$0.key, $0.value]) }))
        case "int":
            let def = arg(0, "default") ?? .int(0)
            let base = arg(1, "base").flatMap(intValue) ?? 10
            switch value {
            case .int: return value
            case .bool(let b): return .int(b ? 1 : 0)
            case .float(let d):
                guard d.isFinite, abs(d) < 9.2e18 else { return def }
                return .int(Int(d))
            case .string(let s):
                let t = StringOps.strip(s, nil, leading: true, trailing: true).replacingOccurrences(of: "_", with: "")
                if let i = Int(t, radix: base) { return .int(i) }
                if let d = Double(t), d.isFinite, abs(d) < 9.2e18 { return .int(Int(d)) }
                return def
            default: return def
            }
        case "float":
            let def = arg(0, "default") ?? .float(0)
            switch value {
            case .float: return value
            case .int(let i): return .float(Double(i))
            case .bool(let b): return .float(b ? 1 : 0)
            case .string(let s):
                let t = StringOps.strip(s, nil, leading: true, trailing: true).lowercased()
                if let d = Double(t) { return .float(d) }
                return def
            default: return def
            }
        case "abs":
            switch value {
            case .int(let i):
                guard i != Int.min else { throw TemplateError(.limit, "integer overflow", at: position) }
                return .int(abs(i))
            case .float(let d): return .float(abs(d))
            case .bool(let b): return .int(b ? 1 : 0)
            default: throw TemplateError(.type, "bad operand type for abs(): '\(value.typeName)'", at: position)
            }
        case "round":
            let precision = arg(0, "precision").flatMap(intValue) ?? 0
            let method = try str(arg(1, "method") ?? .string("common"), position)
            guard let number = PythonFormat.number(value) else { throw TemplateError(.type, "round expects a number, got \(value.typeName)", at: position) }
            let d = PythonFormat.double(number)
            let scale = pow(10.0, Double(max(-20, min(precision, 20))))
            let scaled = d * scale
            let rounded: Double
            switch method {
            case "common": rounded = scaled.rounded(.toNearestOrEven)  // Python's round()
            case "ceil": rounded = scaled.rounded(.up)
            case "floor": rounded = scaled.rounded(.down)
            default: throw TemplateError(.type, "method must be common, ceil or floor", at: position)
            }
            return .float(rounded / scale)
        case "indent":
            var indentation = "    "
            switch arg(0, "width") ?? .int(4) {
            case .string(let s): indentation = s
            case let w:
                guard let n = intValue(w) else { throw TemplateError(.type, "indent width must be an integer or a string", at: position) }
                indentation = String(repeating: " ", count: max(0, min(n, 1024)))
            }
            let first = flag(1, "first", false), blank = flag(2, "blank", false)
            let s = try str(value, position) + "\n"
            let lines = StringOps.splitlines(s, keepEnds: false)
            var out: String
            if blank {
                out = lines.joined(separator: "\n" + indentation)
            } else {
                out = lines.first ?? ""
                if lines.count > 1 {
                    out += "\n" + lines.dropFirst().map { $0.isEmpty ? $0 : indentation + $0 }.joined(separator: "\n")
                }
            }
            if first { out = indentation + out }
            return try checkString(out, position)
        case "center":
            let width = arg(0, "width").flatMap(intValue) ?? 80
            return try callMethod(.string(try str(value, position)), "center", [.int(width)], [], position)
        case "wordcount":
            return .int(StringOps.split(try str(value, position), nil, maxSplit: -1, fromRight: false).count)
        case "map":
            guard value.isTruthy else { return .object(GeneratorObject([])) }
            let items = try iterate(value, position)
            try tick(position, items.count)
            if let attribute = keyword.first(where: { $0.0 == "attribute" })?.1 {
                let def = keyword.first { $0.0 == "default" }?.1
                return .object(GeneratorObject(try items.map { item in
                    let v = try lookupAttribute(item, attribute, position)
                    if v.isUndefined, let def { return def }
                    return v
                }))
            }
            guard case .string(let filterName) = positional.first ?? JinjaValue.none else {
                throw TemplateError(.type, "map requires a filter name or attribute=", at: position)
            }
            guard Builtins.filters.contains(filterName) else { throw TemplateError(.unsupported, "no filter named '\(filterName)'", at: position) }
            let rest = Array(positional.dropFirst())
            return .object(GeneratorObject(try items.map { try filter(filterName, $0, rest, keyword, position) }))
        case "select", "reject", "selectattr", "rejectattr":
            guard value.isTruthy else { return .object(GeneratorObject([])) }
            let items = try iterate(value, position)
            try tick(position, items.count)
            let byAttribute = name.hasSuffix("attr")
            var rest = positional
            var attribute: JinjaValue? = nil
            if byAttribute {
                guard !rest.isEmpty else { throw TemplateError(.type, "\(name) needs an attribute name", at: position) }
                attribute = rest.removeFirst()
            }
            var testName: String? = nil
            if !rest.isEmpty {
                guard case .string(let t) = rest.removeFirst() else { throw TemplateError(.type, "\(name) needs a test name", at: position) }
                guard Builtins.tests.contains(t) else { throw TemplateError(.unsupported, "no test named '\(t)'", at: position) }
                testName = t
            }
            let keep = name.hasPrefix("select")
            var out: [JinjaValue] = []
            for item in items {
                let subject = try attribute.map { try lookupAttribute(item, $0, position) } ?? item
                let result = try testName.map { try applyTest($0, subject, rest, position) } ?? subject.isTruthy
                if result == keep { out.append(item) }
            }
            return .object(GeneratorObject(out))
        case "unique":
            let caseSensitive = flag(0, "case_sensitive", false)
            let attribute = arg(1, "attribute")
            var seen: [JinjaValue] = []
            var out: [JinjaValue] = []
            for item in try iterate(value, position) {
                try tick(position, seen.count / 8 + 1)
                var key = try attribute.map { try lookupAttribute(item, $0, position) } ?? item
                if !caseSensitive, case .string(let s) = key { key = .string(s.lowercased()) }
                if !seen.contains(where: { PythonFormat.equal($0, key) }) {
                    seen.append(key)
                    out.append(item)
                }
            }
            return .object(GeneratorObject(out))
        case "sort":
            let reverse = flag(0, "reverse", false), caseSensitive = flag(1, "case_sensitive", false)
            let attribute = arg(2, "attribute")
            let items = try iterate(value, position)
            let keys = try items.map { item -> JinjaValue in
                let k = try attribute.map { try lookupAttribute(item, $0, position) } ?? item
                if !caseSensitive, case .string(let s) = k { return .string(s.lowercased()) }
                return k
            }
            return .list(try stableSort(items, keys: keys, reverse: reverse, position).map { items[$0] })
        case "dictsort":
            guard case .dict(let d) = value else {
                try undefinedCheck()
                throw TemplateError(.type, "dictsort expects a mapping, got \(value.typeName)", at: position)
            }
            let caseSensitive = flag(0, "case_sensitive", false)
            let by = try str(arg(1, "by") ?? .string("key"), position)
            let reverse = flag(2, "reverse", false)
            let pairs = d.entries
            let keys = pairs.map { pair -> JinjaValue in
                let k = by == "value" ? pair.value : pair.key
                if !caseSensitive, case .string(let s) = k { return .string(s.lowercased()) }
                return k
            }
            return .list(try stableSort(pairs.map { .tuple([$0.key, $0.value]) }, keys: keys, reverse: reverse, position).map { .tuple([pairs[$0].key, pairs[$0].value]) })
        case "max", "min":
            let caseSensitive = flag(0, "case_sensitive", false)
            let attribute = arg(1, "attribute")
            let items = try iterate(value, position)
            guard !items.isEmpty else { return .undefined("no \(name) item, sequence was empty") }
            var best = 0
            for i in items.indices.dropFirst() {
                func key(_ v: JinjaValue) throws -> JinjaValue {
                    let k = try attribute.map { try lookupAttribute(v, $0, position) } ?? v
                    if !caseSensitive, case .string(let s) = k { return .string(s.lowercased()) }
                    return k
                }
                guard let c = PythonFormat.compare(try key(items[i]), try key(items[best])) else {
                    throw TemplateError(.type, "'<' not supported between these values", at: position)
                }
                if (name == "max" && c == 1) || (name == "min" && c == -1) { best = i }
            }
            return items[best]
        case "sum":
            let attribute = arg(0, "attribute")
            var total = arg(1, "start") ?? .int(0)
            for item in try iterate(value, position) {
                total = try binary("+", total, try attribute.map { try lookupAttribute(item, $0, position) } ?? item, position)
            }
            return total
        case "attr":
            guard case .string(let n) = arg(0, "name") ?? JinjaValue.none else { throw TemplateError(.type, "attr needs a name", at: position) }
            return try getAttribute(value, n, position)
        case "batch":
            guard let size = arg(0, "linecount").flatMap(intValue), size > 0 else { throw TemplateError(.type, "batch needs a positive size", at: position) }
            let items = try iterate(value, position)
            var out: [JinjaValue] = []
            var i = 0
            while i < items.count {
                var chunk = Array(items[i..<min(i + size, items.count)])
                if chunk.count < size, let fill = arg(1, "fill_with") { chunk += Array(repeating: fill, count: size - chunk.count) }
                out.append(.list(chunk))
                i += size
            }
            return .list(out)
        default:
            throw TemplateError(.unsupported, "no filter named '\(name)'", at: position)
        }
    }

    private func isStr(_ v: JinjaValue) -> Bool {
        if case .string = v { return true }
        return false
    }

    /// Indices of `items` sorted by `keys` (stable, as Python's sort).
    func stableSort(_ items: [JinjaValue], keys: [JinjaValue], reverse: Bool, _ position: SourcePosition) throws -> [Int] {
        try tick(position, items.count * 4)
        var failure: TemplateError? = nil
        let order = Array(items.indices).sorted { i, j in
            guard let c = PythonFormat.compare(keys[i], keys[j]) else {
                failure = TemplateError(.type, "'<' not supported between instances of '\(keys[i].typeName)' and '\(keys[j].typeName)'", at: position)
                return i < j
            }
            if c == 0 || c == 2 { return i < j }
            return reverse ? c == 1 : c == -1
        }
        if let failure { throw failure }
        return order
    }

    /// jinja2's `environment.getitem` over a dotted attribute path (`selectattr("function.name")`).
    func lookupAttribute(_ value: JinjaValue, _ attribute: JinjaValue, _ position: SourcePosition) throws -> JinjaValue {
        if case .int = attribute { return try getItem(value, attribute, position) }
        guard case .string(let path) = attribute else { return try getItem(value, attribute, position) }
        var current = value
        for part in path.split(separator: ".", omittingEmptySubsequences: false) {
            if case .undefined = current { return current }
            if let i = Int(part) { current = try getItem(current, .int(i), position) } else { current = try getItem(current, .string(String(part)), position) }
        }
        return current
    }

    /// jinja2's `title` filter: capitalizes after spaces, hyphens and opening brackets.
    func jinjaTitle(_ s: String) -> String {
        var out = ""
        var atWordStart = true
        var chunk = ""
        func flush() {
            if let first = chunk.first { out += first.uppercased() + chunk.dropFirst().lowercased() }
            chunk = ""
        }
        for c in s {
            let boundary = c == "-" || c == "(" || c == "{" || c == "[" || c == "<" || c.unicodeScalars.allSatisfy(PythonFormat.isSpace)
            if boundary {
                flush()
                out.append(c)
                atWordStart = true
            } else {
                chunk.append(c)
                atWordStart = false
            }
        }
        _ = atWordStart
        flush()
        return out
    }

    func htmlEscape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&#34;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    // MARK: tests

    func applyTest(_ name: String, _ value: JinjaValue, _ args: [JinjaValue], _ position: SourcePosition) throws -> Bool {
        func operand() throws -> JinjaValue {
            guard let a = args.first else { throw TemplateError(.type, "test '\(name)' needs an argument", at: position) }
            return a
        }
        switch name {
        case "defined": return !value.isUndefined
        case "undefined": return value.isUndefined
        case "none": if case .none = value { return true }; return false
        case "boolean": if case .bool = value { return true }; return false
        case "true": if case .bool(true) = value { return true }; return false
        case "false": if case .bool(false) = value { return true }; return false
        case "string": return isStr(value)
        case "number":
            switch value { case .int, .float, .bool: return true; default: return false }
        case "integer": if case .int = value { return true }; return false
        case "float": if case .float = value { return true }; return false
        case "mapping": if case .dict = value { return true }; return false
        case "iterable":
            switch value {
            case .string, .list, .tuple, .dict, .undefined: return true
            case .object(let o): return o is LoopObject || o is GeneratorObject
            default: return false
            }
        case "sequence":
            switch value { case .string, .list, .tuple, .dict, .undefined: return true; default: return false }
        case "callable":
            if case .object(let o) = value { return o is CallableObject }
            return false
        case "escaped": return false
        case "lower": if case .string(let s) = value { return s.lowercased() == s }; return false
        case "upper": if case .string(let s) = value { return s.uppercased() == s }; return false
        case "odd", "even", "divisibleby":
            guard let i = intValue(value) else {
                if case .undefined(let n) = value { throw undefinedError(n, position) }
                throw TemplateError(.type, "test '\(name)' needs an integer, got \(value.typeName)", at: position)
            }
            if name == "odd" { return i % 2 != 0 }
            if name == "even" { return i % 2 == 0 }
            guard let d = intValue(try operand()), d != 0 else { throw TemplateError(.type, "divisibleby needs a non-zero integer", at: position) }
            return i % d == 0
        case "eq", "equalto", "==": return PythonFormat.equal(value, try operand())
        case "ne", "!=": return !PythonFormat.equal(value, try operand())
        case "lt", "<", "lessthan": return try compare(.less, value, try operand(), position)
        case "le", "<=": return try compare(.lessOrEqual, value, try operand(), position)
        case "gt", ">", "greaterthan": return try compare(.greater, value, try operand(), position)
        case "ge", ">=": return try compare(.greaterOrEqual, value, try operand(), position)
        case "in": return try contains(try operand(), value, position)
        case "sameas":
            let other = try operand()
            switch (value, other) {
            case (.none, .none): return true
            case (.bool(let a), .bool(let b)): return a == b
            case (.object(let a), .object(let b)): return a === b
            case (.int(let a), .int(let b)): return a == b && a >= -5 && a <= 256
            default: return false
            }
        case "filter":
            guard case .string(let n) = value else { return false }
            return Builtins.filters.contains(n)
        case "test":
            guard case .string(let n) = value else { return false }
            return Builtins.tests.contains(n)
        default:
            throw TemplateError(.unsupported, "no test named '\(name)'", at: position)
        }
    }
}
