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
