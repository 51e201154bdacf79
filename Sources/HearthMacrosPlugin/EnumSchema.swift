import SwiftSyntax

/// An enum's schema, in the shape Swift's synthesized `Codable` gives it: the raw values for a
/// `String` or `Int` enum; otherwise `{"case": {values}}` for each case (SE-0295), `anyOf` the
/// cases. An enum's `Partial` is the enum itself (it decodes once complete).
struct EnumSchema {
    let members: String

    init(_ decl: EnumDeclSyntax, description: String?) throws {
        let owner = decl.name.text
        try DiagnosedError.refuseGenerics(decl.genericParameterClause, owner: owner)
        var elements: [EnumCaseElementSyntax] = []
        for member in decl.memberBlock.members {
            if let keys = member.decl.as(EnumDeclSyntax.self), keys.name.text == "CodingKeys" || keys.name.text.hasSuffix("CodingKeys") {
                throw DiagnosedError(
                    keys.name, "enumCodingKeys",
                    "@Structured describes an enum's synthesized Codable form; custom \(keys.name.text) change it: remove them, or conform to StructuredOutput by hand")
            }
            if let cases = member.decl.as(EnumCaseDeclSyntax.self) { elements.append(contentsOf: cases.elements) }
        }
        guard !elements.isEmpty else {
            throw DiagnosedError(decl.name, "noCases", "@Structured needs an enum with cases: '\(owner)' has none, so no value can be generated")
        }
        let rawTypeSyntax = decl.inheritanceClause?.inheritedTypes.first?.type
        let rawType = rawTypeSyntax?.trimmedDescription
        let description = description ?? "nil"
        let schema: String
        switch rawType {
        case "String", "Swift.String":
            let values = elements.map { "Self.\($0.name.text).rawValue" }.joined(separator: ", ")
            schema = "\(Names.schema).stringEnum([\(values)], description: \(description))"
        case "Int", "Swift.Int":
            let values = elements.map { "Self.\($0.name.text).rawValue" }.joined(separator: ", ")
            schema = "\(Names.schema).integerEnum([\(values)], description: \(description))"
        case let raw? where ["Character", "Double", "Float", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64"].contains(raw):
            throw DiagnosedError(
                rawTypeSyntax.map { Syntax($0) } ?? Syntax(decl.name), "rawType",
                "@Structured describes enums with String or Int raw values (or none); '\(raw)' raw values are not supported")
        default:
            let branches = try elements.map { try Self.branch($0, owner: owner) }
            schema = "\(Names.schema).anyOf([\n\(branches.map { "            " + $0 }.joined(separator: ",\n")),\n        ], description: \(description))"
        }
        let access = accessPrefix(decl.modifiers)
        members = """
            \(access)static var jsonSchema: \(Names.json) {
                \(schema)
            }
            """
    }

    /// `{"case": {values}}` for one case: labeled values by label, unlabeled ones `_0`, `_1`…
    /// by position; optional ones may be left out.
    private static func branch(_ element: EnumCaseElementSyntax, owner: String) throws -> String {
        let name = bare(element.name.text)
        var entries: [String] = []
        var required: [String] = []
        for (index, parameter) in (element.parameterClause?.parameters ?? []).enumerated() {
            var label: String?
            if let first = parameter.firstName, first.tokenKind != .wildcard { label = bare(first.text) }
            let key = literal(label ?? "_\(index)")
            let type = try FieldType.parse(parameter.type, owner: owner)
            entries.append("(\(key), \(type.schemaCode))")
            if !type.isOptional { required.append(key) }
        }
        return "\(Names.schema).enumCase(\(literal(name)), [\(entries.joined(separator: ", "))], required: [\(required.joined(separator: ", "))])"
    }
}
