/// Python's `str`, `list` and `dict` methods that jinja2's immutable sandbox lets templates call.
extension Evaluator {
    func callMethod(
        _ receiver: JinjaValue, _ name: String, _ positional: [JinjaValue], _ keyword: [(String, JinjaValue)], _ position: SourcePosition
    ) throws -> JinjaValue {
        if Builtins.mutatingMethods.contains(name), !(name == "pop" && isStringValue(receiver)) {
            throw TemplateError(.security, "access to attribute '\(name)' of '\(receiver.typeName)' object is unsafe", at: position)
        }
        func arg(_ i: Int, _ key: String) -> JinjaValue? {
            if i < positional.count { return positional[i] }
            return keyword.first { $0.0 == key }?.1
        }
        func stringArg(_ i: Int, _ key: String) throws -> String? {
            guard let v = arg(i, key) else { return nil }
            if case .none = v { return nil }
            guard case .string(let s) = v else {
                throw TemplateError(.type, "\(name)() argument must be str, not \(v.typeName)", at: position)
            }
            return s
        }
        switch receiver {
        case .string(let s):
            return try stringMethod(s, name, positional, arg, stringArg, position)
        case .list(let a), .tuple(let a):
            switch name {
            case "index":
                guard let x = arg(0, "value"), let i = a.firstIndex(where: { PythonFormat.equal($0, x) }) else {
                    throw TemplateError(.type, "value is not in list", at: position)
                }
                return .int(i)
            case "count":
                guard let x = arg(0, "value") else { throw TemplateError(.type, "count() takes exactly one argument", at: position) }
                return .int(a.filter { PythonFormat.equal($0, x) }.count)
            case "copy":
                return receiver
            default: break
            }
        case .dict(let d):
            switch name {
            case "items": return .list(d.entries.map { .tuple([$0.key, $0.value]) })
            case "keys": return .list(d.keys)
            case "values": return .list(d.values)
            case "get":
                guard let key = arg(0, "key") else { throw TemplateError(.type, "get expected at least 1 argument, got 0", at: position) }
                return d[key] ?? arg(1, "default") ?? JinjaValue.none
            case "copy": return receiver
            default: break
            }
        default: break
        }
        throw TemplateError(.unsupported, "method '\(name)' of '\(receiver.typeName)' is not supported", at: position)
    }

    /// `str.format` with positional (`{}`, `{0}`) and keyword (`{name}`) fields and `!r`/`!s`;
    /// format specs are refused as unsupported.
    private func pythonFormat(_ s: String, _ positional: [JinjaValue], _ arg: (Int, String) -> JinjaValue?, _ position: SourcePosition) throws -> String {
        var out = ""
        var auto = 0
        var it = Array(s.unicodeScalars)[...]
        while let c = it.popFirst() {
            if c == "}" {
                guard it.first == "}" else { throw TemplateError(.type, "Single '}' encountered in format string", at: position) }
                it.removeFirst()
                out += "}"
                continue
            }
            guard c == "{" else { out.unicodeScalars.append(c); continue }
            if it.first == "{" { it.removeFirst(); out += "{"; continue }
            var field = ""
            while let d = it.popFirst(), d != "}" { field.unicodeScalars.append(d) }
            var conversion: String? = nil
            if let bang = field.firstIndex(of: "!") {
                conversion = String(field[field.index(after: bang)...])
                field = String(field[..<bang])
            }
            if field.contains(":") { throw TemplateError(.unsupported, "format specs in str.format are not supported", at: position) }
            let value: JinjaValue?
            if field.isEmpty {
                value = auto < positional.count ? positional[auto] : nil
                auto += 1
            } else if let i = Int(field) {
                value = i < positional.count ? positional[i] : nil
            } else {
                value = arg(Int.max, field)
            }
            guard let value else { throw TemplateError(.type, "Replacement index \(field) out of range for positional args tuple", at: position) }
            out += conversion == "r" ? PythonFormat.repr(value, depth: 0, limit: limits.maxValueDepth) : try str(value, position)
        }
        return out
    }

    private func isStringValue(_ v: JinjaValue) -> Bool {
        if case .string = v { return true }
        return false
    }

