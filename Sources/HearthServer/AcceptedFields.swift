/// The request fields each endpoint accepts: every field the official API defines for it
/// (Tests/Fixtures/api-fields.json, read from the current official SDKs by
/// scripts/make_api_fields.py) and the llama-server / vLLM extras clients send. Each is
/// honoured, accepted as a hint (informational fields: recorded or used as a cache hint,
/// checked for shape, never refused), or refused — with a 400 naming it and why — where the
/// model cannot do what it asks at all (docs/SERVER.md, "Request fields", lists each with what
/// it does and the test that shows it; `AcceptedFieldsTests` keeps that table, these lists and
/// the SDKs' fields equal). Any other field is refused with a 400 naming it, as the official
/// APIs refuse arguments they do not define — never accepted and ignored. A field sent as
/// `null` counts as absent.
enum AcceptedFields {
    /// The sampling, length and format fields chat and text completions share.
    static let openAISampling: Set<String> = [
        "model", "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "seed",
        "stop", "logit_bias", "max_tokens", "max_completion_tokens", "n", "response_format", "json_schema", "grammar", "stream",
        "stream_options", "ignore_eos", "user", "finish_in_budget",
    ]
    /// The informational fields of the OpenAI APIs that carry them (``RequestParser/openAIHints(_:)``).
    static let openAIHints: Set<String> = [
        "metadata", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "prompt_cache_options", "service_tier",
    ]
    static let chatCompletions = openAISampling.union(openAIHints).union([
        "messages", "tools", "tool_choice", "parallel_tool_calls", "logprobs", "top_logprobs", "store", "functions", "function_call",
        "reasoning_effort", "verbosity", "prediction", "modalities", "audio", "web_search_options", "moderation",
        "chat_template_kwargs",  // extra: llama-server's and vLLM's variables for the chat template (issue 58)
        "documents",  // extra: vLLM's, the chat template's documents (issue 58)
        "continue_final_message",  // extra: vLLM's, the last (assistant) message continued (issue 58)
    ])
    /// A chat message's fields.
    static let chatMessage: Set<String> = [
        "role", "content", "tool_calls", "tool_call_id", "name", "refusal", "function_call", "audio",
        "reasoning_content", "reasoning",  // extras: an earlier turn's reasoning (DeepSeek, vLLM, llama-server; issue 57)
        "annotations",  // the reply's own url citations, sent back when a client appends the reply message as it came
    ]
    static let completions = openAISampling.union(["prompt", "logprobs", "echo", "suffix", "best_of"])
    static let messages: Set<String> = [
        "model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k", "stop_sequences", "stream", "tools",
        "tool_choice", "output_format", "output_config", "metadata", "thinking", "cache_control", "service_tier", "speed",
        "inference_geo", "diagnostics", "context_management", "billing_policy", "fallback_credit_token", "fallbacks", "container",
        "mcp_servers", "thread", "compaction",
    ]
    static let countTokens: Set<String> = [
        "model", "messages", "system", "tools", "tool_choice", "output_config", "thinking", "cache_control", "speed",
        "context_management", "billing_policy", "mcp_servers", "compaction",
    ]
    static let responses: Set<String> = openAIHints.union([
        "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text", "temperature", "top_p",
        "max_output_tokens", "stream", "stream_options", "store", "include", "truncation", "previous_response_id", "reasoning",
        "top_logprobs", "user", "background", "background_options", "conversation", "prompt", "context_management",
        "max_tool_calls", "access_programs", "image", "moderation",
    ])
    static let embeddings: Set<String> = ["model", "input", "encoding_format", "dimensions", "user"]
    static let tokenize: Set<String> = ["model", "content", "prompt", "add_special", "with_pieces"]
    static let detokenize: Set<String> = ["model", "tokens"]

    /// Every endpoint's list, by path (the audit test reads them all).
    static let byEndpoint: [(path: String, fields: Set<String>)] = [
        ("/v1/chat/completions", chatCompletions), ("/v1/chat/completions messages[]", chatMessage),
        ("/v1/completions", completions), ("/v1/messages", messages), ("/v1/messages/count_tokens", countTokens),
        ("/v1/responses", responses), ("/v1/embeddings", embeddings), ("/tokenize", tokenize), ("/detokenize", detokenize),
        ("/api/chat", OllamaFields.chat), ("/api/chat options", OllamaFields.options), ("/api/generate", OllamaFields.generate),
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
