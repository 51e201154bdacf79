/// Regular expressions (an ECMAScript subset) compiled to grammars.
///
/// Supported: literals; escapes `\d \w \s \D \W \S \n \t \r \f \v \0 \cX \xHH \uHHHH \u{…}` and
/// escaped punctuation; `.` (any character but `\n`, `\r`, U+2028, U+2029); classes `[…]`,
/// `[^…]` with ranges and escapes; groups `(…)`, `(?:…)`; alternation; quantifiers
/// `* + ? {m} {m,} {m,n}` (a lazy `?` suffix is accepted: it selects among matches but does
/// not change which strings match); `^` at the start and `$` at the end of a top-level
/// alternative. Refused with `.unsupported`: backreferences, lookaround, named groups, word
/// boundaries, Unicode property escapes, anchors elsewhere. Locations are `offset N`, counted
/// in Unicode scalars of the pattern.
package enum RegularExpression {
    /// The largest expression (symbols with repetitions multiplied out) a pattern may compile to.
    package static let maxSize = 200_000

    /// A grammar whose language is the strings the whole of which `pattern` matches (anchors
    /// are implied; writing `^…$` is allowed and changes nothing).
    /// - Throws: `ConstraintError` `.syntax`, `.unsupported`, `.tooComplex` (with `offset N`),
    ///   or `.unsatisfiable` when nothing matches (`[^\s\S]`).
    package static func grammar(_ pattern: String, budget: CompileBudget = .standard) throws -> Grammar {
        let e = try expression(pattern, encoding: .utf8, search: false)
        var builder = GrammarBuilder(budget: budget)
        try builder.define("root", e)
        return try builder.build(root: "root")
    }

    /// The expression for `pattern`. With `search`, a top-level alternative without `^` may be
    /// preceded by any text and one without `$` followed by any (JSON Schema's `pattern`
    /// matches anywhere in the string); without it the whole text must match.
    static func expression(_ pattern: String, encoding: CharacterEncoding, search: Bool) throws -> GrammarExpression {
        var parser = RegexParser(Array(pattern.unicodeScalars))
        let tree = try parser.parse()
        var result: [GrammarExpression] = []
        for branch in tree.anchoredBranches {
            var parts: [GrammarExpression] = []
            if search && !branch.anchoredStart { parts.append(.zeroOrMore(encoding.anyCharacter)) }
            for item in branch.items { parts.append(try lower(item, encoding)) }
            if search && !branch.anchoredEnd { parts.append(.zeroOrMore(encoding.anyCharacter)) }
            result.append(parts.count == 1 ? parts[0] : .sequence(parts))
        }
        let e = result.count == 1 ? result[0] : .choice(result)
        guard e.estimatedSize <= maxSize else {
            throw ConstraintError(
                .tooComplex, "the pattern expands to more than \(maxSize) symbols; use smaller repetition counts",
                at: "offset 0")
        }
        return e
    }

    private static func lower(_ node: RegexNode, _ encoding: CharacterEncoding) throws -> GrammarExpression {
        switch node {
        case .characters(let set): return encoding.expression(set)
        case .sequence(let items): return .sequence(try items.map { try lower($0, encoding) })
        case .alternation(let options): return .choice(try options.map { try lower($0, encoding) })
        case .repeating(let body, let min, let max): return .safeRepeat(try lower(body, encoding), min: min, max: max)
        case .anchor(let start, let offset): throw RegexNode.strayAnchor(start: start, offset: offset)
        }
    }
}

/// How characters are written in the output: as UTF-8, or inside a JSON string literal (where
/// `"`, `\` and control characters must be escaped; the escapes written are the canonical ones,
/// `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, else `\u00xx`, as Python's `json.dumps` writes them).
enum CharacterEncoding {
    case utf8
    case jsonString

    static let jsonSpecials = ScalarSet([0x00...0x1F, 0x22...0x22, 0x5C...0x5C])

