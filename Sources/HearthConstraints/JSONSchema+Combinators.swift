import HearthJSON

/// `$ref`, `allOf` (merged into one schema) and `oneOf` (checked for disjoint branches).
extension SchemaCompiler {
    // MARK: $ref and allOf

    /// The rule for the schema `ref` points to (compiled once; recursion goes through the rule).
    mutating func reference(_ ref: JSON, path: String) throws -> GrammarExpression {
        guard let text = ref.stringValue else { throw ConstraintError(.syntax, "$ref must be a string", at: path) }
        if let name = refRules[text] { return .reference(name) }
        let target = try resolve(text, path: path)
        let name = "ref" + refPrefix + text
        refRules[text] = name
        let pointerPath = String(text.dropFirst())
        let e = try compile(target, path: pointerPath)
        if e == .reference(name) {
            throw ConstraintError(.invalidGrammar, "$ref '\(text)' refers only to itself", at: pointerPath)
        }
        try builder.define(name, e)
        return .reference(name)
    }

    /// The schema a local reference (`#`, `#/$defs/x`, any `#/json/pointer`) points to.
    func resolve(_ ref: String, path: String) throws -> JSON {
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
    func dereferenced(_ schema: JSON, path: String) throws -> JSON {
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
    func mergeAllOf(_ schema: JSON, path: String) throws -> JSON {
        guard case .array(let branches)? = schema["allOf"], !branches.isEmpty else {
            throw ConstraintError(.syntax, "allOf must be a non-empty array of schemas", at: path + "/allOf")
        }
        let own = JSON.object((schema.objectMembers ?? []).filter { $0.key != "allOf" })
        return try merge([own] + branches, paths: [path] + branches.indices.map { path + "/allOf/\($0)" })
    }

    // Long: one case per JSON Schema keyword family that allOf must merge (types, properties, required,
    // bounds, enums, …), each with its own rule; a table.
    /// The conjunction of schemas as one schema: types intersected, properties united (a
    /// property in several gets an allOf of its schemas), required united; any other keyword
    /// must not disagree between the schemas (else `.unsupported`).
    func merge(_ schemas: [JSON], paths: [String]) throws -> JSON {
        var result: [JSON.Member] = []
        var properties: [JSON.Member] = []
        var required: [JSON] = []
        var types: Set<String>? = nil
        var declaredAll: [Set<String>] = []
        var additional: [(JSON, Set<String>, String)] = []
        var pending = Array(zip(schemas, paths))
        var index = 0
        while index < pending.count {
            // allOf through a $ref back to itself would grow this list forever.
            guard pending.count <= 1000 else {
                throw ConstraintError(.invalidGrammar, "allOf refers back to itself (through $ref)", at: paths.first ?? "")
            }
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
                                properties[i].value = .object([(key: "allOf", value: .array([properties[i].value, p.value]))])
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
            result.insert((key: "type", value: .array(list.map { .string($0) })), at: 0)
        }
        if !properties.isEmpty { result.append((key: "properties", value: .object(properties))) }
        if !required.isEmpty { result.append((key: "required", value: .array(required))) }
        if let first = additional.first {
            // additionalProperties in one branch limits the others' properties too: enforced only
            // when that branch declares every merged property (then it means what it says).
            let all = Set(properties.map(\.key))
            guard additional.count == 1, first.1.isSuperset(of: all) || first.0 == .bool(true) else {
                throw ConstraintError(
                    .unsupported, "additionalProperties in an allOf branch that does not declare every merged property",
                    at: first.2)
            }
            result.append((key: "additionalProperties", value: first.0))
        }
        return .object(result)
    }

    // MARK: oneOf

    /// `oneOf` is enforced as `anyOf` when no value can match two branches: branches of
    /// disjoint types, of disjoint `const`/`enum` values, or objects with a required property
    /// whose `const`/`enum` values are disjoint. Else `.unsupported`.
    func checkDisjoint(_ branches: [JSON], path: String) throws {
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

    func signature(_ raw: JSON, path: String) throws -> Signature {
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
            types = Set(v.map(\.typeName))
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
}
