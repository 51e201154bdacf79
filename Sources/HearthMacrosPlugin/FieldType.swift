import SwiftSyntax

/// The type of a stored property or an enum case's value, as far as its JSON Schema goes.
indirect enum FieldType {
    /// `T?` / `Optional<T>`: the key may be absent.
    case optional(FieldType)
    /// `[T]`, `Array<T>`, `Set<T>`: a JSON array.
    case array(FieldType)
    /// `[String: T]`: a JSON object with any keys.
    case dictionary(FieldType)
    /// A standard-library scalar, with its name as written.
    case primitive(Primitive, written: String)
    /// Any other type: one that conforms to `StructuredOutput` (checked by the compiler).
    case named(String)

    /// Whether the key may be absent (the synthesized `Codable` uses `decodeIfPresent`).
    var isOptional: Bool {
        if case .optional = self { return true }
        return false
    }

    /// The type without its outer optionals.
    var unwrapped: FieldType {
        if case .optional(let inner) = self { return inner.unwrapped }
        return self
    }

    /// Swift code that builds the schema (a `JSONText.Value`).
    var schemaCode: String {
        switch self {
        case .optional(let inner): return inner.schemaCode
        case .array(let items): return "\(Names.schema).array(\(items.schemaCode))"
        case .dictionary(let values): return "\(Names.schema).dictionary(\(values.schemaCode))"
        case .primitive(let primitive, _): return "\(Names.schema).\(primitive.schemaMember)"
        case .named(let name): return "\(name).jsonSchema"
        }
    }

    /// The type of this value in a `Partial`: scalars as they are, structured types as their
    /// own `Partial`, containers of those (the property itself is made optional by the caller).
    var partialType: String {
        switch self {
        case .optional(let inner): return inner.partialType
        case .array(let items): return "[\(items.partialElementType)]"
        case .dictionary(let values): return "[String: \(values.partialElementType)]"
        case .primitive(_, let written): return written
        case .named(let name): return "\(name).Partial"
        }
    }

    private var partialElementType: String {
        if case .optional(let inner) = self { return inner.partialType + "?" }
        return partialType
    }

    /// The kind of value, for checking which guides apply.
    var kind: Kind {
        switch unwrapped {
        case .array: return .array
        case .dictionary, .named, .optional: return .other
        case .primitive(let primitive, _): return primitive.kind
        }
    }

    enum Kind { case string, number, array, other }
}

/// The scalars `@Structured` knows, and their schemas.
enum Primitive {
    case string, bool, double, int, uuid
    case bounded(minimum: Int64, maximum: Int64?)

    /// The scalar a (simple) type name stands for; nil for other types.
    init?(_ name: String) {
        switch name {
        case "String": self = .string
        case "Bool": self = .bool
        case "Double", "Float", "Float32", "Float64", "CGFloat": self = .double
        case "Int", "Int64": self = .int
        case "Int8": self = .bounded(minimum: Int64(Int8.min), maximum: Int64(Int8.max))
        case "Int16": self = .bounded(minimum: Int64(Int16.min), maximum: Int64(Int16.max))
        case "Int32": self = .bounded(minimum: Int64(Int32.min), maximum: Int64(Int32.max))
        case "UInt", "UInt64": self = .bounded(minimum: 0, maximum: nil)
        case "UInt8": self = .bounded(minimum: 0, maximum: Int64(UInt8.max))
        case "UInt16": self = .bounded(minimum: 0, maximum: Int64(UInt16.max))
        case "UInt32": self = .bounded(minimum: 0, maximum: Int64(UInt32.max))
        case "UUID": self = .uuid
        default: return nil
        }
    }

    /// The `StructuredSchema` member that builds the schema.
    var schemaMember: String {
        switch self {
        case .string: return "string"
        case .bool: return "boolean"
        case .double: return "number"
        case .int: return "integer"
        case .uuid: return "string(format: \"uuid\")"
        case .bounded(let minimum, let maximum?): return "integer(minimum: \(minimum), maximum: \(maximum))"
        case .bounded(let minimum, nil): return "integer(minimum: \(minimum))"
        }
    }

    var kind: FieldType.Kind {
        switch self {
        case .string: return .string
        case .double, .int, .bounded: return .number
        case .bool, .uuid: return .other
        }
    }
}

