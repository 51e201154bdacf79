import HearthJSON

/// JSON Schema (draft 2020-12 keywords, plus draft-07's `definitions`) compiled to grammars.
///
/// The output is JSON: compact, with whitespace allowed between tokens (at most
/// `JSONRules.maxWhitespace` bytes in a row, none before or after the root value); object
/// members in the schema's property order. Every keyword that constrains is enforced or refused
/// with `.unsupported` at its JSON pointer; none is dropped. docs/STRUCTURED-frontends.md lists
/// what is supported and the choices made where the grammar accepts a subset of the valid
/// documents (no undeclared properties unless `additionalProperties` allows them, bounded
/// digits, canonical escapes in constant strings).
package enum JSONSchema {
    /// A grammar whose outputs are JSON documents valid against the schema in `schemaJSON`.
    /// - Throws: `ConstraintError`: `.syntax` (the text is not JSON, or a keyword's value has
    ///   the wrong form), `.unsupported` (a keyword or combination that is not enforced),
    ///   `.unsatisfiable` (no document is valid), `.invalidGrammar` (an unresolvable or
    ///   left-recursive `$ref`), `.tooComplex`; the location is a JSON pointer into the schema.
    package static func grammar(_ schemaJSON: String, budget: CompileBudget = .standard) throws -> Grammar {
        let document = try JSON.schemaDocument(schemaJSON)
        var compiler = try SchemaCompiler(document: document, budget: budget)
        let root = try compiler.compile(document, path: "")
        try compiler.builder.define("root", root)
        return try compiler.build()
    }

    /// One grammar over several schemas: each schema in `schemas` is compiled to an
    /// expression for its documents, and `root` arranges them (with literals around them, for
    /// instance a tool call's name before its arguments) into the root rule.
    /// - Throws: `ConstraintError` as ``grammar(_:)`` does, for the first schema at fault
    ///   (``ConstraintError/schemaIndex`` says which), or what `root` throws.
    package static func grammar(
        schemas: [String], budget: CompileBudget = .standard, root: ([GrammarExpression]) throws -> GrammarExpression
    ) throws -> Grammar {
        var compiler = try SchemaCompiler(document: .null, budget: budget)
        var values: [GrammarExpression] = []
        for (i, schema) in schemas.enumerated() {
            do {
                compiler.document = try JSON.schemaDocument(schema)
                compiler.refRules = [:]
                compiler.refPrefix = "\(i)"
                compiler.schemaIndex = i
                values.append(try compiler.compile(compiler.document, path: ""))
            } catch var error as ConstraintError {
                error.schemaIndex = i
                throw error
            }
        }
        try compiler.builder.define("root", try root(values))
        return try compiler.build()
    }

    /// Any JSON object (`response_format: {"type": "json_object"}`); the root rule derives
    /// the shared `json_object` rule.
    package static var anyJSONObject: Grammar {
        get throws { try anyObjectGrammar.get() }
    }

    /// Any JSON value.
    package static var anyJSONValue: Grammar {
        get throws { try anyValueGrammar.get() }
    }

    private static let anyObjectGrammar = shared(JSONRules.object)
    private static let anyValueGrammar = shared(JSONRules.value)

    private static func shared(_ rule: String) -> Result<Grammar, ConstraintError> {
        do {
            var builder = GrammarBuilder()
            try JSONRules.define(in: &builder)
            try builder.define("root", .reference(rule))
            return .success(try builder.build(root: "root"))
        } catch let e as ConstraintError {
            return .failure(e)
        } catch {
            return .failure(ConstraintError(.invalidGrammar, "\(error)"))
        }
    }
}

/// One schema document → expressions and rules.
struct SchemaCompiler {
    var document: JSON
    var builder = GrammarBuilder()
    /// `$ref` pointer → its rule.
    var refRules: [String: String] = [:]
    /// Put into `$ref` rule names, so several documents' refs can share one builder.
    var refPrefix = ""
    var counter = 0
    var depth = 0
    /// Schemas compiled so far, and the largest that holds no other (for the error that names
    /// the part of a schema over the compile budget).
    var compiledCount = 0
    var largestLeaf: (path: String, size: Int, schema: Int?) = ("", 0, nil)
    /// Every schema compiled that holds no other, with its estimated size, in order.
    var leaves: [(path: String, size: Int)] = []
    /// Which of several schemas is being compiled.
    var schemaIndex: Int?

