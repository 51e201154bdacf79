/// JSON Schema (draft 2020-12 keywords, plus draft-07's `definitions`) compiled to grammars.
///
/// The output is JSON: compact, with whitespace allowed between tokens (at most
/// `JSONRules.maxWhitespace` bytes in a row, none before or after the root value); object
/// members in the schema's property order. Every keyword that constrains is enforced or refused
/// with `.unsupported` at its JSON pointer; none is dropped. docs/STRUCTURED-frontends.md lists
/// what is supported and the choices made where the grammar accepts a subset of the valid
/// documents (no undeclared properties unless `additionalProperties` allows them, bounded
/// digits, canonical escapes in constant strings).
public enum JSONSchema {
    /// A grammar whose outputs are JSON documents valid against the schema in `schemaJSON`.
    /// - Throws: `ConstraintError`: `.syntax` (the text is not JSON, or a keyword's value has
    ///   the wrong form), `.unsupported` (a keyword or combination that is not enforced),
    ///   `.unsatisfiable` (no document is valid), `.invalidGrammar` (an unresolvable or
    ///   left-recursive `$ref`), `.tooComplex`; the location is a JSON pointer into the schema.
    public static func grammar(_ schemaJSON: String) throws -> Grammar {
        let document = try JSONValue.parse(schemaJSON)
        var compiler = try SchemaCompiler(document: document)
        let root = try compiler.compile(document, path: "")
        try compiler.builder.define("root", root)
        return try compiler.builder.build(root: "root")
    }

    /// Any JSON object (`response_format: {"type": "json_object"}`); the root rule derives
    /// the shared `json_object` rule.
    public static var anyJSONObject: Grammar {
        get throws { try anyObjectGrammar.get() }
    }

