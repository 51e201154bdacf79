import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin behind HearthMacros' `@Structured` and `@SchemaGuide`.
@main
struct HearthMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [StructuredMacro.self, SchemaGuideMacro.self]
}
