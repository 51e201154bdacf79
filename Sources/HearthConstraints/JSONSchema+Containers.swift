import HearthJSON

/// Objects (members in schema order) and arrays (prefix items, then items).
extension SchemaCompiler {
    // MARK: Objects

    mutating func object(_ schema: JSON, path: String) throws -> GrammarExpression {
        var properties: [(name: String, schema: JSON, path: String)] = []
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
        var extra: GrammarExpression? = nil
        if let a = schema["additionalProperties"], a != .bool(false) {
            let value = try compile(a, path: path + "/additionalProperties")
            if !value.isEmptyLanguage {
                let key = try keyExcluding(properties.map(\.name))
                extra = .sequence([key, Self.ws, .literal(":"), Self.ws, value])
            }
        }
        let open = GrammarExpression.literal("{"), close = GrammarExpression.literal("}")
        var members: [GrammarExpression] = []
        for p in properties {
            let value = try compile(p.schema, path: p.path)
            members.append(.sequence([.literal(JSON.string(p.name).serialized), Self.ws, .literal(":"), Self.ws, value]))
        }
        if properties.allSatisfy({ required.contains($0.name) }) && extra == nil {
            // All required: one sequence.
            guard !members.isEmpty else { return .sequence([open, Self.ws, close]) }
            var items: [GrammarExpression] = [open, Self.ws]
            for (i, m) in members.enumerated() { items += i == 0 ? [m] : [Self.comma, m] }
            return .sequence(items + [Self.ws, close])
        }
        // after[i]: members i… when one has been written (each written after a comma);
        // first[i]: members i… when none has been written yet, at least one written.
        let id = fresh("object")
        let extras: GrammarExpression = extra.map { .zeroOrMore(.sequence([Self.comma, $0])) } ?? .empty
        var after: GrammarExpression = extras
        var first: GrammarExpression? = extra.map { .sequence([$0, extras]) }
        for i in stride(from: members.count - 1, through: 0, by: -1) {
            let name = "\(id)_after\(i)"
            try builder.define(name, after)
            let rest = GrammarExpression.reference(name)
            let withThis = GrammarExpression.sequence([members[i], rest])
            if required.contains(properties[i].name) {
                after = .sequence([Self.comma, members[i], rest])
                first = withThis
            } else {
                after = .sequence([.optional(.sequence([Self.comma, members[i]])), rest])
                first = first.map { .choice([withThis, $0]) } ?? withThis
            }
        }
        guard let first else { return .sequence([open, Self.ws, close]) }
        let body = GrammarExpression.sequence([first, Self.ws])
        return .sequence([open, Self.ws, required.isEmpty ? .optional(body) : body, close])
    }

    /// A JSON string key, in canonical form, that is none of `names` (a trie of the names, with
    /// every other character leading to any rest).
    mutating func keyExcluding(_ names: [String]) throws -> GrammarExpression {
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
        func expression(_ node: Node) -> GrammarExpression {
            var options: [GrammarExpression] = []
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

    mutating func array(_ schema: JSON, path: String) throws -> GrammarExpression {
        var prefix: [JSON] = []
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
        var item: GrammarExpression? = nil
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
        let open = GrammarExpression.literal("["), close = GrammarExpression.literal("]")
        if maxItems == 0 { return .sequence([open, Self.ws, close]) }
        let k = min(prefix.count, maxItems ?? prefix.count)
        var prefixItems: [GrammarExpression] = []
        for i in 0..<k { prefixItems.append(try compile(prefix[i], path: path + "/prefixItems/\(i)")) }
        // Items after the prefix, each after a comma.
        var tail: GrammarExpression = .empty
        if let item, k == prefix.count, maxItems.map({ $0 > k }) ?? true {
            tail = .repeating(.sequence([Self.comma, item]), min: max(0, minItems - max(k, 1)), max: maxItems.map { $0 - max(k, 1) })
        }
        var elements: GrammarExpression
        if k == 0 {
            guard let item else { return .sequence([open, Self.ws, close]) }
            elements = .sequence([item, tail])
        } else {
            // Positions k…1: position j continues with j+1 (optional once minItems is met).
            var level = GrammarExpression.sequence([prefixItems[k - 1], tail])
            for j in stride(from: k - 1, through: 1, by: -1) {
                let next = GrammarExpression.sequence([Self.comma, level])
                level = .sequence([prefixItems[j - 1], j + 1 > minItems ? .optional(next) : next])
            }
            elements = level
        }
        let body = GrammarExpression.sequence([elements, Self.ws])
        return .sequence([open, Self.ws, minItems == 0 ? .optional(body) : body, close])
    }
}