    // Long: one case per Python string method templates call (32), each a few lines: the table
    // transformers' templates rely on, in one place.
    private func stringMethod(
        _ s: String, _ name: String, _ positional: [JinjaValue], _ arg: (Int, String) -> JinjaValue?,
        _ stringArg: (Int, String) throws -> String?, _ position: SourcePosition
    ) throws -> JinjaValue {
        switch name {
        case "strip": return .string(StringOps.strip(s, try stringArg(0, "chars"), leading: true, trailing: true))
        case "lstrip": return .string(StringOps.strip(s, try stringArg(0, "chars"), leading: true, trailing: false))
        case "rstrip": return .string(StringOps.strip(s, try stringArg(0, "chars"), leading: false, trailing: true))
        case "split", "rsplit":
            let sep = try stringArg(0, "sep")
            let maxSplit = arg(1, "maxsplit").flatMap(intValue) ?? -1
            if sep == "" { throw TemplateError(.type, "empty separator", at: position) }
            let parts = StringOps.split(s, sep, maxSplit: maxSplit, fromRight: name == "rsplit")
            try checkList(parts.count, position)
            try tick(position, parts.count / 16)
            return .list(parts.map { .string($0) })
        case "splitlines":
            return .list(StringOps.splitlines(s, keepEnds: arg(0, "keepends")?.isTruthy ?? false).map { .string($0) })
        case "startswith", "endswith":
            guard let p = arg(0, "prefix") else { throw TemplateError(.type, "\(name)() takes at least 1 argument", at: position) }
            var candidates: [String] = []
            switch p {
            case .string(let x): candidates = [x]
            case .tuple(let xs), .list(let xs):
                for x in xs {
                    guard case .string(let c) = x else { throw TemplateError(.type, "tuple for \(name) must only contain str", at: position) }
                    candidates.append(c)
                }
            default: throw TemplateError(.type, "\(name) first arg must be str or a tuple of str, not \(p.typeName)", at: position)
            }
            let scalars = Array(s.unicodeScalars)
            return .bool(candidates.contains { c in
                let cs = Array(c.unicodeScalars)
                guard cs.count <= scalars.count else { return false }
                return name == "startswith" ? Array(scalars.prefix(cs.count)) == cs : Array(scalars.suffix(cs.count)) == cs
            })
        case "upper": return .string(s.uppercased())
        case "lower": return .string(s.lowercased())
        case "casefold": return .string(s.lowercased())
        case "swapcase":
            return .string(String(s.map { c in c.isUppercase ? Character(c.lowercased()) : (c.isLowercase ? Character(c.uppercased()) : c) }))
        case "title": return .string(StringOps.pythonTitle(s))
        case "capitalize": return .string(StringOps.capitalize(s))
        case "replace":
            guard let old = try stringArg(0, "old"), let new = try stringArg(1, "new") else {
                throw TemplateError(.type, "replace() takes at least 2 arguments", at: position)
            }
            let count = arg(2, "count").flatMap(intValue) ?? -1
            let result = StringOps.replace(s, old, new, count: count)
            return try checkString(result, position)
        case "find", "rfind", "index", "rindex":
            guard let sub = try stringArg(0, "sub") else { throw TemplateError(.type, "\(name)() takes at least 1 argument", at: position) }
            let found = StringOps.find(s, sub, fromRight: name.hasPrefix("r"))
            if found < 0 && name.hasSuffix("index") { throw TemplateError(.type, "substring not found", at: position) }
            return .int(found)
        case "count":
            guard let sub = try stringArg(0, "sub") else { throw TemplateError(.type, "count() takes at least 1 argument", at: position) }
            if sub.isEmpty { return .int(s.unicodeScalars.count + 1) }
            return .int(StringOps.split(s, sub, maxSplit: -1, fromRight: false).count - 1)
        case "join":
            guard let items = arg(0, "iterable") else { throw TemplateError(.type, "join() takes exactly one argument", at: position) }
            var parts: [String] = []
            for item in try iterate(items, position) {
                guard case .string(let x) = item else {
                    throw TemplateError(.type, "sequence item \(parts.count): expected str instance, \(item.typeName) found", at: position)
                }
                parts.append(x)
            }
            return try checkString(parts.joined(separator: s), position)
        case "isdigit", "isdecimal", "isnumeric":
            return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.numericType != nil })
        case "isalpha": return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.isAlphabetic })
        case "isalnum": return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0.properties.numericType != nil })
        case "isspace": return .bool(!s.isEmpty && s.unicodeScalars.allSatisfy(PythonFormat.isSpace))
        case "islower": return .bool(s.contains { $0.isCased } && s.lowercased() == s)
        case "isupper": return .bool(s.contains { $0.isCased } && s.uppercased() == s)
        case "removeprefix":
            let p = try stringArg(0, "prefix") ?? ""
            return .string(s.hasPrefix(p) && !p.isEmpty ? String(s.unicodeScalars.dropFirst(p.unicodeScalars.count)) : s)
        case "removesuffix":
            let p = try stringArg(0, "suffix") ?? ""
            return .string(!p.isEmpty && s.unicodeScalars.reversed().starts(with: p.unicodeScalars.reversed())
                ? String(String.UnicodeScalarView(s.unicodeScalars.dropLast(p.unicodeScalars.count))) : s)
        case "zfill", "center", "ljust", "rjust":
            guard let width = arg(0, "width").flatMap(intValue) else { throw TemplateError(.type, "\(name)() needs an integer width", at: position) }
            if width > limits.maxOutputBytes { throw TemplateError(.limit, "a string is longer than \(limits.maxOutputBytes) bytes", at: position) }
            let fill = try stringArg(1, "fillchar") ?? (name == "zfill" ? "0" : " ")
            let n = s.unicodeScalars.count
            if width <= n { return .string(s) }
            let pad = width - n
            switch name {
            case "ljust": return .string(s + String(repeating: fill, count: pad))
            case "rjust": return .string(String(repeating: fill, count: pad) + s)
            case "zfill":
                if s.hasPrefix("-") || s.hasPrefix("+") { return .string(String(s.prefix(1)) + String(repeating: "0", count: pad) + s.dropFirst()) }
                return .string(String(repeating: "0", count: pad) + s)
            default:
                let left = pad / 2 + (pad & width & 1)
                return .string(String(repeating: fill, count: left) + s + String(repeating: fill, count: pad - left))
            }
        case "partition", "rpartition":
            guard let sep = try stringArg(0, "sep"), !sep.isEmpty else { throw TemplateError(.type, "empty separator", at: position) }
            let parts = StringOps.split(s, sep, maxSplit: 1, fromRight: name == "rpartition")
            if parts.count == 2 { return .tuple([.string(parts[0]), .string(sep), .string(parts[1])]) }
            return name == "partition" ? .tuple([.string(s), "", ""]) : .tuple(["", "", .string(s)])
        case "format":
            return try checkString(try pythonFormat(s, positional, arg, position), position)
        default:
            throw TemplateError(.unsupported, "method '\(name)' of 'str' is not supported", at: position)
        }
    }
}