/// Names the generated code uses, qualified by module so an app's own types cannot shadow them.
enum Names {
    static let module = "HearthProviders"
    static let schema = "\(module).StructuredSchema"
    static let json = "\(module).JSONText.Value"
}

extension FieldType {
    /// Foundation types whose `Codable` form Hearth's decoder does not read as a JSON scalar, with
    /// what to use instead.
    static let unsupported: [String: String] = [
        "Date": "a Date decodes from seconds since 2001, which a model does not write; use a String (with @SchemaGuide(pattern:) for a date format)",
        "Data": "Data decodes from base64, which a model cannot write reliably; use a String or [UInt8]",
        "URL": "use a String and make the URL from it",
        "Decimal": "use a Double, or a String",
        "Character": "Character is not Codable; use a String with @SchemaGuide(minLength: 1, maxLength: 1)",
        "Any": "a value of any type has no schema; use a structured type or an enum",
        "AnyHashable": "a value of any type has no schema; use a structured type or an enum",
    ]

    /// The field type of `type`, or a diagnostic at the part that has no schema.
    /// - Parameter owner: the declaring type's name (a property of its own type would recurse).
    static func parse(_ type: TypeSyntax, owner: String) throws -> FieldType {
        if let optional = type.as(OptionalTypeSyntax.self) {
            return .optional(try parse(optional.wrappedType, owner: owner))
        }
        if let optional = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            return .optional(try parse(optional.wrappedType, owner: owner))
        }
        if let array = type.as(ArrayTypeSyntax.self) {
            return .array(try parse(array.element, owner: owner))
        }
        if let dictionary = type.as(DictionaryTypeSyntax.self) {
            try requireStringKey(dictionary.key)
            return .dictionary(try parse(dictionary.value, owner: owner))
        }
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            let name = identifier.name.text
            if let clause = identifier.genericArgumentClause {
                let arguments = clause.arguments.compactMap { Syntax($0.argument).as(TypeSyntax.self) }
                switch (name, arguments.count) {
                case ("Optional", 1): return .optional(try parse(arguments[0], owner: owner))
                case ("Array", 1), ("Set", 1), ("ContiguousArray", 1): return .array(try parse(arguments[0], owner: owner))
                case ("Dictionary", 2):
                    try requireStringKey(arguments[0])
                    return .dictionary(try parse(arguments[1], owner: owner))
                default:
                    throw DiagnosedError(
                        type, "unsupportedType",
                        "@Structured cannot describe '\(type.trimmedDescription)': use a structured type, an array, an optional or a [String: T] dictionary")
                }
            }
            return try simple(name, written: name, at: type, owner: owner)
        }
        if let member = type.as(MemberTypeSyntax.self), member.genericArgumentClause == nil {
            let base = member.baseType.trimmedDescription
            if base == "Swift" || base == "Foundation" {
                return try simple(member.name.text, written: member.trimmedDescription, at: type, owner: owner)
            }
            if member.trimmedDescription == owner { throw recursion(type) }
            return .named(member.trimmedDescription)
        }
        throw DiagnosedError(
            type, "unsupportedType",
            "@Structured cannot describe '\(type.trimmedDescription)': a property needs a scalar, a structured type, an array, an optional or a [String: T] dictionary")
    }

    private static func simple(_ name: String, written: String, at type: TypeSyntax, owner: String) throws -> FieldType {
        if let primitive = Primitive(name) { return .primitive(primitive, written: written) }
        if let reason = unsupported[name] {
            throw DiagnosedError(type, "unsupportedType", "@Structured cannot describe '\(name)': \(reason)")
        }
        if name == owner || name == "Self" { throw recursion(type) }
        return .named(written)
    }

    private static func recursion(_ type: TypeSyntax) -> DiagnosedError {
        DiagnosedError(
            type, "recursiveType",
            "@Structured cannot describe a type that contains itself ('\(type.trimmedDescription)'): its schema would never end")
    }

    private static func requireStringKey(_ key: TypeSyntax) throws {
        let name = key.trimmedDescription
        guard name == "String" || name == "Swift.String" else {
            throw DiagnosedError(
                key, "dictionaryKey",
                "@Structured describes dictionaries with String keys only; Codable writes a [\(name): T] as an array of alternating keys and values")
        }
    }
}
