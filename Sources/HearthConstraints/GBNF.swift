/// llama.cpp's GBNF grammar syntax compiled to a `Grammar`, so users' grammars carry over.
///
/// Rules `name ::= alternatives` (names of letters, digits, `-` and `_`); alternatives separated
/// by `|`; sequences of string literals `"…"`, character classes `[…]` / `[^…]` with ranges,
/// `.` (any character), rule references and groups `( … )`; quantifiers `* + ? {m} {m,} {m,n}`;
/// `#` comments to the end of the line. As in llama.cpp, a newline ends a rule except inside a
/// group, after `::=` or after `|` (a line that starts with `|` also continues the rule here).
/// Escapes in literals and classes: `\n \r \t \\ \" \[ \] \- \/ \xHH \uHHHH \UHHHHHHHH`.
/// Characters are Unicode scalars, written as UTF-8. llama.cpp's token references (`<[id]>`,
/// `<token>`) are refused with `.unsupported`. Locations are `line L, column C` (1-based,
/// columns in characters).
package enum GBNF {
    /// The grammar `text` defines, starting at rule `root`.
    /// - Throws: `ConstraintError`: `.syntax` (malformed text), `.invalidGrammar` (an undefined
    ///   or twice-defined rule, a missing start rule, left recursion or a repetition of
    ///   something that may be empty), `.unsupported`, `.tooComplex` (over `budget`: more than
    ///   ``CompileBudget/maxRules`` rules, a reference chain longer than
    ///   ``CompileBudget/maxReferenceDepth``, too many symbols, too long), `.unsatisfiable`.
    package static func grammar(_ text: String, root: String = "root", budget: CompileBudget = .standard) throws -> Grammar {
        var parser = GBNFParser(Array(text.unicodeScalars))
        parser.maxRules = budget.maxRules
        let rules = try parser.parse()
        try checkReferenceChains(rules, parser: parser, limit: budget.maxReferenceDepth)
        var builder = GrammarBuilder(budget: budget)
        var definedAt: [String: Int] = [:]
        for rule in rules {
            if let first = definedAt[rule.name] {
                throw ConstraintError(
                    .invalidGrammar, "rule '\(rule.name)' is defined twice (first at \(parser.position(first)))",
                    at: parser.position(rule.offset))
            }
            definedAt[rule.name] = rule.offset
            try builder.define(rule.name, rule.expression)
        }
        for (name, offset) in parser.references where definedAt[name] == nil {
            throw ConstraintError(.invalidGrammar, "rule '\(name)' is used but not defined", at: parser.position(offset))
        }
        guard definedAt[root] != nil else {
            throw ConstraintError(.invalidGrammar, "the grammar has no rule '\(root)' to start from", at: "line 1, column 1")
        }
        do {
            return try builder.build(root: root)
        } catch var e as ConstraintError {
            // Name the line of a rule the builder complains about.
            // Generated rules are named `<rule>_<n>`.
            var name = Substring(e.location)
            if let underscore = name.lastIndex(of: "_"), name[name.index(after: underscore)...].allSatisfy(\.isASCIIDigit) {
                name = name[..<underscore]
            }
            if let offset = definedAt[e.location] ?? definedAt[String(name)] {
                e.message += " (rule '\(e.location)')"
                e.location = parser.position(offset)
            }
            throw e
        }
    }
}

extension GBNF {
    /// Refuses a grammar whose longest chain of rule references (through distinct rules; a
    /// recursive group counts as its size) is longer than `limit`, naming the rule it starts at.
    static func checkReferenceChains(_ rules: [GBNFParser.Rule], parser: GBNFParser, limit: Int) throws {
        var index: [String: Int] = [:]
        for (i, rule) in rules.enumerated() where index[rule.name] == nil { index[rule.name] = i }
        let edges = rules.map { rule in rule.references.compactMap { index[$0] } }
        let components = StronglyConnected(edges)
        let chains = components.longestChains(edges)
        guard let worst = chains.indices.max(by: { chains[$0] < chains[$1] }), chains[worst] > limit else { return }
        throw ConstraintError(
            .tooComplex,
            "rule '\(rules[worst].name)' starts a chain of \(chains[worst]) rule references; at most \(limit) are allowed "
                + "(the compile budget's reference depth)",
            at: parser.position(rules[worst].offset))
    }
}

struct GBNFParser {
    struct Rule {
        var name: String
        var expression: GrammarExpression
        var offset: Int
        /// The rules its expression refers to, each once.
        var references: [String] = []
    }

