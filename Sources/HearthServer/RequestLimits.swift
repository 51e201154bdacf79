import HearthConstraints

/// Per-request bounds of `hearth serve` that are not options (docs/SERVER.md lists every bound
/// with its default). A request over one is a 400 that names the field and the bound.
public enum RequestLimits {
    /// The most tools one request may offer (OpenAI's limit for chat completions).
    public static let maxTools = 128
    /// What compiling one request's schema, pattern, grammar or tools may cost
    /// (``CompileBudget/standard``: rules, reference depth, symbols, positions, masks, time).
    public static var compileBudget: CompileBudget { .standard }
}
