import Foundation

/// A compiled Jinja template, rendered as Hugging Face transformers renders chat templates:
/// jinja2's `ImmutableSandboxedEnvironment` with `trim_blocks` and `lstrip_blocks`, the
/// `loopcontrols` extension (`break`, `continue`), the `{% generation %}` tag, and the globals
/// `raise_exception`, `strftime_now`, `namespace`, `dict`, `range` and the `tojson` filter
/// (`json.dumps` with `ensure_ascii=False`).
///
/// Compiling and rendering never trap on template input: every failure is a `TemplateError`
/// with a line and column, and `TemplateLimits` bounds size, time and depth.
package struct Template: @unchecked Sendable {
    // @unchecked: the syntax tree is immutable after parsing (its classes hold only `let`s).
    let nodes: [Node]
    /// The variable names the template uses, interned (the render's top frame is keyed by them).
    let names: NameTable
    /// The template's source text.
    package let source: String
    /// The bounds every render of this template runs under.
    package let limits: TemplateLimits

    /// Compiles `source`.
    ///
    /// - Throws: `TemplateError` (`.syntax`, `.unsupported`, or `.limit` when the source is larger
    ///   than `limits.maxTemplateBytes` or nests deeper than `limits.maxNesting`).
    package init(_ source: String, limits: TemplateLimits = .default) throws {
        if source.utf8.count > limits.maxTemplateBytes {
            throw TemplateError(.limit, "template is \(source.utf8.count) bytes, more than the limit of \(limits.maxTemplateBytes)")
        }
        self.source = source
        self.limits = limits
        (self.nodes, self.names) = try Parser.parse(source, limits: limits)
    }

    /// Renders the template with `context` as its variables.
    ///
    /// - Parameters:
    ///   - now: the time `strftime_now` formats.
    ///   - timeZone: the zone `strftime_now` formats `now` in (Python's `datetime.now()` is local).
    /// - Throws: `TemplateError` for anything the template does wrong, including
    ///   `raise_exception(...)` (`.raised`, with the template's message) and bounds (`.limit`).
    package func render(_ context: [String: JinjaValue], now: Date = Date(), timeZone: TimeZone = .current) throws -> String {
        let evaluator = Evaluator(limits: limits, now: now, timeZone: timeZone)
        let scope = Scope(context, names: names)
        _ = try evaluator.run(nodes, scope)
        return evaluator.buffers[0]
    }
}