/// Python string operations on Unicode scalars (Python indexes code points, not graphemes).
enum StringOps {
    static func strip(_ s: String, _ chars: String?, leading: Bool, trailing: Bool) -> String {
        if chars == nil, let stripped = stripASCIISpace(s, leading: leading, trailing: trailing) { return stripped }
        let set = chars.map { Set($0.unicodeScalars) }
        func strippable(_ c: Unicode.Scalar) -> Bool { set?.contains(c) ?? PythonFormat.isSpace(c) }
        let scalars = s.unicodeScalars
        var lo = scalars.startIndex, hi = scalars.endIndex
        if leading { while lo < hi, strippable(scalars[lo]) { lo = scalars.index(after: lo) } }
        if trailing {
            while hi > lo {
                let prev = scalars.index(before: hi)
                if !strippable(scalars[prev]) { break }
                hi = prev
            }
        }
        return String(scalars[lo..<hi])
    }

    /// `strip()` without `chars` on the UTF-8 bytes, when the bytes it stops at are ASCII (a
    /// non-ASCII scalar at either end may be whitespace, U+3000 say): nil to take the general path.
    private static func stripASCIISpace(_ s: String, leading: Bool, trailing: Bool) -> String? {
        func isSpace(_ b: UInt8) -> Bool { (0x09...0x0D).contains(b) || (0x1C...0x20).contains(b) }
        var s = s
        let kept: Range<Int>? = s.withUTF8 { bytes in
            var lo = 0, hi = bytes.count
            if leading {
                while lo < hi, isSpace(bytes[lo]) { lo += 1 }
                if lo < hi, bytes[lo] >= 0x80 { return nil }
            }
            if trailing {
                while hi > lo, isSpace(bytes[hi - 1]) { hi -= 1 }
                if hi > lo, bytes[hi - 1] >= 0x80 { return nil }
            }
            return lo..<hi
        }
        guard let kept else { return nil }
        if kept.count == s.utf8.count { return s }
        return s.withUTF8 { String(decoding: UnsafeBufferPointer(rebasing: $0[kept]), as: UTF8.self) }
    }

