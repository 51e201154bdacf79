import HearthConstraints
import HearthEngine
import HearthProviders

/// The response format of a request as the engine's constraint: the one mapping
/// `ResponseFormat` → `Grammar` → `CompiledConstraint` that `LocalProvider`, the server and
/// the CLI share.
public enum ResponseFormatGrammar {
    /// The grammar a format compiles to (nil for free text).
    /// - Throws: `ConstraintError` naming the keyword (a JSON pointer into the schema) or the
    ///   position in the pattern or grammar.
    package static func grammar(for format: ResponseFormat) throws -> Grammar? {
        switch format {
        case .text: return nil
        case .jsonObject: return try JSONSchema.anyJSONObject
        case .jsonSchema(let schema): return try JSONSchema.grammar(schema.schema)
        case .regex(let pattern): return try RegularExpression.grammar(pattern)
        case .grammar(let text, let root): return try GBNF.grammar(text, root: root)
        }
    }

    /// Sets `parameters` up to generate under `format` with `model`: compiles the grammar
    /// against the model's vocabulary (cached per grammar; the first token's leading space is
    /// then kept, as the constraint chose it). `prefix` is text already output that the
    /// constraint must accept first (a partial answer being continued). Does nothing for free text.
    /// - Throws: `ConstraintError` (see ``grammar(for:)``; `.unsatisfiable` when `prefix` cannot
    ///   begin an output of the format).
    package static func apply(
        _ format: ResponseFormat?, to parameters: inout GenerationParameters, model: TransformerModel, prefix: String = ""
    ) throws {
        guard let format, let grammar = try grammar(for: format) else { return }
        try apply(grammar, to: &parameters, model: model, prefix: prefix)
    }

    /// Sets `parameters` up to generate under `grammar` (compiled against `model`'s vocabulary,
    /// cached), after `prefix`, text already output that the grammar must accept first.
    /// - Throws: `ConstraintError` `.unsatisfiable` when `prefix` cannot begin an output.
    package static func apply(_ grammar: Grammar, to parameters: inout GenerationParameters, model: TransformerModel, prefix: String = "")
        throws
    {
        let constraint = try model.compileConstraint(grammar)
        if !prefix.isEmpty {
            var matcher = ConstraintMatcher(constraint)
            guard matcher.advance(bytes: Array(prefix.utf8)) else {
                throw ConstraintError(
                    .unsatisfiable, "the partial answer to continue (\(prefix.utf8.count) bytes) does not begin an output of the constraint")
            }
            parameters.constraintPrefix = Array(prefix.utf8)
        }
        parameters.constraint = constraint
    }
}

extension LocalProvider {
    /// Sets `parameters` up for `format` (``ResponseFormatGrammar/apply(_:to:model:prefix:)``)
    /// and drops the dialogue's stop strings, which would cut a constrained reply short (the
    /// grammar ends it; the caller's own stop strings stay). Throws `ProviderError`
    /// `.invalidRequest` whose `underlying` is the `ConstraintError` that says where the schema,
    /// pattern or grammar is at fault.
    func applyConstraint(
        _ format: ResponseFormat?, stop: [String], continuation: String?, to parameters: inout GenerationParameters,
        generator: Generator
    ) throws {
        guard let format, format.isConstrained else { return }
        do {
            try ResponseFormatGrammar.apply(format, to: &parameters, model: generator.model, prefix: continuation ?? "")
        } catch let error as ConstraintError {
            throw ProviderError(
                .invalidRequest, provider: id, message: "response_format \(format.kind): \(error)", underlying: error)
        }
        parameters.stop = stop
    }
}
