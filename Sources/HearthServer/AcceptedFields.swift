/// The request fields each endpoint accepts. Every one is honoured or refused for the values it
/// cannot honour (docs/SERVER.md, "Request fields", lists each with what it does and the test
/// that shows it; `AcceptedFieldsTests` keeps that table and these lists equal). Any other
/// field is refused with a 400 naming it, as the official APIs refuse arguments they do not
/// define — never accepted and ignored. A field sent as `null` counts as absent.
enum AcceptedFields {
    /// The sampling, length and format fields chat and text completions share.
    static let openAISampling: Set<String> = [
        "model", "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "seed",
        "stop", "logit_bias", "max_tokens", "max_completion_tokens", "n", "response_format", "json_schema", "grammar", "stream",
        "stream_options", "ignore_eos",
    ]
    static let chatCompletions = openAISampling.union([
        "messages", "tools", "tool_choice", "parallel_tool_calls", "logprobs", "top_logprobs", "store",
    ])
    /// A chat message's fields.
    static let chatMessage: Set<String> = ["role", "content", "tool_calls", "tool_call_id"]
    static let completions = openAISampling.union(["prompt", "logprobs", "echo", "suffix", "best_of"])
    static let messages: Set<String> = [
        "model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k", "stop_sequences", "stream", "tools",
        "tool_choice", "output_format", "output_config",
    ]
    static let countTokens: Set<String> = ["model", "messages", "system", "tools", "tool_choice"]
    static let responses: Set<String> = [
        "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text", "temperature", "top_p",
        "max_output_tokens", "stream", "store", "metadata", "include", "truncation", "previous_response_id", "reasoning",
    ]
    static let embeddings: Set<String> = ["model", "input", "encoding_format", "dimensions"]
    static let tokenize: Set<String> = ["model", "content", "prompt", "add_special", "with_pieces"]
    static let detokenize: Set<String> = ["model", "tokens"]

    /// Every endpoint's list, by path (the audit test reads them all).
    static let byEndpoint: [(path: String, fields: Set<String>)] = [
        ("/v1/chat/completions", chatCompletions), ("/v1/chat/completions messages[]", chatMessage),
        ("/v1/completions", completions), ("/v1/messages", messages), ("/v1/messages/count_tokens", countTokens),
        ("/v1/responses", responses), ("/v1/embeddings", embeddings), ("/tokenize", tokenize), ("/detokenize", detokenize),
    ]
}

extension Fields {
    /// Refuses the first field (in the order sent) that is not in `accepted`: a 400 naming it,
    /// worded as OpenAI words it or, with `anthropic`, as Anthropic does.
    func refuseUnknown(_ accepted: Set<String>, anthropic: Bool = false) throws {
        guard let (key, _) = pairs.first(where: { !accepted.contains($0.0) && $0.1 != .null }) else { return }
        let field = name(key)
        let shown = String(field.prefix(80))
        throw APIError.invalid(
            field,
            anthropic
                ? "\(shown): Extra inputs are not permitted (this server does not support this field)."
                : "Unrecognized request argument supplied: \(shown) (this server does not support it).",
            code: "unknown_parameter")
    }
}
