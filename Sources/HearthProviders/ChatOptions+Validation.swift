/// A generation option outside the range every provider (and Hearth's engine) accepts.
public struct InvalidGenerationOption: Error, Sendable, Equatable, CustomStringConvertible {
    /// The option's name as the REPL's `/set`, the server's JSON and the CLI (with dashes) spell it.
    public var field: String
    /// What is wrong and what is accepted, for a person.
    public var message: String

    /// Creates the error.
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { message }
}

extension ChatOptions {
    /// Checks every set option against the ranges the engine accepts (the one validation the
    /// CLI, the REPL, `LocalProvider` and the server share): temperature ≥ 0, top_p in (0, 1],
    /// top_k ≥ 0, min_p in [0, 1), max_tokens ≥ 1, repetition_penalty > 0, finite penalties, and
    /// a response format that is well-formed (``ResponseFormat/validate()``) and tools that are
    /// (``validateTools()``).
    /// Throws ``InvalidGenerationOption`` naming the first bad one.
    public func validate() throws(InvalidGenerationOption) {
        func bad(_ field: String, _ rule: String, _ value: Any) -> InvalidGenerationOption {
            InvalidGenerationOption(field: field, message: "\(field) \(rule), got \(value)")
        }
        if let temperature, !(temperature >= 0 && temperature.isFinite) {
            throw bad("temperature", "must be a number ≥ 0", temperature)
        }
        if let topP, !(topP > 0 && topP <= 1) { throw bad("top_p", "must be in (0, 1]", topP) }
        if let topK, topK < 0 { throw bad("top_k", "must be a whole number ≥ 0", topK) }
        if let minP, !(minP >= 0 && minP < 1) { throw bad("min_p", "must be in [0, 1) (1 would keep only the top token: use temperature 0)", minP) }
        if let maxTokens, maxTokens < 1 { throw bad("max_tokens", "must be a whole number ≥ 1", maxTokens) }
        if let budget = reasoning?.budgetTokens, budget < 0 {
            throw bad("reasoning.budget_tokens", "must be a whole number ≥ 0 (0: no reasoning)", budget)
        }
        if let repetitionPenalty, !(repetitionPenalty > 0 && repetitionPenalty.isFinite) {
            throw bad("repetition_penalty", "must be a number > 0 (1 is off)", repetitionPenalty)
        }
        if let presencePenalty, !presencePenalty.isFinite { throw bad("presence_penalty", "must be finite", presencePenalty) }
        if let frequencyPenalty, !frequencyPenalty.isFinite { throw bad("frequency_penalty", "must be finite", frequencyPenalty) }
        if logitBias.count > 300 { throw bad("logit_bias", "may name at most 300 tokens", "\(logitBias.count)") }
        if let (id, value) = logitBias.first(where: { !($0.value >= -100 && $0.value <= 100) }) {
            throw bad("logit_bias", "values must be in -100...100", "\(value) for token \(id)")
        }
        if let id = logitBias.keys.first(where: { $0 < 0 }) { throw bad("logit_bias", "keys must be token ids ≥ 0", id) }
        try responseFormat?.validate()
        try validateTools()
    }
}
