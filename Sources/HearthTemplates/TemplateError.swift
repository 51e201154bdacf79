/// A position in a template's source: 1-based line and column (columns count Unicode scalars).
public struct SourcePosition: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line.
    public var line: Int
    /// 1-based column, in Unicode scalars.
    public var column: Int

    /// A position at `line`, `column`.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "line \(line), column \(column)" }
}

/// Why a template could not be compiled or rendered.
///
/// Every failure of `Template` is one of these: a template from a model file can be wrong or
/// hostile, and the caller (a server) must be able to report it, never crash on it.
public struct TemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The family of failure; mirrors the exception Python's jinja2 raises for the same input.
    public enum Kind: String, Sendable, Equatable {
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
    public var kind: Kind
    /// What went wrong, for a person.
    public var message: String
    /// Where in the template it went wrong, when known.
    public var position: SourcePosition?

    /// An error of `kind` with `message`, at `position` if known.
    public init(_ kind: Kind, _ message: String, at position: SourcePosition? = nil) {
        self.kind = kind
        self.message = message
        self.position = position
    }

    public var description: String {
        if let position { return "template \(kind.rawValue) error at \(position): \(message)" }
        return "template \(kind.rawValue) error: \(message)"
    }
}

/// Bounds on one compile and one render, so that a hostile template can neither hang nor exhaust
/// the process. The defaults are far above what any real chat template needs (the largest in
/// the test corpus renders a long conversation in a few thousand steps).
public struct TemplateLimits: Sendable, Equatable {
    /// Largest template source, in UTF-8 bytes.
    public var maxTemplateBytes: Int
    /// Largest output (and largest string value built while rendering), in UTF-8 bytes.
    public var maxOutputBytes: Int
    /// Most evaluation steps in one render (loop iterations, calls, expression nodes, values
    /// visited by filters); bounds time.
    public var maxSteps: Int
    /// Deepest nesting of macro calls (and `caller()` calls) in one render.
    public var maxCallDepth: Int
    /// Deepest nesting of statements and expressions in the source.
    public var maxNesting: Int
    /// Deepest nesting of a value (lists and dicts within lists and dicts) that is printed,
    /// compared or serialised.
    public var maxValueDepth: Int
    /// Most items in one list built while rendering (`range`, `+`, `*`).
    public var maxListLength: Int

    /// Bounds with the given values; every default is documented on its property.
    public init(
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
    public static let `default` = TemplateLimits()
}