    /// `split(sep)` / `rsplit(sep)` with a non-empty separator, on the UTF-8 bytes: a match of
    /// valid UTF-8 starts on a scalar boundary, so the parts are those of the scalar algorithm.
    private static func splitUTF8(_ s: String, _ sep: String, maxSplit: Int, fromRight: Bool) -> [String] {
        var s = s, sep = sep
        return s.withUTF8 { a in
            sep.withUTF8 { b in
                let m = b.count
                func make(_ r: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: a[r]), as: UTF8.self) }
                func matches(at i: Int) -> Bool {
                    guard i >= 0, i + m <= a.count else { return false }
                    for k in 0..<m where a[i + k] != b[k] { return false }
                    return true
                }
                var parts: [String] = []
                if !fromRight {
                    var start = 0, i = 0
                    while i + m <= a.count {
                        if (maxSplit < 0 || parts.count < maxSplit) && a[i] == b[0] && matches(at: i) {
                            parts.append(make(start..<i))
                            i += m
                            start = i
                        } else {
                            i += 1
                        }
                    }
                    parts.append(make(start..<a.count))
                    return parts
                }
                var end = a.count, i = a.count - m
                while i >= 0 {
                    if (maxSplit < 0 || parts.count < maxSplit) && matches(at: i) {
                        parts.append(make((i + m)..<end))
                        end = i
                        i -= m
                    } else {
                        i -= 1
                    }
                }
                parts.append(make(0..<end))
                return parts.reversed()
            }
        }
    }

    /// `str.split(sep, maxsplit)` / `rsplit`; `sep == nil` splits on runs of whitespace. An empty
    /// `sep` is Python's `ValueError`, which every caller raises first; here it gives `[s]`.
    static func split(_ s: String, _ sep: String?, maxSplit: Int, fromRight: Bool) -> [String] {
        if let sep {
            return sep.isEmpty ? [s] : splitUTF8(s, sep, maxSplit: maxSplit, fromRight: fromRight)
        }
        let scalars = Array(s.unicodeScalars)
        func make(_ r: Range<Int>) -> String { String(String.UnicodeScalarView(scalars[r])) }
        // Whitespace split: no empty strings.
        var ranges: [Range<Int>] = []
        if !fromRight {
            var i = 0
            var splits = 0
            while i < scalars.count {
                while i < scalars.count, PythonFormat.isSpace(scalars[i]) { i += 1 }
                if i >= scalars.count { break }
                if maxSplit >= 0 && splits >= maxSplit {
                    var end = scalars.count
                    while end > i, PythonFormat.isSpace(scalars[end - 1]) { end -= 1 }
                    ranges.append(i..<end)
                    break
                }
                let start = i
                while i < scalars.count, !PythonFormat.isSpace(scalars[i]) { i += 1 }
                ranges.append(start..<i)
                splits += 1
            }
            return ranges.map(make)
        }
        var i = scalars.count
        var splits = 0
        while i > 0 {
            while i > 0, PythonFormat.isSpace(scalars[i - 1]) { i -= 1 }
            if i <= 0 { break }
            if maxSplit >= 0 && splits >= maxSplit {
                var start = 0
                while start < i, PythonFormat.isSpace(scalars[start]) { start += 1 }
                ranges.append(start..<i)
                break
            }
            let end = i
            while i > 0, !PythonFormat.isSpace(scalars[i - 1]) { i -= 1 }
            ranges.append(i..<end)
            splits += 1
        }
        return ranges.reversed().map(make)
    }

    static func isLineBreak(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }

    static func splitlines(_ s: String, keepEnds: Bool) -> [String] {
        let scalars = Array(s.unicodeScalars)
        var lines: [String] = []
        var start = 0, i = 0
        while i < scalars.count {
            if isLineBreak(scalars[i]) {
                var end = i + 1
                if scalars[i] == "\r", i + 1 < scalars.count, scalars[i + 1] == "\n" { end = i + 2 }
                lines.append(String(String.UnicodeScalarView(scalars[start..<(keepEnds ? end : i)])))
                start = end
                i = end
            } else {
                i += 1
            }
        }
        if start < scalars.count { lines.append(String(String.UnicodeScalarView(scalars[start...]))) }
        return lines
    }

    static func replace(_ s: String, _ old: String, _ new: String, count: Int) -> String {
        if old.isEmpty {
            // Python inserts `new` between every character (and at both ends).
            var out = new
            var n = 1
            for c in s.unicodeScalars {
                out.unicodeScalars.append(c)
                if count < 0 || n < count { out += new; n += 1 }
            }
            return out
        }
        let parts = split(s, old, maxSplit: count, fromRight: false)
        return parts.joined(separator: new)
    }

    /// Python's `len(str)`: the code points, counted as the UTF-8 bytes that start one.
    static func scalarCount(_ s: String) -> Int {
        var s = s
        return s.withUTF8 { bytes in
            var n = 0
            for b in bytes where b & 0xC0 != 0x80 { n += 1 }
            return n
        }
    }

    /// Python's `sub in s`: `find` without counting the code points before the match.
    static func contains(_ s: String, _ sub: String) -> Bool {
        if sub.isEmpty { return true }
        var s = s, sub = sub
        return s.withUTF8 { a in sub.withUTF8 { b in byteOffset(of: b, in: a, fromRight: false) != nil } }
    }

    /// Python's `str.find`/`rfind`: the code-point index of `sub` in `s`, or -1. Searches the
    /// UTF-8 bytes (a match of valid UTF-8 starts on a scalar boundary), then counts scalars.
    static func find(_ s: String, _ sub: String, fromRight: Bool) -> Int {
        if sub.isEmpty { return fromRight ? s.unicodeScalars.count : 0 }
        var s = s, sub = sub
        return s.withUTF8 { a in
            sub.withUTF8 { b in
                guard let i = byteOffset(of: b, in: a, fromRight: fromRight) else { return -1 }
                // Code points before the match: bytes that do not continue a scalar.
                var n = 0
                for j in 0..<i where a[j] & 0xC0 != 0x80 { n += 1 }
                return n
            }
        }
    }

    /// The byte offset of the first (or last) occurrence of the non-empty `b` in `a`; nil when
    /// there is none.
    private static func byteOffset(
        of b: UnsafeBufferPointer<UInt8>, in a: UnsafeBufferPointer<UInt8>, fromRight: Bool
    ) -> Int? {
        guard let first = b.first, b.count <= a.count else { return nil }
        let last = a.count - b.count
        var i = fromRight ? last : 0
        while i >= 0 && i <= last {
            if a[i] == first {
                var k = 1
                while k < b.count, a[i + k] == b[k] { k += 1 }
                if k == b.count { return i }
            }
            i += fromRight ? -1 : 1
        }
        return nil
    }

    /// Python's `str.title()`: uppercase after any non-cased character.
    static func pythonTitle(_ s: String) -> String {
        var out = ""
        var previousCased = false
        for c in s {
            if c.isCased {
                out += previousCased ? c.lowercased() : c.uppercased()
                previousCased = true
            } else {
                out.append(c)
                previousCased = false
            }
        }
        return out
    }

    static func capitalize(_ s: String) -> String {
        guard let first = s.first else { return s }
        return first.uppercased() + s.dropFirst().lowercased()
    }
}
