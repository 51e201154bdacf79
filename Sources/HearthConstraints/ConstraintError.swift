/// Why a schema, pattern or grammar cannot be used as a constraint.
package struct ConstraintError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        /// The text does not parse (a GBNF grammar, a regular expression, a JSON document).
        case syntax
        /// A JSON Schema keyword, or a feature of a pattern, that is not enforced (never dropped silently).
        case unsupported
        /// A well-formed constraint that no output can meet (an empty `enum`, `minItems` > `maxItems`).
        case unsatisfiable
        /// A grammar that is malformed: an undefined rule, left recursion.
        case invalidGrammar
        /// A constraint beyond the compile bounds (too many states, a repeat count too large).
        case tooComplex
    }

    /// What kind of problem.
    package var kind: Kind
    /// What is wrong and how to fix it.
    package var message: String
    /// Where: a JSON pointer into the schema (`/properties/age/minimum`), a rule name, or an
    /// offset into the pattern or grammar text; empty when it concerns the whole constraint.
    package var location: String
    /// Which of several schemas compiled together (``JSONSchema/grammar(schemas:root:)``, e.g.
    /// the tools of a request) the problem is in; nil for a single constraint.
    package var schemaIndex: Int?

    package init(_ kind: Kind, _ message: String, at location: String = "") {
        self.kind = kind
        self.message = message
        self.location = location
    }

    package var description: String { location.isEmpty ? message : "\(message) (at \(location))" }
}