    /// Any JSON value.
    public static var anyJSONValue: Grammar {
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
    let document: JSONValue
    var builder = GrammarBuilder()
    /// `$ref` pointer → its rule.
    var refRules: [String: String] = [:]
    var counter = 0
    var depth = 0

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

    init(document: JSONValue) throws {
        self.document = document
        try JSONRules.define(in: &builder)
    }

    static let ws = Expression.reference(JSONRules.ws)
    static let comma = Expression.sequence([ws, .literal(","), ws])

    mutating func fresh(_ what: String) -> String {
        counter += 1
        return "\(what)\(counter)"
    }

    // MARK: Dispatch

    mutating func compile(_ schema: JSONValue, path: String) throws -> Expression {
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
    mutating func combinator(_ schema: JSONValue, members: [JSONValue.Member], path: String) throws -> Expression {
        if schema["anyOf"] != nil && schema["oneOf"] != nil {
            throw ConstraintError(.unsupported, "anyOf together with oneOf is not supported", at: path + "/oneOf")
        }
        let key = schema["anyOf"] != nil ? "anyOf" : "oneOf"
        guard case .array(let branches)? = schema[key], !branches.isEmpty else {
            throw ConstraintError(.syntax, "\(key) must be a non-empty array of schemas", at: path + "/" + key)
        }
        let siblings = members.filter { $0.key != key && !Self.annotations.contains($0.key) }
        if key == "oneOf" { try checkDisjoint(branches, path: path + "/oneOf") }
        var options: [Expression] = []
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
    mutating func typed(_ schema: JSONValue, constraining: [JSONValue.Member], path: String) throws -> Expression {
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
        var options: [Expression] = []
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
    func constants(_ schema: JSONValue, types: [String], constraining: [JSONValue.Member], path: String) throws -> Expression {
        if let other = constraining.first(where: { !["type", "enum", "const"].contains($0.key) }) {
            throw ConstraintError(
                .unsupported, "'\(other.key)' together with enum/const is not supported; list only values that meet it",
                at: path + "/" + pointerEscape(other.key))
        }
        var values: [JSONValue]
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
            let t = v.typeName
            return types.contains(t) || (t == "integer" && types.contains("number"))
        }
        guard !values.isEmpty else {
            throw ConstraintError(.unsatisfiable, "no value of enum/const is allowed (empty, or none of the schema's type)", at: where_)
        }
        var seen = Set<String>()
        let texts = values.map(\.compactText).filter { seen.insert($0).inserted }
        let options = texts.map { Expression.literal($0) }
        return options.count == 1 ? options[0] : .choice(options)
    }

    // MARK: $ref and allOf

    /// The rule for the schema `ref` points to (compiled once; recursion goes through the rule).
    mutating func reference(_ ref: JSONValue, path: String) throws -> Expression {
        guard let text = ref.stringValue else { throw ConstraintError(.syntax, "$ref must be a string", at: path) }
        if let name = refRules[text] { return .reference(name) }
        let target = try resolve(text, path: path)
        let name = "ref" + text
        refRules[text] = name
        let pointerPath = String(text.dropFirst())
        try builder.define(name, try compile(target, path: pointerPath))
        return .reference(name)
    }

    /// The schema a local reference (`#`, `#/$defs/x`, any `#/json/pointer`) points to.
    func resolve(_ ref: String, path: String) throws -> JSONValue {
        guard ref.hasPrefix("#") else {
            throw ConstraintError(.unsupported, "only local references (#/…) are supported, not '\(ref)'", at: path)
        }
        var node = document
        let pointer = ref.dropFirst()
        guard pointer.isEmpty || pointer.hasPrefix("/") else {
            throw ConstraintError(.unsupported, "anchor references ('\(ref)') are not supported; use a JSON pointer", at: path)
        }
        for token in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            let key = token.replacingAll("~1", with: "/").replacingAll("~0", with: "~")
            switch node {
            case .object: node = node[key] ?? .null
            case .array(let items): node = Int(key).flatMap { items.indices.contains($0) ? items[$0] : nil } ?? .null
            default: node = .null
            }
            if node == .null {
                throw ConstraintError(.invalidGrammar, "$ref '\(ref)' points at nothing in the schema", at: path)
            }
        }
        return node
    }

    /// Follows `$ref`s to a schema that is not one.
    func dereferenced(_ schema: JSONValue, path: String) throws -> JSONValue {
        var s = schema
        var hops = 0
        while let ref = s["$ref"]?.stringValue, s.objectMembers?.filter({ !Self.annotations.contains($0.key) }).count == 1 {
            s = try resolve(ref, path: path)
            hops += 1
            if hops > 64 { throw ConstraintError(.invalidGrammar, "$ref cycle without any schema", at: path) }
        }
        return s
    }

    /// `allOf` (with the schema's own keywords) merged into one schema.
    func mergeAllOf(_ schema: JSONValue, path: String) throws -> JSONValue {
        guard case .array(let branches)? = schema["allOf"], !branches.isEmpty else {
            throw ConstraintError(.syntax, "allOf must be a non-empty array of schemas", at: path + "/allOf")
        }
        let own = JSONValue.object((schema.objectMembers ?? []).filter { $0.key != "allOf" })
        return try merge([own] + branches, paths: [path] + branches.indices.map { path + "/allOf/\($0)" })
    }

    /// The conjunction of schemas as one schema: types intersected, properties united (a
    /// property in several gets an allOf of its schemas), required united; any other keyword
    /// must not disagree between the schemas (else `.unsupported`).
    func merge(_ schemas: [JSONValue], paths: [String]) throws -> JSONValue {
        var result: [JSONValue.Member] = []
        var properties: [JSONValue.Member] = []
        var required: [JSONValue] = []
        var types: Set<String>? = nil
        var declaredAll: [Set<String>] = []
        var additional: [(JSONValue, Set<String>, String)] = []
        var pending = Array(zip(schemas, paths))
        var index = 0
        while index < pending.count {
            let (raw, path) = pending[index]
            index += 1
            let s = try dereferenced(raw, path: path)
            if s == .bool(true) { continue }
            if s == .bool(false) { return .bool(false) }
            guard let members = s.objectMembers else { throw ConstraintError(.syntax, "a schema must be an object or a boolean", at: path) }
            var declared = Set<String>()
            for m in members {
                let at = path + "/" + pointerEscape(m.key)
                switch m.key {
                case _ where Self.annotations.contains(m.key): continue
                case "allOf":
                    guard case .array(let inner) = m.value else { throw ConstraintError(.syntax, "allOf must be an array", at: at) }
                    pending += inner.enumerated().map { ($0.element, at + "/\($0.offset)") }
                case "$ref":
                    pending.append((.object([m]), path))
                case "type":
                    let names: [String]
                    switch m.value {
                    case .string(let n): names = [n]
                    case .array(let list): names = list.compactMap(\.stringValue)
                    default: throw ConstraintError(.syntax, "type must be a type name or an array of them", at: at)
                    }
                    var set = Set(names)
                    if set.contains("number") { set.insert("integer") }
                    types = types.map { $0.intersection(set) } ?? set
                case "properties":
                    guard let props = m.value.objectMembers else { throw ConstraintError(.syntax, "properties must be an object", at: at) }
                    for p in props {
                        declared.insert(p.key)
                        if let i = properties.firstIndex(where: { $0.key == p.key }) {
                            if properties[i].value != p.value {
                                properties[i].value = .object([.init(key: "allOf", value: .array([properties[i].value, p.value]))])
                            }
                        } else {
                            properties.append(p)
                        }
                    }
                case "required":
                    guard case .array(let names) = m.value else { throw ConstraintError(.syntax, "required must be an array", at: at) }
                    for n in names where !required.contains(n) { required.append(n) }
                case "additionalProperties":
                    additional.append((m.value, [], at))
                default:
                    if let existing = result.first(where: { $0.key == m.key }) {
                        if existing.value != m.value {
                            throw ConstraintError(.unsupported, "'\(m.key)' appears with different values in allOf branches", at: at)
                        }
                    } else {
                        result.append(m)
                    }
                }
            }
            if !additional.isEmpty, additional[additional.count - 1].1.isEmpty, additional[additional.count - 1].2.hasPrefix(path) {
                additional[additional.count - 1].1 = declared
            }
            declaredAll.append(declared)
        }
        if var types {
            if types.contains("number") && !types.contains("integer") { types.insert("integer") }
            let ordered = Self.typeNames.filter { types.contains($0) }
            guard !ordered.isEmpty else {
                throw ConstraintError(.unsatisfiable, "the allOf branches allow no common type", at: paths.first ?? "")
            }
            let list = ordered.contains("number") ? ordered.filter { $0 != "integer" } : ordered
            result.insert(.init(key: "type", value: .array(list.map { .string($0) })), at: 0)
        }
        if !properties.isEmpty { result.append(.init(key: "properties", value: .object(properties))) }
        if !required.isEmpty { result.append(.init(key: "required", value: .array(required))) }
        if let first = additional.first {
            // additionalProperties in one branch limits the others' properties too: enforced only
            // when that branch declares every merged property (then it means what it says).
            let all = Set(properties.map(\.key))
            guard additional.count == 1, first.1.isSuperset(of: all) || first.0 == .bool(true) else {
                throw ConstraintError(
                    .unsupported, "additionalProperties in an allOf branch that does not declare every merged property",
                    at: first.2)
            }
            result.append(.init(key: "additionalProperties", value: first.0))
        }
        return .object(result)
    }

    // MARK: oneOf

    /// `oneOf` is enforced as `anyOf` when no value can match two branches: branches of
    /// disjoint types, of disjoint `const`/`enum` values, or objects with a required property
    /// whose `const`/`enum` values are disjoint. Else `.unsupported`.
    func checkDisjoint(_ branches: [JSONValue], path: String) throws {
        let signatures = try branches.enumerated().map { try signature($0.element, path: path + "/\($0.offset)") }
        for i in signatures.indices {
            for j in signatures.indices where j > i {
                let a = signatures[i], b = signatures[j]
                if a.types.isDisjoint(with: b.types) { continue }
                if let va = a.values, let vb = b.values, va.isDisjoint(with: vb) { continue }
                if a.discriminators.contains(where: { key, values in b.discriminators[key].map { values.isDisjoint(with: $0) } ?? false }) { continue }
                throw ConstraintError(
                    .unsupported,
                    "oneOf branches \(i) and \(j) may both match one value; oneOf is enforced only when its branches are provably disjoint (use anyOf)",
                    at: path)
            }
        }
    }

    struct Signature {
        var types: Set<String>
        var values: Set<String>?
        var discriminators: [String: Set<String>]
    }

    func signature(_ raw: JSONValue, path: String) throws -> Signature {
        let s = try dereferenced(raw, path: path)
        let all: Set<String> = ["null", "boolean", "object", "array", "string", "number"]
        guard s.objectMembers != nil else { return Signature(types: s == .bool(false) ? [] : all, values: nil, discriminators: [:]) }
        var values: Set<String>? = nil
        if case .array(let list)? = s["enum"] { values = Set(list.map(canonicalValue)) }
        if let c = s["const"] { values = [canonicalValue(c)] }
        var types = all
        if let t = s["type"] {
            let names = t.stringValue.map { [$0] } ?? (t.arrayValues?.compactMap(\.stringValue) ?? [])
            types = Set(names.map { $0 == "integer" ? "number" : $0 })
        } else if let v = (s["enum"]?.arrayValues ?? s["const"].map { [$0] }) {
            types = Set(v.map { $0.typeName == "integer" ? "number" : $0.typeName })
        } else if s["properties"] != nil || s["required"] != nil {
            types = ["object"]
        }
        var discriminators: [String: Set<String>] = [:]
        let required = Set((s["required"]?.arrayValues ?? []).compactMap(\.stringValue))
        for p in s["properties"]?.objectMembers ?? [] where required.contains(p.key) {
            let ps = try dereferenced(p.value, path: path)
            if let c = ps["const"] { discriminators[p.key] = [canonicalValue(c)] }
            else if case .array(let list)? = ps["enum"] { discriminators[p.key] = Set(list.map(canonicalValue)) }
        }
        return Signature(types: types, values: values, discriminators: discriminators)
    }

    // MARK: Strings

    mutating func string(_ schema: JSONValue, path: String) throws -> Expression {
        let minLength = try count(schema, "minLength", path: path)
        let maxLength = try count(schema, "maxLength", path: path)
        let quote = Expression.literal("\"")
        if let format = schema["format"] {
            guard let name = format.stringValue else { throw ConstraintError(.syntax, "format must be a string", at: path + "/format") }
            if let other = ["pattern", "minLength", "maxLength"].first(where: { schema[$0] != nil }) {
                throw ConstraintError(.unsupported, "format together with \(other) is not supported", at: path + "/" + other)
            }
            return .sequence([quote, try StringFormats.expression(name, builder: &builder, path: path + "/format"), quote])
        }
        if let pattern = schema["pattern"] {
            guard let text = pattern.stringValue else { throw ConstraintError(.syntax, "pattern must be a string", at: path + "/pattern") }
            if minLength != nil || maxLength != nil {
                throw ConstraintError(
                    .unsupported, "pattern together with minLength/maxLength is not supported; put the length in the pattern",
                    at: path + "/pattern")
            }
            do {
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
    func count(_ schema: JSONValue, _ key: String, path: String) throws -> Int? {
        guard let v = schema[key] else { return nil }
        guard case .number(let text) = v, let d = DecimalNumber(text), d.isInteger, !d.negative, let n = d.integerValue else {
            throw ConstraintError(.syntax, "\(key) must be a non-negative integer", at: path + "/" + key)
        }
        return n
    }

    // MARK: Numbers

    mutating func number(_ schema: JSONValue, integer: Bool, path: String) throws -> Expression {
        func bound(_ key: String, exclusive: Bool) throws -> NumberGrammar.Bound? {
            guard let v = schema[key] else { return nil }
            guard case .number(let text) = v, let d = DecimalNumber(text) else {
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
        var multiple: Int? = nil
        if let m = schema["multipleOf"] {
            guard case .number(let text) = m, let d = DecimalNumber(text), !d.negative, !d.isZero else {
                throw ConstraintError(.syntax, "multipleOf must be a positive number", at: path + "/multipleOf")
            }
            if d.isInteger {
                guard let n = d.integerValue, n <= 10_000 else {
                    throw ConstraintError(.unsupported, "multipleOf above 10000 is not supported", at: path + "/multipleOf")
                }
                integerOnly = true  // a multiple of an integer is written as an integer
                if n > 1 { multiple = n }
            } else if d.integer == "0", d.fraction.hasSuffix("1"), d.fraction.dropLast().allSatisfy({ $0 == "0" }) {
                fractionDigits = d.fraction.count  // 0.01: at most two digits after the point
            } else {
                throw ConstraintError(
                    .unsupported, "multipleOf \(text) is not supported (integers and powers of ten such as 0.01 are)",
                    at: path + "/multipleOf")
            }
        }
        if let multiple {
            return try multiples(of: multiple, lower: lower, upper: upper, path: path)
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
    mutating func multiples(of m: Int, lower: NumberGrammar.Bound?, upper: NumberGrammar.Bound?, path: String) throws -> Expression {
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

    // MARK: Objects

    mutating func object(_ schema: JSONValue, path: String) throws -> Expression {
        var properties: [(name: String, schema: JSONValue, path: String)] = []
        if let p = schema["properties"] {
            guard let members = p.objectMembers else { throw ConstraintError(.syntax, "properties must be an object", at: path + "/properties") }
            properties = members.map { ($0.key, $0.value, path + "/properties/" + pointerEscape($0.key)) }
        }
        var required = Set<String>()
        // A required name that `properties` does not declare takes the additionalProperties schema.
        let undeclared = schema["additionalProperties"] ?? .bool(true)
        if let r = schema["required"] {
            guard case .array(let names) = r else { throw ConstraintError(.syntax, "required must be an array of names", at: path + "/required") }
            for n in names {
                guard let name = n.stringValue else { throw ConstraintError(.syntax, "required must be an array of names", at: path + "/required") }
                required.insert(name)
                if !properties.contains(where: { $0.name == name }) { properties.append((name, undeclared, path + "/required")) }
            }
        }
        // Undeclared members: only where additionalProperties is given and not false.
        var extra: Expression? = nil
        if let a = schema["additionalProperties"], a != .bool(false) {
            let value = try compile(a, path: path + "/additionalProperties")
            if !value.isEmptyLanguage {
                let key = try keyExcluding(properties.map(\.name))
                extra = .sequence([key, Self.ws, .literal(":"), Self.ws, value])
            }
        }
        let open = Expression.literal("{"), close = Expression.literal("}")
        var members: [Expression] = []
        for p in properties {
            let value = try compile(p.schema, path: p.path)
            members.append(.sequence([.literal(JSONValue.string(p.name).compactText), Self.ws, .literal(":"), Self.ws, value]))
        }
        if properties.allSatisfy({ required.contains($0.name) }) && extra == nil {
            // All required: one sequence.
            guard !members.isEmpty else { return .sequence([open, Self.ws, close]) }
            var items: [Expression] = [open, Self.ws]
            for (i, m) in members.enumerated() { items += i == 0 ? [m] : [Self.comma, m] }
            return .sequence(items + [Self.ws, close])
        }
        // after[i]: members i… when one has been written (each written after a comma);
        // first[i]: members i… when none has been written yet, at least one written.
        let id = fresh("object")
        let extras: Expression = extra.map { .zeroOrMore(.sequence([Self.comma, $0])) } ?? .empty
        var after: Expression = extras
        var first: Expression? = extra.map { .sequence([$0, extras]) }
        for i in stride(from: members.count - 1, through: 0, by: -1) {
            let name = "\(id)_after\(i)"
            try builder.define(name, after)
            let rest = Expression.reference(name)
            let withThis = Expression.sequence([members[i], rest])
            if required.contains(properties[i].name) {
                after = .sequence([Self.comma, members[i], rest])
                first = withThis
            } else {
                after = .sequence([.optional(.sequence([Self.comma, members[i]])), rest])
                first = first.map { .choice([withThis, $0]) } ?? withThis
            }
        }
        guard let first else { return .sequence([open, Self.ws, close]) }
        let body = Expression.sequence([first, Self.ws])
        return .sequence([open, Self.ws, required.isEmpty ? .optional(body) : body, close])
    }

    /// A JSON string key, in canonical form, that is none of `names` (a trie of the names, with
    /// every other character leading to any rest).
    mutating func keyExcluding(_ names: [String]) throws -> Expression {
        final class Node {
            var children: [(UInt32, Node)] = []
            var terminal = false
        }
        let root = Node()
        for name in names {
            var node = root
            for s in name.unicodeScalars {
                if let child = node.children.first(where: { $0.0 == s.value })?.1 {
                    node = child
                } else {
                    let child = Node()
                    node.children.append((s.value, child))
                    node = child
                }
            }
            node.terminal = true
        }
        func expression(_ node: Node) -> Expression {
            var options: [Expression] = []
            for (scalar, child) in node.children {
                options.append(.sequence([CharacterEncoding.jsonString.expression(ScalarSet([scalar...scalar])), expression(child)]))
            }
            let others = ScalarSet.all.subtracting(ScalarSet(node.children.map { $0.0...$0.0 }))
            options.append(.sequence([CharacterEncoding.jsonString.expression(others), .reference(JSONRules.keyRest)]))
            if !node.terminal { options.append(.literal("\"")) }
            return .choice(options)
        }
        return .sequence([.literal("\""), expression(root)])
    }

    // MARK: Arrays

    mutating func array(_ schema: JSONValue, path: String) throws -> Expression {
        var prefix: [JSONValue] = []
        if let p = schema["prefixItems"] {
            guard case .array(let list) = p else { throw ConstraintError(.syntax, "prefixItems must be an array of schemas", at: path + "/prefixItems") }
            prefix = list
        }
        if case .array? = schema["items"] {
            throw ConstraintError(.unsupported, "items as an array (draft-07 tuples) is not supported; use prefixItems", at: path + "/items")
        }
        let minItems = try count(schema, "minItems", path: path) ?? 0
        var maxItems = try count(schema, "maxItems", path: path)
        if let maxItems, maxItems < minItems {
            throw ConstraintError(.unsatisfiable, "maxItems \(maxItems) is below minItems \(minItems)", at: path + "/maxItems")
        }
        let itemSchema = schema["items"] ?? .bool(true)
        var item: Expression? = nil
        if itemSchema != .bool(false) {
            let e = try compile(itemSchema, path: path + "/items")
            if e.isEmptyLanguage {
                item = nil
            } else if case .reference = e {
                item = e
            } else {
                let name = fresh("items")
                try builder.define(name, e)
                item = .reference(name)
            }
        }
        if item == nil { maxItems = min(maxItems ?? prefix.count, prefix.count) }
        if let maxItems, maxItems < minItems {
            throw ConstraintError(.unsatisfiable, "at most \(maxItems) items are allowed but minItems is \(minItems)", at: path + "/minItems")
        }
        if let maxItems, maxItems > GrammarBuilder.maxRepeat {
            throw ConstraintError(.tooComplex, "maxItems above \(GrammarBuilder.maxRepeat) is not supported", at: path + "/maxItems")
        }
        if minItems > GrammarBuilder.maxRepeat {
            throw ConstraintError(.tooComplex, "minItems above \(GrammarBuilder.maxRepeat) is not supported", at: path + "/minItems")
        }
        let open = Expression.literal("["), close = Expression.literal("]")
        if maxItems == 0 { return .sequence([open, Self.ws, close]) }
        let k = min(prefix.count, maxItems ?? prefix.count)
        var prefixItems: [Expression] = []
        for i in 0..<k { prefixItems.append(try compile(prefix[i], path: path + "/prefixItems/\(i)")) }
        // Items after the prefix, each after a comma.
        var tail: Expression = .empty
        if let item, k == prefix.count, maxItems.map({ $0 > k }) ?? true {
            tail = .repeating(.sequence([Self.comma, item]), min: max(0, minItems - max(k, 1)), max: maxItems.map { $0 - max(k, 1) })
        }
        var elements: Expression
        if k == 0 {
            guard let item else { return .sequence([open, Self.ws, close]) }
            elements = .sequence([item, tail])
        } else {
            // Positions k…1: position j continues with j+1 (optional once minItems is met).
            var level = Expression.sequence([prefixItems[k - 1], tail])
            for j in stride(from: k - 1, through: 1, by: -1) {
                let next = Expression.sequence([Self.comma, level])
                level = .sequence([prefixItems[j - 1], j + 1 > minItems ? .optional(next) : next])
            }
            elements = level
        }
        let body = Expression.sequence([elements, Self.ws])
        return .sequence([open, Self.ws, minItems == 0 ? .optional(body) : body, close])
    }
}

/// `~` and `/` escaped for a JSON pointer token.
func pointerEscape(_ key: String) -> String {
    key.replacingAll("~", with: "~0").replacingAll("/", with: "~1")
}

/// A value's text for equality: numbers as exact decimals (1, 1.0 and 1e0 are one value).
func canonicalValue(_ v: JSONValue) -> String {
    switch v {
    case .number(let text): return DecimalNumber(text)?.text ?? text
    case .array(let items): return "[" + items.map(canonicalValue).joined(separator: ",") + "]"
    case .object(let members):
        return "{" + members.sorted { $0.key < $1.key }.map { JSONValue.string($0.key).compactText + ":" + canonicalValue($0.value) }.joined(separator: ",") + "}"
    default: return v.compactText
    }
}

func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool { canonicalValue(a) == canonicalValue(b) }

extension JSONValue {
    var arrayValues: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
}

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