    /// The most rules the text may define.
    var maxRules = CompileBudget.standard.maxRules
    /// References of the rule being parsed.
    private var ruleReferences: [String] = []
    private var ruleReferenced = Set<String>()

    let s: [Unicode.Scalar]
    var i = 0
    /// Rule references and where each first appears.
    var references: [(String, Int)] = []
    private var referenced = Set<String>()
    var depth = 0

    init(_ scalars: [Unicode.Scalar]) { s = scalars }

    func peek(_ k: Int = 0) -> Unicode.Scalar? { i + k < s.count ? s[i + k] : nil }

    /// `line L, column C` of a scalar offset.
    func position(_ offset: Int) -> String {
        var line = 1, column = 1
        for c in s[..<min(offset, s.count)] {
            if c == "\n" { line += 1; column = 1 } else { column += 1 }
        }
        return "line \(line), column \(column)"
    }

    func error(_ kind: ConstraintError.Kind, _ message: String, at offset: Int? = nil) -> ConstraintError {
        ConstraintError(kind, message, at: position(offset ?? i))
    }

    static func isNameCharacter(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "-" || c == "_"
    }

    /// Skips blanks and comments; newlines too when `newlines`.
    mutating func skipSpace(newlines: Bool) {
        while let c = peek() {
            if c == " " || c == "\t" || (newlines && (c == "\n" || c == "\r")) {
                i += 1
            } else if c == "#" {
                while let d = peek(), d != "\n" { i += 1 }
            } else {
                break
            }
        }
    }

    mutating func parse() throws -> [Rule] {
        var rules: [Rule] = []
        skipSpace(newlines: true)
        while peek() != nil {
            let start = i
            let name = try self.name()
            skipSpace(newlines: false)
            guard peek() == ":", peek(1) == ":", peek(2) == "=" else { throw error(.syntax, "expected '::=' after the rule name") }
            i += 3
            skipSpace(newlines: true)
            guard rules.count < maxRules else {
                throw error(.tooComplex, "the grammar defines more than \(maxRules) rules (the compile budget)", at: start)
            }
            ruleReferences = []
            ruleReferenced = []
            let e = try alternatives()
            guard peek() == nil || peek() == "\n" || peek() == "\r" else {
                throw error(.syntax, peek() == ")" ? "unmatched ')'" : "unexpected '\(peek().map { String($0) } ?? "")'")
            }
            rules.append(Rule(name: name, expression: e, offset: start, references: ruleReferences))
            skipSpace(newlines: true)
        }
        return rules
    }

    mutating func name() throws -> String {
        let start = i
        while let c = peek(), Self.isNameCharacter(c) { i += 1 }
        guard i > start else {
            throw error(.syntax, peek().map { "expected a rule name, found '\($0)'" } ?? "expected a rule name")
        }
        return String(String.UnicodeScalarView(s[start..<i]))
    }

