/// A position in a template's source: 1-based line and column (columns count Unicode scalars).
package struct SourcePosition: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line.
    package var line: Int
    /// 1-based column, in Unicode scalars.
    package var column: Int

    /// A position at `line`, `column`.
    package init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    package var description: String { "line \(line), column \(column)" }
}

/// Why a template could not be compiled or rendered.
///
/// Every failure of `Template` is one of these: a template from a model file can be wrong or
/// hostile, and the caller (a server) must be able to report it, never crash on it.
package struct TemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The family of failure; mirrors the exception Python's jinja2 raises for the same input.
    package enum Kind: String, Sendable, Equatable {
        /// The source does not parse (jinja2's `TemplateSyntaxError`).
        case syntax
        /// Something the template calls or names is not supported here (a jinja2 feature that
        /// chat templates do not use, an unknown filter or test).
        case unsupported
        /// A value that is undefined was used in a way that needs a value (jinja2's `UndefinedError`).
        case undefined
        /// An operation on values of the wrong type (Python's `TypeError`, `ValueError`, `KeyError`…).
        case type
        /// The template called `raise_exception(message)` (transformers' global).
        case raised
        /// The sandbox refused an operation (jinja2's `SecurityError`).
        case security
        /// A bound of `TemplateLimits` was reached.
        case limit
    }

    /// The family of failure.
    package var kind: Kind
    /// What went wrong, for a person.
    package var message: String
    /// Where in the template it went wrong, when known.
    package var position: SourcePosition?

    /// An error of `kind` with `message`, at `position` if known.
    package init(_ kind: Kind, _ message: String, at position: SourcePosition? = nil) {
        self.kind = kind
        self.message = message
        self.position = position
    }

    package var description: String {
        if let position { return "template \(kind.rawValue) error at \(position): \(message)" }
        return "template \(kind.rawValue) error: \(message)"
    }
}

/// Bounds on one compile and one render, so that a hostile template can neither hang nor exhaust
/// the process. The defaults are far above what any real chat template needs (the largest in
/// the test corpus renders a long conversation in a few thousand steps).
package struct TemplateLimits: Sendable, Equatable {
    /// Largest template source, in UTF-8 bytes.
    package var maxTemplateBytes: Int
    /// Largest output (and largest string value built while rendering), in UTF-8 bytes.
    package var maxOutputBytes: Int
    /// Most evaluation steps in one render (loop iterations, calls, expression nodes, values
    /// visited by filters); bounds time.
    package var maxSteps: Int
    /// Deepest nesting of macro calls (and `caller()` calls) in one render.
    package var maxCallDepth: Int
    /// Deepest nesting of statements and expressions in the source.
    package var maxNesting: Int
    /// Deepest nesting of a value (lists and dicts within lists and dicts) that is printed,
    /// compared or serialised.
    package var maxValueDepth: Int
    /// Most items in one list built while rendering (`range`, `+`, `*`).
    package var maxListLength: Int

    /// Bounds with the given values; every default is documented on its property.
    package init(
        maxTemplateBytes: Int = 1 << 20, maxOutputBytes: Int = 8 << 20, maxSteps: Int = 10_000_000,
        maxCallDepth: Int = 32, maxNesting: Int = 100, maxValueDepth: Int = 256, maxListLength: Int = 1_000_000
    ) {
        self.maxTemplateBytes = maxTemplateBytes
        self.maxOutputBytes = maxOutputBytes
        self.maxSteps = maxSteps
        self.maxCallDepth = maxCallDepth
        self.maxNesting = maxNesting
        self.maxValueDepth = maxValueDepth
        self.maxListLength = maxListLength
    }

    /// The defaults.
    package static let `default` = TemplateLimits()
}