    /// Any one character in this encoding.
    var anyCharacter: GrammarExpression {
        switch self {
        case .utf8: return .anyCharacter
        case .jsonString: return .reference(JSONRules.char)
        }
    }

    func expression(_ set: ScalarSet) -> GrammarExpression {
        switch self {
        case .utf8:
            return set.expression
        case .jsonString:
            let raw = set.subtracting(Self.jsonSpecials)
            var options: [GrammarExpression] = raw.isEmpty ? [] : [raw.expression]
            for r in set.intersection(Self.jsonSpecials).ranges {
                for v in r { options.append(.literal(Self.jsonEscape(v))) }
            }
            return options.count == 1 ? options[0] : .choice(options)
        }
    }

    /// The canonical escape of a special scalar (quote, backslash, control).
    static func jsonEscape(_ v: UInt32) -> String {
        switch v {
        case 0x22: return "\\\""
        case 0x5C: return "\\\\"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        case 0x08: return "\\b"
        case 0x0C: return "\\f"
        default:
            let hex = String(v, radix: 16)
            return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
    }
}

/// A parsed pattern.
indirect enum RegexNode {
    case characters(ScalarSet)
    case sequence([RegexNode])
    case alternation([RegexNode])
    case repeating(RegexNode, min: Int, max: Int?)
    /// `^` (start: true) or `$`, with its offset in the pattern.
    case anchor(Bool, Int)
}

/// Recursive-descent parser for the ECMAScript pattern subset.
struct RegexParser {
    let s: [Unicode.Scalar]
    var i = 0
    var depth = 0

    init(_ scalars: [Unicode.Scalar]) { s = scalars }

    static let digits = ScalarSet([0x30...0x39])
    static let word = ScalarSet([0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A])
    static let space = ScalarSet([
        0x09...0x0D, 0x20...0x20, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A,
        0x2028...0x2029, 0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF,
    ])
    static let dot = ScalarSet([0x0A...0x0A, 0x0D...0x0D, 0x2028...0x2029]).inverted

    var atEnd: Bool { i >= s.count }
    func peek(_ k: Int = 0) -> Unicode.Scalar? { i + k < s.count ? s[i + k] : nil }

    func error(_ kind: ConstraintError.Kind, _ message: String, at offset: Int? = nil) -> ConstraintError {
        ConstraintError(kind, message, at: "offset \(offset ?? i)")
    }

    mutating func parse() throws -> RegexNode {
        let node = try alternation()
        if !atEnd { throw error(.syntax, "unmatched ')'") }
        return node
    }

    mutating func alternation() throws -> RegexNode {
        var options = [try sequence()]
        while peek() == "|" {
            i += 1
            options.append(try sequence())
        }
        return options.count == 1 ? options[0] : .alternation(options)
    }

    mutating func sequence() throws -> RegexNode {
        var items: [RegexNode] = []
        while let c = peek(), c != "|", c != ")" {
            let start = i
            var atom = try self.atom()
            var quantified = false
            while let q = try quantifier() {
                if case .anchor = atom { throw error(.syntax, "nothing to repeat", at: start) }
                // `a**` is a syntax error in ECMAScript; `(?:a*)*` is how to write it.
                if quantified { throw error(.syntax, "nothing to repeat (a quantifier follows a quantifier)", at: start) }
                quantified = true
                atom = .repeating(atom, min: q.min, max: q.max)
            }
            items.append(atom)
        }
        return items.count == 1 ? items[0] : .sequence(items)
    }

    /// A quantifier at the cursor, if any (consumed with its lazy `?`).
    mutating func quantifier() throws -> (min: Int, max: Int?)? {
        guard let c = peek() else { return nil }
        let start = i
        var result: (min: Int, max: Int?)
        switch c {
        case "*": i += 1; result = (0, nil)
        case "+": i += 1; result = (1, nil)
        case "?": i += 1; result = (0, 1)
        case "{":
            guard let braced = try bracedQuantifier() else { return nil }
            result = braced
        default: return nil
        }
        if let max = result.max, max < result.min {
            throw error(.syntax, "numbers out of order in {} quantifier", at: start)
        }
        if peek() == "?" { i += 1 }  // lazy: the same set of strings
        return result
    }