    /// Keywords that only annotate (ignored).
    static let annotations: Set<String> = [
        "title", "description", "examples", "default", "$schema", "$id", "$comment", "deprecated",
        "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "$defs", "definitions",
    ]
    static let stringKeywords: Set<String> = ["minLength", "maxLength", "pattern", "format"]
    static let numberKeywords: Set<String> = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]
    static let objectKeywords: Set<String> = ["properties", "required", "additionalProperties"]
    static let arrayKeywords: Set<String> = ["items", "prefixItems", "minItems", "maxItems", "uniqueItems"]
    static let otherKeywords: Set<String> = ["type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"]
    static let typeNames = ["null", "boolean", "object", "array", "string", "number", "integer"]

    static var handled: Set<String> { stringKeywords.union(numberKeywords).union(objectKeywords).union(arrayKeywords).union(otherKeywords) }

    init(document: JSON, budget: CompileBudget = .standard) throws {
        self.document = document
        builder = GrammarBuilder(budget: budget)
        try JSONRules.define(in: &builder)
    }

    /// The builder's grammar from "root"; a grammar over the symbol budget is refused at the
    /// largest single part of the schema(s), so the client knows what to shrink.
    func build() throws -> Grammar {
        do {
            return try builder.build(root: "root")
        } catch var error as ConstraintError where error.kind == .tooComplex && error.message.hasPrefix("the grammar is larger than")
            && largestLeaf.size > 0
        {
            error.message += "; its largest part lowers to about \(largestLeaf.size) symbols"
            error.location = largestLeaf.path
            error.schemaIndex = largestLeaf.schema
            throw error
        }
    }

    static let ws = GrammarExpression.reference(JSONRules.ws)
    static let comma = GrammarExpression.sequence([ws, .literal(","), ws])

    mutating func fresh(_ what: String) -> String {
        counter += 1
        return "\(what)\(counter)"
    }

    // MARK: Dispatch

    /// `schema` (at `path`) as an expression; a part that alone lowers to more symbols than
    /// the budget allows is refused at its path before anything is built.
    mutating func compile(_ schema: JSON, path: String) throws -> GrammarExpression {
        let before = compiledCount
        let leavesBefore = leaves.count
        let expression = try compileSchema(schema, path: path)
        compiledCount += 1
        // The parts inside were checked first, so the innermost part over the budget is named;
        // when it holds others, the largest of them is where to shrink it.
        let size = expression.estimatedSize
        let limit = builder.budget.maxSymbols
        if size > limit {
            let largest = leaves[leavesBefore...].max { $0.size < $1.size }
            var message = "this part of the schema lowers to about \(size) symbols; the compile budget allows \(limit)"
            if let largest, largest.path != path {
                message = "the schema at '\(path)' lowers to about \(size) symbols (the compile budget allows \(limit)); "
                    + "its largest part, here, lowers to about \(largest.size)"
            }
            throw ConstraintError(.tooComplex, message, at: largest?.path ?? path)
        }
        if compiledCount == before + 1 {  // holds no other schema
            leaves.append((path, size))
            if size > largestLeaf.size { largestLeaf = (path, size, schemaIndex) }
        }
        return expression
    }

    private mutating func compileSchema(_ schema: JSON, path: String) throws -> GrammarExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth < 200 else { throw ConstraintError(.tooComplex, "schemas nested more than 200 deep", at: path) }
        switch schema {
        case .bool(true): return .reference(JSONRules.value)
        case .bool(false): return .choice([])
        case .object: break
        default: throw ConstraintError(.syntax, "a schema must be an object or a boolean", at: path)
        }
        let members = schema.objectMembers ?? []
        for m in members where !Self.annotations.contains(m.key) && !Self.handled.contains(m.key) {
            throw ConstraintError(.unsupported, "keyword '\(m.key)' is not supported (it would not be enforced)", at: path + "/" + pointerEscape(m.key))
        }
        if let unique = schema["uniqueItems"], unique != .bool(false) {
            throw ConstraintError(.unsupported, "uniqueItems: true is not supported", at: path + "/uniqueItems")
        }
        let constraining = members.filter { !Self.annotations.contains($0.key) }

        if let ref = schema["$ref"] {
            if let other = constraining.first(where: { $0.key != "$ref" }) {
                throw ConstraintError(.unsupported, "keywords beside $ref are not supported; wrap them in allOf", at: path + "/" + pointerEscape(other.key))
            }
            return try reference(ref, path: path + "/$ref")
        }
        if schema["allOf"] != nil {
            let merged = try mergeAllOf(schema, path: path)
            return try compile(merged, path: path)
        }
        if schema["anyOf"] != nil || schema["oneOf"] != nil {
            return try combinator(schema, members: members, path: path)
        }
        return try typed(schema, constraining: constraining, path: path)
    }

    /// `anyOf` / `oneOf`: a choice of the branches, each merged with the sibling keywords.
    mutating func combinator(_ schema: JSON, members: [JSON.Member], path: String) throws -> GrammarExpression {
        if schema["anyOf"] != nil && schema["oneOf"] != nil {
            throw ConstraintError(.unsupported, "anyOf together with oneOf is not supported", at: path + "/oneOf")
        }
        let key = schema["anyOf"] != nil ? "anyOf" : "oneOf"
        guard case .array(let branches)? = schema[key], !branches.isEmpty else {
            throw ConstraintError(.syntax, "\(key) must be a non-empty array of schemas", at: path + "/" + key)
        }
        let siblings = members.filter { $0.key != key && !Self.annotations.contains($0.key) }
        if key == "oneOf" { try checkDisjoint(branches, path: path + "/oneOf") }
        var options: [GrammarExpression] = []
        for (i, branch) in branches.enumerated() {
            let branchPath = path + "/\(key)/\(i)"
            if siblings.isEmpty {
                options.append(try compile(branch, path: branchPath))
            } else {
                let merged = try merge([.object(siblings), branch], paths: [path, branchPath])
                options.append(try compile(merged, path: branchPath))
            }
        }
        return .choice(options)
    }

    /// Keywords by type, `enum` and `const`.
    mutating func typed(_ schema: JSON, constraining: [JSON.Member], path: String) throws -> GrammarExpression {
        var types: [String]
        if let t = schema["type"] {
            switch t {
            case .string(let name): types = [name]
            case .array(let names) where !names.isEmpty: types = try names.map {
                guard let s = $0.stringValue else { throw ConstraintError(.syntax, "type names are strings", at: path + "/type") }
                return s
            }
            default: throw ConstraintError(.syntax, "type must be a type name or a non-empty array of them", at: path + "/type")
            }
            for name in types where !Self.typeNames.contains(name) {
                throw ConstraintError(.syntax, "unknown type '\(name)'", at: path + "/type")
            }
        } else {
            // No type: the types whose keywords appear (the grammar writes only those; any other
            // type would be valid too, so this is a subset), else any value.
            let keys = Set(constraining.map(\.key))
            types = []
            if !keys.isDisjoint(with: Self.objectKeywords) { types.append("object") }
            if !keys.isDisjoint(with: Self.arrayKeywords.subtracting(["uniqueItems"])) { types.append("array") }
            if !keys.isDisjoint(with: Self.stringKeywords) { types.append("string") }
            if !keys.isDisjoint(with: Self.numberKeywords) { types.append("number") }
            if types.isEmpty && schema["enum"] == nil && schema["const"] == nil { return .reference(JSONRules.value) }
            if types.isEmpty { types = ["null", "boolean", "object", "array", "string", "number"] }
        }
        if types.contains("number") { types.removeAll { $0 == "integer" } }

        if schema["enum"] != nil || schema["const"] != nil {
            return try constants(schema, types: types, constraining: constraining, path: path)
        }
        var options: [GrammarExpression] = []
        for type in types {
            switch type {
            case "null": options.append(.literal("null"))
            case "boolean": options.append(.choice([.literal("true"), .literal("false")]))
            case "string": options.append(try string(schema, path: path))
            case "integer": options.append(try number(schema, integer: true, path: path))
            case "number": options.append(try number(schema, integer: false, path: path))
            case "object": options.append(try object(schema, path: path))
            default: options.append(try array(schema, path: path))
            }
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// `enum` / `const`: the values (of the allowed types), each written compactly.
    func constants(_ schema: JSON, types: [String], constraining: [JSON.Member], path: String) throws -> GrammarExpression {
        if let other = constraining.first(where: { !["type", "enum", "const"].contains($0.key) }) {
            throw ConstraintError(
                .unsupported, "'\(other.key)' together with enum/const is not supported; list only values that meet it",
                at: path + "/" + pointerEscape(other.key))
        }
        var values: [JSON]
        var where_ = path + "/enum"
        if let e = schema["enum"] {
            guard case .array(let list) = e else { throw ConstraintError(.syntax, "enum must be an array", at: path + "/enum") }
            values = list
        } else {
            values = []
        }
        if let c = schema["const"] {
            where_ = path + "/const"
            values = schema["enum"] == nil ? [c] : values.filter { sameValue($0, c) }
        }
        values = values.filter { v in
            let t = v.schemaTypeName
            return types.contains(t) || (t == "integer" && types.contains("number"))
        }
        guard !values.isEmpty else {
            throw ConstraintError(.unsatisfiable, "no value of enum/const is allowed (empty, or none of the schema's type)", at: where_)
        }
        var seen = Set<String>()
        let texts = values.map(\.serialized).filter { seen.insert($0).inserted }
        let options = texts.map { GrammarExpression.literal($0) }
        return options.count == 1 ? options[0] : .choice(options)
    }

    // MARK: Strings

    mutating func string(_ schema: JSON, path: String) throws -> GrammarExpression {
        let minLength = try count(schema, "minLength", path: path)
        let maxLength = try count(schema, "maxLength", path: path)
        let quote = GrammarExpression.literal("\"")
        if let format = schema["format"] {
            guard let name = format.stringValue else { throw ConstraintError(.syntax, "format must be a string", at: path + "/format") }
            if let pattern = schema["pattern"] {
                guard let text = pattern.stringValue else { throw ConstraintError(.syntax, "pattern must be a string", at: path + "/pattern") }
                guard let formatPattern = StringFormats.pattern(name) else {
                    throw ConstraintError(
                        .unsupported, "format '\(name)' is not supported (supported: \(StringFormats.names.joined(separator: ", ")))",
                        at: path + "/format")
                }
                // The strings both match (the two automata's product, times a counter when bounded).
                let body = try RegularExpression.intersected(
                    format: formatPattern, pattern: text, minLength: minLength ?? 0, maxLength: maxLength, builder: &builder, path: path)
                return .sequence([quote, body, quote])
            }
            if minLength != nil || maxLength != nil, let formatPattern = StringFormats.pattern(name) {
                // The format's strings of the allowed lengths (its automaton times a counter).
                let body = try RegularExpression.bounded(
                    formatPattern, search: false, minLength: minLength ?? 0, maxLength: maxLength, builder: &builder, path: path)
                return .sequence([quote, body, quote])
            }
            return .sequence([quote, try StringFormats.expression(name, builder: &builder, path: path + "/format"), quote])
        }
        if let pattern = schema["pattern"] {
            guard let text = pattern.stringValue else { throw ConstraintError(.syntax, "pattern must be a string", at: path + "/pattern") }
            do {
                if minLength != nil || maxLength != nil {
                    // The pattern's matches of the allowed lengths (its automaton times a counter).
                    let body = try RegularExpression.bounded(
                        text, search: true, minLength: minLength ?? 0, maxLength: maxLength, builder: &builder, path: path)
                    return .sequence([quote, body, quote])
                }
                return .sequence([quote, try RegularExpression.expression(text, encoding: .jsonString, search: true), quote])
            } catch let e as ConstraintError {
                throw ConstraintError(e.kind, "pattern: \(e.message) (\(e.location))", at: path + "/pattern")
            }
        }
        if minLength == nil && maxLength == nil { return .reference(JSONRules.string) }
        let lo = minLength ?? 0
        if let maxLength, maxLength < lo {
            throw ConstraintError(.unsatisfiable, "maxLength \(maxLength) is below minLength \(lo)", at: path + "/maxLength")
        }
        if max(lo, maxLength ?? 0) > GrammarBuilder.maxRepeat {
            throw ConstraintError(
                .tooComplex, "string lengths above \(GrammarBuilder.maxRepeat) are not supported",
                at: path + (maxLength ?? 0 > GrammarBuilder.maxRepeat ? "/maxLength" : "/minLength"))
        }
        return .sequence([quote, .repeating(.reference(JSONRules.char), min: lo, max: maxLength), quote])
    }

    /// A non-negative integer keyword (`minLength`, `maxItems`…), nil when absent.
    func count(_ schema: JSON, _ key: String, path: String) throws -> Int? {
        guard let v = schema[key] else { return nil }
        guard case .number(let literal) = v, case let text = literal.text, let d = DecimalNumber(text), d.isInteger, !d.negative, let n = d.integerValue else {
            throw ConstraintError(.syntax, "\(key) must be a non-negative integer", at: path + "/" + key)
        }
        return n
    }

    // MARK: Numbers

    mutating func number(_ schema: JSON, integer: Bool, path: String) throws -> GrammarExpression {
        func bound(_ key: String, exclusive: Bool) throws -> NumberGrammar.Bound? {
            guard let v = schema[key] else { return nil }
            guard case .number(let literal) = v, case let text = literal.text, let d = DecimalNumber(text) else {
                if case .bool = v {
                    throw ConstraintError(.unsupported, "the draft-4 boolean form of \(key) is not supported; give the bound as a number", at: path + "/" + key)
                }
                throw ConstraintError(.syntax, "\(key) must be a number", at: path + "/" + key)
            }
            guard d.integer.count <= NumberGrammar.maxIntegerDigits - 1, d.fraction.count <= NumberGrammar.maxFractionDigits else {
                throw ConstraintError(.unsupported, "\(key) \(text) has more digits than a bounded number is written with", at: path + "/" + key)
            }
            return NumberGrammar.Bound(value: d, exclusive: exclusive)
        }
        func stronger(_ a: NumberGrammar.Bound?, _ b: NumberGrammar.Bound?, lower: Bool) -> NumberGrammar.Bound? {
            guard let a else { return b }
            guard let b else { return a }
            if a.value == b.value { return a.exclusive ? a : b }
            return (a.value < b.value) == lower ? b : a
        }
        let lower = stronger(try bound("minimum", exclusive: false), try bound("exclusiveMinimum", exclusive: true), lower: true)
        let upper = stronger(try bound("maximum", exclusive: false), try bound("exclusiveMaximum", exclusive: true), lower: false)
        let boundKey = schema["maximum"] != nil ? "/maximum" : "/exclusiveMaximum"
        if let lower, let upper, upper.value < lower.value || (upper.value == lower.value && (lower.exclusive || upper.exclusive)) {
            throw ConstraintError(.unsatisfiable, "the maximum is below the minimum", at: path + boundKey)
        }
        var integerOnly = integer
        var fractionDigits = NumberGrammar.maxFractionDigits
        if let m = schema["multipleOf"] {
            guard case .number(let literal) = m, case let text = literal.text, let d = DecimalNumber(text), !d.negative, !d.isZero else {
                throw ConstraintError(.syntax, "multipleOf must be a positive number", at: path + "/multipleOf")
            }
            guard var automaton = MultipleAutomaton(d) else {
                throw ConstraintError(.unsupported, "multipleOf \(text) has more digits than a number is written with", at: path + "/multipleOf")
            }
            // A multiple of an integer is written as an integer; among integers, a decimal
            // multiple is a multiple of an integer (0.5: every integer; 2.5: multiples of 5).
            if d.isInteger { integerOnly = true }
            if integerOnly { automaton = automaton.amongIntegers }
            if automaton.p == 1 {
                fractionDigits = automaton.k  // 0.01: at most two digits after the point; 1: integers
                if automaton.k == 0 { integerOnly = true }
            } else if automaton.fits(upper: upper, lower: lower) {
                guard let e = try automaton.range(lower: lower, upper: upper, builder: &builder) else {
                    throw ConstraintError(.unsatisfiable, "no multiple of \(text) lies within the bounds", at: path + "/multipleOf")
                }
                return e
            } else if automaton.k == 0 && automaton.p <= 10_000 {
                return try multiples(of: automaton.p, lower: lower, upper: upper, path: path)
            } else {
                throw ConstraintError(
                    .unsupported, "multipleOf \(text) with these bounds needs more than \(MultipleAutomaton.maxStates) states of a digit automaton",
                    at: path + "/multipleOf")
            }
        }
        if integerOnly { fractionDigits = 0 }
        if lower == nil && upper == nil {
            if integerOnly { return .reference(JSONRules.integer) }
            if fractionDigits == NumberGrammar.maxFractionDigits { return .reference(JSONRules.number) }
        }
        guard let e = NumberGrammar.range(lower: lower, upper: upper, fractionDigits: fractionDigits) else {
            throw ConstraintError(.unsatisfiable, "no \(integerOnly ? "integer" : "number") lies within the bounds", at: path + boundKey)
        }
        return e
    }

    /// Integers that are multiples of `m` within the bounds.
    mutating func multiples(of m: Int, lower: NumberGrammar.Bound?, upper: NumberGrammar.Bound?, path: String) throws -> GrammarExpression {
        // Integer bounds: ceil of the lower, floor of the upper (exclusive ones stepped in).
        func integerBound(_ b: NumberGrammar.Bound?, lower: Bool) -> Int? {
            guard let b, let magnitude = b.value.integerValue else { return nil }
            let hasFraction = !b.value.fraction.isEmpty
            if hasFraction {
                // ceil for a lower bound, floor for an upper one.
                if lower { return b.value.negative ? -magnitude : magnitude + 1 }
                return b.value.negative ? -(magnitude + 1) : magnitude
            }
            let v = b.value.negative ? -magnitude : magnitude
            return b.exclusive ? (lower ? v + 1 : v - 1) : v
        }
        let lo = integerBound(lower, lower: true), hi = integerBound(upper, lower: false)
        let all = try NumberGrammar.multiples(of: m, zero: false, builder: &builder)
        switch (lo, hi) {
        case (nil, nil):
            return .choice([.literal("0"), .sequence([.optional(.literal("-")), all])])
        case (let lo?, nil) where lo > -m && lo <= m:
            return lo <= 0 ? .choice([.literal("0"), all]) : all
        case (nil, let hi?) where hi < m && hi >= -m:
            return hi >= 0 ? .choice([.literal("0"), .sequence([.literal("-"), all])]) : .sequence([.literal("-"), all])
        case (let lo?, let hi?):
            let first = Int((Double(lo) / Double(m)).rounded(.up)) * m
            guard first <= hi else {
                throw ConstraintError(.unsatisfiable, "no multiple of \(m) lies within the bounds", at: path + "/multipleOf")
            }
            guard (hi - first) / m < 1000 else {
                throw ConstraintError(.unsupported, "multipleOf with bounds spanning more than 1000 multiples is not supported", at: path + "/multipleOf")
            }
            return .choice(stride(from: first, through: hi, by: m).map { .literal(String($0)) })
        default:
            throw ConstraintError(.unsupported, "multipleOf with a one-sided bound away from zero is not supported", at: path + "/multipleOf")
        }
    }

}

/// `~` and `/` escaped for a JSON pointer token.
func pointerEscape(_ key: String) -> String {
    key.replacingAll("~", with: "~0").replacingAll("/", with: "~1")
}

/// A value's text for equality: numbers as exact decimals (1, 1.0 and 1e0 are one value).
func canonicalValue(_ v: JSON) -> String {
    switch v {
    case .number(let number): return DecimalNumber(number.text)?.text ?? number.text
    case .array(let items): return "[" + items.map(canonicalValue).joined(separator: ",") + "]"
    case .object(let members):
        return "{" + members.sorted { $0.key < $1.key }.map { JSON.string($0.key).serialized + ":" + canonicalValue($0.value) }.joined(separator: ",") + "}"
    default: return v.serialized
    }
}

func sameValue(_ a: JSON, _ b: JSON) -> Bool { canonicalValue(a) == canonicalValue(b) }


extension StringProtocol {
    /// Every occurrence of `target` replaced (stdlib only; no Foundation).
    func replacingAll(_ target: String, with replacement: String) -> String {
        let t = Array(target.unicodeScalars)
        guard !t.isEmpty else { return String(self) }
        let s = Array(String(self).unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < s.count {
            if i + t.count <= s.count, Array(s[i..<(i + t.count)]) == t {
                out.append(contentsOf: replacement.unicodeScalars)
                i += t.count
            } else {
                out.append(s[i])
                i += 1
            }
        }
        return String(out)
    }
}
