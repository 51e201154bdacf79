import SwiftDiagnostics
import SwiftSyntax

/// An error `@Structured` reports at a place in the declaration.
struct StructuredDiagnostic: DiagnosticMessage, Error {
    let message: String
    let id: String
    var diagnosticID: MessageID { MessageID(domain: "HearthMacros", id: id) }
    var severity: DiagnosticSeverity { .error }

    init(_ id: String, _ message: String) {
        self.id = id
        self.message = message
    }
}

/// A diagnostic at `node`, thrown to stop the expansion.
struct DiagnosedError: Error {
    let node: Syntax
    let message: StructuredDiagnostic

    init(_ node: some SyntaxProtocol, _ id: String, _ message: String) {
        self.node = Syntax(node)
        self.message = StructuredDiagnostic(id, message)
    }

    var diagnostic: Diagnostic { Diagnostic(node: node, message: message) }
}

extension DiagnosedError {
    /// Refuses a generic struct or enum (`owner` with `generics`): its schema would depend on the
    /// type arguments, which the declaration does not know.
    static func refuseGenerics(_ generics: GenericParameterClauseSyntax?, owner: String) throws {
        guard let generics else { return }
        throw DiagnosedError(
            generics, "genericType",
            "@Structured cannot describe a generic type ('\(owner)\(generics.trimmedDescription)'): its schema depends on the type arguments")
    }
}