    /// `{m}`, `{m,}`, `{m,n}` at the cursor; nil (cursor unmoved) when `{` is a literal brace.
    mutating func bracedQuantifier() throws -> (min: Int, max: Int?)? {
        let start = i
        var j = i + 1
        func number() throws -> Int? {
            var value = 0, any = false
            while j < s.count, let d = decimalValue(s[j]) {
                value = value * 10 + d
                any = true
                j += 1
                if value > GrammarBuilder.maxRepeat {
                    throw error(.tooComplex, "repetition counts above \(GrammarBuilder.maxRepeat) are not supported", at: start)
                }
            }
            return any ? value : nil
        }
        guard let min = try number() else { return nil }
        var max: Int? = min
        if j < s.count, s[j] == "," {
            j += 1
            max = try number()
        }
        guard j < s.count, s[j] == "}" else { return nil }
        i = j + 1
        return (min, max)
    }

    mutating func atom() throws -> RegexNode {
        let start = i
        guard let c = peek() else { throw error(.syntax, "unexpected end of pattern") }
        i += 1
        switch c {
        case "(":
            depth += 1
            guard depth <= 200 else { throw error(.tooComplex, "groups nested more than 200 deep", at: start) }
            defer { depth -= 1 }
            if peek() == "?" {
                if peek(1) == ":" {
                    i += 2
                } else if peek(1) == "=" || peek(1) == "!" || (peek(1) == "<" && (peek(2) == "=" || peek(2) == "!")) {
                    throw error(.unsupported, "lookaround assertions are not supported", at: start)
                } else if peek(1) == "<" {
                    throw error(.unsupported, "named groups are not supported; use (?:…) or (…)", at: start)
                } else {
                    throw error(.syntax, "invalid group", at: start)
                }
            }
            let inner = try alternation()
            guard peek() == ")" else { throw error(.syntax, "missing ')' for the group", at: start) }
            i += 1
            return inner
        case ")":
            throw error(.syntax, "unmatched ')'", at: start)
        case "[":
            return .characters(try characterClass(start: start))
        case ".":
            return .characters(Self.dot)
        case "^":
            return .anchor(true, start)
        case "$":
            return .anchor(false, start)
        case "*", "+", "?":
            throw error(.syntax, "nothing to repeat", at: start)
        case "{":
            i = start
            if try bracedQuantifier() != nil { throw error(.syntax, "nothing to repeat", at: start) }
            i = start + 1
            return .characters(ScalarSet(scalars: [c]))
        case "\\":
            switch try escape(inClass: false) {
            case .set(let set): return .characters(set)
            case .scalar(let v): return .characters(ScalarSet([v...v]))
            }
        default:
            return .characters(ScalarSet(scalars: [c]))
        }
    }

    enum Escaped { case scalar(UInt32), set(ScalarSet) }

