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
    public static func grammar(for format: ResponseFormat) throws -> Grammar? {
        switch format {
        case .text: return nil
        default:
            // Filled in when HearthConstraints' front ends land (JSONSchema, RegularExpression, GBNF).
            throw ConstraintError(.unsupported, "structured output is not built into this Hearth yet (\(format.kind))")
        }
    }

    /// Sets `parameters` up to generate under `format` with `model`: compiles the grammar
    /// against the model's vocabulary (cached per grammar) and keeps the first token's leading
    /// space (the constraint chose it). Does nothing for free text.
    /// - Throws: `ConstraintError` (see ``grammar(for:)``).
    public static func apply(_ format: ResponseFormat?, to parameters: inout GenerationParameters, model: LanguageModel) throws {
        guard let format, let grammar = try grammar(for: format) else { return }
        _ = grammar
        _ = model
        parameters.stripLeadingSpace = false
    }
}

extension LocalProvider {
    /// Sets `parameters` up for `format` (``ResponseFormatGrammar/apply(_:to:model:)``) and drops
    /// the dialogue's stop strings, which would cut a constrained reply short (the grammar
    /// ends it; the caller's own stop strings stay). Throws `ProviderError` `.invalidRequest`
    /// whose `underlying` is the `ConstraintError` that says where the schema, pattern or
    /// grammar is at fault.
    func applyConstraint(
        _ format: ResponseFormat?, stop: [String], to parameters: inout GenerationParameters, generator: Generator
    ) throws {
        guard let format, format.isConstrained else { return }
        do {
            try ResponseFormatGrammar.apply(format, to: &parameters, model: generator.model)
        } catch let error as ConstraintError {
            throw ProviderError(
                .invalidRequest, provider: id, message: "response_format \(format.kind): \(error)", underlying: error)
        }
        parameters.stop = stop
    }
}