    mutating func alternatives() throws -> GrammarExpression {
        var options = [try sequence()]
        while true {
            if peek() == "|" {
                i += 1
                skipSpace(newlines: true)
                options.append(try sequence())
                continue
            }
            // A top-level newline ends the rule, unless the next line goes on with '|'.
            if depth == 0, peek() == "\n" || peek() == "\r" {
                let save = i
                skipSpace(newlines: true)
                if peek() == "|" { continue }
                i = save
            }
            break
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    mutating func sequence() throws -> GrammarExpression {
        var items: [GrammarExpression] = []
        while let c = peek(), c != "|", c != ")", c != "\n", c != "\r" {
            var item = try primary()
            skipSpace(newlines: depth > 0)
            if let (min, max) = try quantifier() {
                // A repeated group that may be empty is rewritten to one that is not; a repeated
                // rule that may be empty is left to the build, which refuses it (left recursion).
                item = .safeRepeat(item, min: min, max: max)
                skipSpace(newlines: depth > 0)
            }
            items.append(item)
        }
        return items.count == 1 ? items[0] : .sequence(items)
    }

    mutating func quantifier() throws -> (Int, Int?)? {
        guard let c = peek() else { return nil }
        switch c {
        case "*": i += 1; return (0, nil)
        case "+": i += 1; return (1, nil)
        case "?": i += 1; return (0, 1)
        case "{":
            let start = i
            i += 1
            skipSpace(newlines: false)
            guard let min = try number() else { throw error(.syntax, "expected a number after '{'", at: start) }
            skipSpace(newlines: false)
            var max: Int? = min
            if peek() == "," {
                i += 1
                skipSpace(newlines: false)
                max = try number()
                skipSpace(newlines: false)
            }
            guard peek() == "}" else { throw error(.syntax, "expected '}' to close the repetition", at: start) }
            i += 1
            if let max, max < min { throw error(.syntax, "repetition {\(min),\(max)}: the minimum exceeds the maximum", at: start) }
            return (min, max)
        default:
            return nil
        }
    }

    mutating func number() throws -> Int? {
        let start = i
        var value = 0
        while let c = peek(), let d = decimalValue(c) {
            value = value * 10 + d
            i += 1
            if value > GrammarBuilder.maxRepeat {
                throw error(.tooComplex, "repetition counts above \(GrammarBuilder.maxRepeat) are not supported", at: start)
            }
        }
        return i > start ? value : nil
    }

    mutating func primary() throws -> GrammarExpression {
        let start = i
        guard let c = peek() else { throw error(.syntax, "unexpected end of grammar") }
        switch c {
        case "\"":
            i += 1
            var bytes: [UInt8] = []
            while true {
                guard let d = peek(), d != "\n" else { throw error(.syntax, "unterminated string literal", at: start) }
                if d == "\"" { i += 1; break }
                let v = try character()
                bytes += UTF8Split.encode(v)
            }
            return .byteString(bytes)
        case "[":
            i += 1
            var negated = false
            if peek() == "^" { negated = true; i += 1 }
            var set = ScalarSet()
            while true {
                guard let d = peek(), d != "\n" else { throw error(.syntax, "unterminated character class", at: start) }
                if d == "]" { i += 1; break }
                let lo = try character()
                if peek() == "-", let next = peek(1), next != "]", next != "\n" {
                    let dash = i
                    i += 1
                    let hi = try character()
                    guard lo <= hi else { throw error(.syntax, "range out of order in the character class", at: dash) }
                    set = set.union(ScalarSet([lo...hi]))
                } else {
                    set = set.union(ScalarSet([lo...lo]))
                }
            }
            return .characters(negated ? set.inverted : set)
        case ".":
            i += 1
            return .anyCharacter
        case "(":
            i += 1
            depth += 1
            guard depth <= 200 else { throw error(.tooComplex, "groups nested more than 200 deep", at: start) }
            skipSpace(newlines: true)
            let inner = try alternatives()
            skipSpace(newlines: true)
            guard peek() == ")" else { throw error(.syntax, "expected ')' to close the group", at: start) }
            i += 1
            depth -= 1
            return inner
        case "<":
            throw error(.unsupported, "token references (<…>) are not supported; write the text instead", at: start)
        default:
            guard Self.isNameCharacter(c) else { throw error(.syntax, "unexpected '\(c)'", at: start) }
            let name = try self.name()
            // A name followed by '::=' here means the previous rule was not ended by a newline.
            let save = i
            skipSpace(newlines: false)
            if peek() == ":", peek(1) == ":" { throw error(.syntax, "a new rule must start on a new line", at: start) }
            i = save
            if referenced.insert(name).inserted { references.append((name, start)) }
            if ruleReferenced.insert(name).inserted { ruleReferences.append(name) }
            return .reference(name)
        }
    }

    /// One character of a literal or class: plain or escaped.
    mutating func character() throws -> UInt32 {
        let start = i
        guard let c = peek() else { throw error(.syntax, "unexpected end of grammar") }
        i += 1
        guard c == "\\" else { return c.value }
        guard let e = peek() else { throw error(.syntax, "'\\' at the end of the grammar", at: start) }
        i += 1
        switch e {
        case "n": return 0x0A
        case "r": return 0x0D
        case "t": return 0x09
        case "\\", "\"", "[", "]", "-", "/": return e.value
        case "x": return try hex(2, start)
        case "u": return try hex(4, start)
        case "U": return try hex(8, start)
        default: throw error(.syntax, "unknown escape '\\\(e)'", at: start)
        }
    }

    mutating func hex(_ count: Int, _ start: Int) throws -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<count {
            guard let h = peek(), let d = hexValue(h) else { throw error(.syntax, "expected \(count) hexadecimal digits", at: start) }
            v = v &* 16 &+ UInt32(d)
            i += 1
        }
        guard v <= ScalarSet.maxScalar, !(0xD800...0xDFFF).contains(v) else {
            throw error(.syntax, "escape is not a Unicode scalar value", at: start)
        }
        return v
    }
}