    /// The escape after a backslash (the cursor is past the backslash).
    mutating func escape(inClass: Bool) throws -> Escaped {
        let start = i - 1
        guard let c = peek() else { throw error(.syntax, "'\\' at the end of the pattern", at: start) }
        i += 1
        switch c {
        case "d": return .set(Self.digits)
        case "D": return .set(Self.digits.inverted)
        case "w": return .set(Self.word)
        case "W": return .set(Self.word.inverted)
        case "s": return .set(Self.space)
        case "S": return .set(Self.space.inverted)
        case "n": return .scalar(0x0A)
        case "t": return .scalar(0x09)
        case "r": return .scalar(0x0D)
        case "f": return .scalar(0x0C)
        case "v": return .scalar(0x0B)
        case "b":
            if inClass { return .scalar(0x08) }
            throw error(.unsupported, "word boundaries (\\b) are not supported", at: start)
        case "B": throw error(.unsupported, "word boundaries (\\B) are not supported", at: start)
        case "0":
            if let d = peek(), ("0"..."9").contains(d) {
                throw error(.unsupported, "octal escapes are not supported; use \\xHH", at: start)
            }
            return .scalar(0)
        case "1"..."9":
            throw error(.unsupported, "backreferences are not supported", at: start)
        case "k":
            throw error(.unsupported, "named backreferences are not supported", at: start)
        case "p", "P":
            throw error(.unsupported, "Unicode property escapes are not supported", at: start)
        case "c":
            guard let l = peek(), l.isASCII, l.properties.isAlphabetic else {
                throw error(.syntax, "\\c must be followed by a letter", at: start)
            }
            i += 1
            return .scalar(l.value % 32)
        case "x":
            return .scalar(try hex(count: 2, start: start))
        case "u":
            if peek() == "{" {
                i += 1
                var value: UInt32 = 0, n = 0
                while let h = peek(), let d = hexValue(h) {
                    value = value * 16 + UInt32(d)
                    n += 1
                    i += 1
                    if value > 0x10FFFF { throw error(.syntax, "\\u{…} beyond U+10FFFF", at: start) }
                }
                guard n > 0, peek() == "}" else { throw error(.syntax, "malformed \\u{…} escape", at: start) }
                i += 1
                return .scalar(value)
            }
            return .scalar(try hex(count: 4, start: start))
        default:
            if c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c)) {
                throw error(.syntax, "unknown escape '\\\(c)'", at: start)
            }
            return .scalar(c.value)  // escaped punctuation (or any other non-alphanumeric)
        }
    }

    mutating func hex(count: Int, start: Int) throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard let h = peek(), let d = hexValue(h) else {
                throw error(.syntax, "expected \(count) hexadecimal digits", at: start)
            }
            value = value * 16 + UInt32(d)
            i += 1
        }
        return value
    }

    /// `[…]` after the `[` (at `start`).
    mutating func characterClass(start: Int) throws -> ScalarSet {
        var negated = false
        if peek() == "^" { negated = true; i += 1 }
        var set = ScalarSet()
        while true {
            guard let c = peek() else { throw error(.syntax, "missing ']' for the class", at: start) }
            if c == "]" { i += 1; break }
            let first = try classAtom()
            // A range `a-z` (a '-' before ']' or after/before a class escape is a literal '-').
            if peek() == "-", let next = peek(1), next != "]" {
                let dash = i
                i += 1
                let second = try classAtom()
                switch (first, second) {
                case (.scalar(let lo), .scalar(let hi)):
                    guard lo <= hi else { throw error(.syntax, "range out of order in the class", at: dash) }
                    set = set.union(ScalarSet([lo...hi]))
                case (.set(let a), .scalar(let b)):
                    set = set.union(a).union(ScalarSet([b...b, 0x2D...0x2D]))
                case (.scalar(let a), .set(let b)):
                    set = set.union(b).union(ScalarSet([a...a, 0x2D...0x2D]))
                case (.set(let a), .set(let b)):
                    set = set.union(a).union(b).union(ScalarSet([0x2D...0x2D]))
                }
                continue
            }
            switch first {
            case .scalar(let v): set = set.union(ScalarSet([v...v]))
            case .set(let s): set = set.union(s)
            }
        }
        return negated ? set.inverted : set
    }

    mutating func classAtom() throws -> Escaped {
        guard let c = peek() else { throw error(.syntax, "missing ']' for the class") }
        i += 1
        if c == "\\" {
            if peek() == "-" { i += 1; return .scalar(0x2D) }
            return try escape(inClass: true)
        }
        return .scalar(c.value)
    }
}

func decimalValue(_ c: Unicode.Scalar) -> Int? {
    ("0"..."9").contains(c) ? Int(c.value - 0x30) : nil
}

func hexValue(_ c: Unicode.Scalar) -> Int? {
    switch c {
    case "0"..."9": return Int(c.value - 0x30)
    case "a"..."f": return Int(c.value - 0x61 + 10)
    case "A"..."F": return Int(c.value - 0x41 + 10)
    default: return nil
    }
}
