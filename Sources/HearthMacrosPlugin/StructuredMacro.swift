import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Structured`: a `StructuredOutput` conformance — the JSON Schema of what the type's
/// synthesized `Codable` reads, and for a struct a `Partial` type with every property optional.
public struct StructuredMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        let description = argument(node, "description")
        let members: String
        do {
            if let structure = declaration.as(StructDeclSyntax.self) {
                members = try StructSchema(structure, description: description).members
            } else if let enumeration = declaration.as(EnumDeclSyntax.self) {
                members = try EnumSchema(enumeration, description: description).members
            } else {
                let kind =
                    declaration.is(ClassDeclSyntax.self)
                    ? "a class" : declaration.is(ActorDeclSyntax.self) ? "an actor" : declaration.is(ProtocolDeclSyntax.self) ? "a protocol" : "this declaration"
                throw DiagnosedError(
                    node, "notStructOrEnum",
                    "@Structured applies to a struct or an enum, not \(kind): a model generates values, and a value type's Codable is what its schema describes")
            }
        } catch let error as DiagnosedError {
            context.diagnose(error.diagnostic)
            return []
        }
        let conformance = protocols.isEmpty ? "" : ": \(Names.module).StructuredOutput"
        let code = "extension \(type.trimmedDescription)\(conformance) {\n\(members)\n}"
        guard let decl = DeclSyntax(stringLiteral: code).as(ExtensionDeclSyntax.self) else { return [] }
        return [decl]
    }

    /// The source of the labeled argument `label` of the attribute, if given.
    static func argument(_ node: AttributeSyntax, _ label: String) -> String? {
        guard case .argumentList(let list) = node.arguments else { return nil }
        return list.first { $0.label?.text == label }?.expression.trimmedDescription
    }
}

/// `@SchemaGuide(...)`: read by `@Structured` on the type around it; expands to nothing.
public struct SchemaGuideMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        if !declaration.is(VariableDeclSyntax.self) {
            context.diagnose(
                DiagnosedError(node, "guideTarget", "@SchemaGuide applies to a stored property of a @Structured struct").diagnostic)
        }
        return []
    }
}

/// The access modifier the generated members need (`public` for a public type).
func accessPrefix(_ modifiers: DeclModifierListSyntax) -> String {
    for modifier in modifiers {
        switch modifier.name.tokenKind {
        case .keyword(.public), .keyword(.open): return "public "
        case .keyword(.package): return "package "
        default: continue
        }
    }
    return ""
}

/// A string literal of `text` (an identifier or key, so no escapes are needed beyond `"` and `\`).
func literal(_ text: String) -> String {
    var out = "\""
    for character in text {
        if character == "\\" || character == "\"" { out.append("\\") }
        out.append(character)
    }
    return out + "\""
}

/// An identifier without its backticks (the key Codable uses).
func bare(_ name: String) -> String {
    name.hasPrefix("`") && name.hasSuffix("`") && name.count >= 2 ? String(name.dropFirst().dropLast()) : name
}
