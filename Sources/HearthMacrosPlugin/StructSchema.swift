import SwiftSyntax

/// A struct's schema and `Partial`, from its stored properties in declaration order.
struct StructSchema {
    /// One property that `Codable` reads.
    struct Property {
        var name: String  // as declared (backticks kept)
        var key: String  // Swift code of the JSON key
        var type: FieldType
        var guides: [AttributeSyntax]
    }

    let members: String

    init(_ decl: StructDeclSyntax, description: String?) throws {
        let owner = decl.name.text
        try DiagnosedError.refuseGenerics(decl.genericParameterClause, owner: owner)
        let codingKeys = Self.codingKeys(decl)
        var properties: [Property] = []
        var stored = 0
        for member in decl.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self), !Self.isStatic(variable) else { continue }
            let bindings = Array(variable.bindings)
            for (index, binding) in bindings.enumerated() {
                guard Self.isStored(binding) else { continue }
                stored += 1
                guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
                    throw DiagnosedError(
                        binding.pattern, "pattern", "@Structured needs one name per stored property, not '\(binding.pattern.trimmedDescription)'")
                }
                let name = pattern.identifier.text
                // `let x = 1` is not decoded by the synthesized Codable: it has no place in the schema.
                if variable.bindingSpecifier.tokenKind == .keyword(.let), binding.initializer != nil { continue }
                // `var a, b: Int`: the annotation of a later binding covers the earlier ones.
                guard let annotation = bindings[index...].lazy.compactMap(\.typeAnnotation).first else {
                    throw DiagnosedError(
                        binding.pattern, "missingType",
                        "@Structured needs the type of '\(name)' written out ('var \(name): Type'): the schema is derived from the declaration")
                }
                let key: String
                if let codingKeys {
                    guard codingKeys.contains(bare(name)) else { continue }  // not coded: it has a default
                    key = "CodingKeys.\(name).stringValue"
                } else {
                    key = literal(bare(name))
                }
                let type = try FieldType.parse(annotation.type, owner: owner)
                let attributes = variable.attributes.compactMap { element -> AttributeSyntax? in
                    if case .attribute(let attribute) = element { return attribute }
                    return nil
                }
                let guides = attributes.filter {
                    $0.attributeName.trimmedDescription == "SchemaGuide" || $0.attributeName.trimmedDescription == "HearthMacros.SchemaGuide"
                }
                for guide in guides { try Self.check(guide, on: type, property: name) }
                properties.append(Property(name: name, key: key, type: type, guides: guides))
            }
        }
        if stored == 0 {
            throw DiagnosedError(
                decl.name, "noStoredProperties",
                "@Structured needs stored properties: '\(owner)' has none, so a model would have nothing to generate (computed properties are not encoded)")
        }
        let access = accessPrefix(decl.modifiers)
        members = Self.schema(properties, description: description, access: access) + "\n" + Self.partial(properties, access: access)
    }

    private static func schema(_ properties: [Property], description: String?, access: String) -> String {
        let entries = properties.map { property -> String in
            var code = property.type.schemaCode
            for guide in property.guides {
                let arguments: String
                if case .argumentList(let list) = guide.arguments { arguments = list.trimmedDescription } else { arguments = "" }
                code = "\(Names.module).PropertyGuide(\(arguments)).apply(to: \(code))"
            }
            return "(\(property.key), \(code))"
        }
        let required = properties.filter { !$0.type.isOptional }.map(\.key)
        return """
            \(access)static var jsonSchema: \(Names.json) {
                \(Names.schema).object(
                    [\(entries.isEmpty ? "" : "\n" + entries.map { "        " + $0 }.joined(separator: ",\n") + ",\n    ")],
                    required: [\(required.joined(separator: ", "))], description: \(description ?? "nil"))
            }
            """
    }

    private static func partial(_ properties: [Property], access: String) -> String {
        let fields = properties.map { "    \(access)var \($0.name): \($0.type.partialType)?" }
        let decodes = properties.map { property -> String in
            let function: String
            if case .array = property.type.unwrapped { function = "array" } else { function = "value" }
            return "        self.\(property.name) = \(Names.module).PartialDecoding.\(function)(container, \(property.key))"
        }
        return """
            /// The value as generated so far: every property not written yet (or not complete
            /// enough to decode) is nil.
            \(access)struct Partial: Decodable, Sendable {
            \(fields.joined(separator: "\n"))

                \(access)init(from decoder: any Decoder) throws {
                    let container = try decoder.container(keyedBy: \(Names.module).PartialKey.self)
            \(decodes.joined(separator: "\n"))
                }
            }
            """
    }

    /// Whether a binding stores a value (no getter; `willSet`/`didSet` observers allowed).
    static func isStored(_ binding: PatternBindingSyntax) -> Bool {
        guard let accessors = binding.accessorBlock?.accessors else { return true }
        switch accessors {
        case .getter: return false
        case .accessors(let list):
            return list.allSatisfy { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
        }
    }

    static func isStatic(_ variable: VariableDeclSyntax) -> Bool {
        variable.modifiers.contains { [.keyword(.static), .keyword(.class)].contains($0.name.tokenKind) }
    }

    /// The case names of a nested `CodingKeys` enum, if the struct declares one.
    static func codingKeys(_ decl: StructDeclSyntax) -> Set<String>? {
        for member in decl.memberBlock.members {
            guard let keys = member.decl.as(EnumDeclSyntax.self), keys.name.text == "CodingKeys" else { continue }
            var names: Set<String> = []
            for item in keys.memberBlock.members {
                guard let cases = item.decl.as(EnumCaseDeclSyntax.self) else { continue }
                for element in cases.elements { names.insert(bare(element.name.text)) }
            }
            return names
        }
        return nil
    }

    /// Checks that each of the guide's arguments fits the property's type (a pattern on a
    /// string, a range on a number, a count on an array).
    static func check(_ guide: AttributeSyntax, on type: FieldType, property: String) throws {
        guard case .argumentList(let list) = guide.arguments else { return }
        for argument in list {
            guard let label = argument.label?.text else { continue }  // the description fits any type
            let needs: FieldType.Kind
            switch label {
            case "range", "minimum", "maximum": needs = .number
            case "pattern", "minLength", "maxLength", "allowed": needs = .string
            case "count", "minItems", "maxItems": needs = .array
            default: continue
            }
            guard type.kind == needs else {
                let what: String
                switch needs {
                case .number: what = "a number (Int, Double…)"
                case .string: what = "a String"
                case .array: what = "an array"
                case .other: what = "another type"
                }
                throw DiagnosedError(
                    argument, "guideMismatch",
                    "@SchemaGuide(\(label):) applies to \(what), and '\(property)' is not one")
            }
        }
    }
}
