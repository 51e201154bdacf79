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
}

extension LocalProvider {
    /// Sets `parameters` up for `format`: compiles its grammar against the model's vocabulary
    /// (cached per grammar), and turns off what would cut a constrained reply short or change
    /// its text after the constraint chose it (the dialogue's stop strings, the leading-space
    /// strip). Throws `ProviderError` `.invalidRequest` whose `underlying` is the
    /// `ConstraintError` that says where the schema, pattern or grammar is at fault.
    func applyConstraint(_ format: ResponseFormat?, to parameters: inout GenerationParameters, generator: Generator) throws {
        guard let format, format.isConstrained else { return }
        do {
            guard try ResponseFormatGrammar.grammar(for: format) != nil else { return }
        } catch let error as ConstraintError {
            throw ProviderError(
                .invalidRequest, provider: id, message: "response_format \(format.kind): \(error)", underlying: error)
        }
    }
}
