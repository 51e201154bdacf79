import Foundation

/// What a request says about itself without asking for other output: who it is for, how its
/// prompt may be cached, which tier, region or speed the client would like, how much a reasoning
/// model may think. The official APIs define these fields and the clients agents run send them
/// on every request (Claude Code's `metadata.user_id` and `cache_control`, a Responses agent's
/// `prompt_cache_key` and `store: false`), so each is accepted, checked for shape, and kept
/// here: the prompt cache takes ``cacheKey`` as a hint, the Responses object echoes the
/// reasoning it was allowed, and none of them changes the answer.
///
/// Reasoning is permission, not a demand: OpenAI's `reasoning_effort` / `reasoning` and
/// Anthropic's `thinking` / `output_config.effort` on a model that does not reason in separate
/// tokens are accepted and the reply simply has no reasoning part.
struct RequestHints: Sendable {
    /// OpenAI `prompt_cache_key`: groups requests that share a prefix (a hint for the prompt cache).
    var cacheKey: String?
    /// OpenAI `prompt_cache_retention` / `prompt_cache_options.ttl`, Anthropic `cache_control.ttl`:
    /// how long the client would like its prefix kept (a hint).
    var cacheRetention: String?
    /// The end user as the client names it: OpenAI `user` / `safety_identifier`, Anthropic
    /// `metadata.user_id` (never logged with the prompt; the server has no use for it beyond
    /// keeping it with the request).
    var user: String?
    /// The service tier asked for (`service_tier`); answers report the one used.
    var serviceTier: String?
    /// The reasoning the request allows.
    var reasoning = Reasoning()

    /// The reasoning a request allows, as it asked (OpenAI `reasoning_effort`,
    /// `reasoning.effort` / `.summary`; Anthropic `thinking`, `output_config.effort`).
    struct Reasoning: Sendable, Equatable {
        /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`.
        var effort: String?
        /// Responses `reasoning.summary`: `auto`, `concise`, `detailed`.
        var summary: String?
        /// Anthropic `thinking.type`: `enabled`, `disabled`, `adaptive`, `between_tools`.
        var thinking: String?
        /// Anthropic `thinking.budget_tokens`: the most tokens reasoning may take.
        var budgetTokens: Int?
    }
}

/// The values the current SDKs define for the fields ``RequestHints`` checks
/// (openai-python 3.57, anthropic-sdk-python 2.14; Tests/Fixtures/api-fields.json).
enum HintValues {
    static let reasoningEffort = ["none", "minimal", "low", "medium", "high", "xhigh", "max"]
    static let reasoningSummary = ["auto", "concise", "detailed"]
    static let anthropicEffort = ["low", "medium", "high", "xhigh", "max"]
    static let thinking = ["enabled", "disabled", "adaptive", "between_tools"]
    static let verbosity = ["low", "medium", "high"]
    /// Responses `include`: each asks for a part of the answer. Hearth has logprobs; the others
    /// ask for outputs of hosted tools, images or encrypted reasoning it never produces, so
    /// there is nothing to include.
    static let includable = [
        "file_search_call.results", "web_search_call.results", "web_search_call.action.sources", "message.input_image.image_url",
        "computer_call_output.output.image_url", "code_interpreter_call.outputs", "reasoning.encrypted_content",
        "message.output_text.logprobs",
    ]
}

extension RequestParser {
    /// A 400 for a field this server cannot honour at all (the model has no such capability):
    /// OpenAI's `unsupported_parameter`, the message naming the field and why.
    static func unsupported(_ param: String, _ why: String) -> APIError {
        APIError.invalid(param, "Unsupported parameter: '\(param)' \(why)", code: "unsupported_parameter")
    }

    /// A string field whose value must be one of `allowed` (nil when absent).
    static func choice(_ f: Fields, _ key: String, _ allowed: [String]) throws -> String? {
        guard let value = try f.string(key) else { return nil }
        guard allowed.contains(value) else {
            throw APIError.invalid(
                f.name(key), "'\(f.name(key))' must be one of \(allowed.joined(separator: ", ")), got '\(value.prefix(40))'.")
        }
        return value
    }

    /// An object field, as ``Fields`` (nil when absent).
    static func object(_ f: Fields, _ key: String) throws -> Fields? {
        guard let value = f.value(key) else { return nil }
        guard case .object = value else { throw f.wrongType(key, "an object", value) }
        return try Fields(value, prefix: f.name(key))
    }

    // MARK: OpenAI

    /// The informational fields chat completions, text completions, the Responses API and
    /// embeddings share: `user`, `safety_identifier`, `prompt_cache_key`,
    /// `prompt_cache_retention`, `prompt_cache_options`, `service_tier`, `metadata` (≤ 16 string
    /// pairs, as OpenAI bounds them), and `stream_options.include_obfuscation` (nothing to
    /// obfuscate on a local link). Only the fields present are read; each endpoint's
    /// ``AcceptedFields`` list says which it takes.
    static func openAIHints(_ f: Fields) throws -> RequestHints {
        var hints = RequestHints()
        hints.user = try f.string("user")
        if let safety = try f.string("safety_identifier") { hints.user = safety }
        hints.cacheKey = try f.string("prompt_cache_key")
        hints.cacheRetention = try f.string("prompt_cache_retention")
        if let options = try object(f, "prompt_cache_options") {
            _ = try options.string("mode")
            if let ttl = try options.string("ttl") { hints.cacheRetention = ttl }
        }
        hints.serviceTier = try f.string("service_tier")
        _ = try metadata(f)
        return hints
    }

    /// Chat completions' fields beyond sampling: `reasoning_effort` (permission), `verbosity`
    /// and `prediction` (hints), and the ones that ask for what a text model cannot do — audio
    /// out (`audio`, `modalities` with `audio`), hosted web search (`web_search_options`), a
    /// moderation model (`moderation`) — refused by name with the reason.
    static func chatHints(_ f: Fields) throws -> RequestHints {
        var hints = try openAIHints(f)
        hints.reasoning.effort = try choice(f, "reasoning_effort", HintValues.reasoningEffort)
        _ = try choice(f, "verbosity", HintValues.verbosity)
        if let prediction = try object(f, "prediction") {
            guard try prediction.string("type") == "content" else {
                throw APIError.invalid(prediction.name("type"), "'prediction.type' must be content.")
            }
            switch prediction.value("content") {
            case .string?, .array?: break
            case nil: throw APIError.invalid(prediction.name("content"), "'prediction.content' is required.", code: "missing_field")
            case let other?: throw prediction.wrongType("content", "a string or an array of text parts", other)
            }
        }
        if let modalities = try f.array("modalities") {
            for (index, item) in modalities.enumerated() {
                guard case .string(let modality) = item else { throw APIError.invalid("modalities[\(index)]", "'modalities' holds strings.", code: "invalid_type") }
                guard modality == "text" else {
                    throw APIError.invalid(
                        "modalities", "Unsupported value: 'modalities' includes '\(modality.prefix(20))'; this server's models produce text only.",
                        code: "unsupported_value")
                }
            }
        }
        if f.value("audio") != nil { throw unsupported("audio", "asks for spoken output; this server's models produce text only.") }
        try refuseHostedFields(f)
        return hints
    }

    /// Fields that ask for a hosted service this server does not run.
    static func refuseHostedFields(_ f: Fields) throws {
        if f.value("web_search_options") != nil {
            throw unsupported("web_search_options", "asks for hosted web search, which this server does not have; give the model a search function in 'tools' instead.")
        }
        if f.value("moderation") != nil {
            throw unsupported("moderation", "asks for a moderation model, which this server does not run (a gateway's content filter is set in its configuration).")
        }
    }

    /// `stream_options` of chat and text completions (`include_usage`, `include_obfuscation`) or
    /// the Responses API (`include_obfuscation`): whether a usage chunk is asked for.
    static func streamOptions(_ f: Fields, keys: Set<String>) throws -> Bool {
        guard let options = f.value("stream_options") else { return false }
        let fields = try Fields(options, prefix: "stream_options")
        try fields.refuseUnknown(keys)
        _ = try fields.bool("include_obfuscation")
        return keys.contains("include_usage") ? try fields.bool("include_usage") ?? false : false
    }

    /// The Responses API's fields beyond the conversation and sampling: `reasoning` (permission;
    /// echoed), `include` (each value one the API defines; logprobs honoured, the rest name parts
    /// Hearth never produces), `top_logprobs`, and the hints `access_programs`, `image`,
    /// `background_options`, `context_management`, `max_tool_calls`. Refused with the reason:
    /// `background: true`, `conversation` and `prompt` (nothing is stored here), `moderation`.
    /// Returns the hints and how many alternatives per token logprobs were asked for (nil: none).
    static func responsesHints(_ f: Fields) throws -> (RequestHints, logprobs: Int?) {
        var hints = try openAIHints(f)
        if let reasoning = try object(f, "reasoning") {
            hints.reasoning.effort = try choice(reasoning, "effort", HintValues.reasoningEffort)
            hints.reasoning.summary = try choice(reasoning, "summary", HintValues.reasoningSummary)
            if let legacy = try choice(reasoning, "generate_summary", HintValues.reasoningSummary), hints.reasoning.summary == nil {
                hints.reasoning.summary = legacy
            }
            _ = try reasoning.string("context")
            _ = try reasoning.string("mode")
        }
        if try f.bool("background") == true {
            throw unsupported("background", "cannot be true: this server answers within the request and keeps no responses to poll.")
        }
        if f.value("conversation") != nil {
            throw unsupported("conversation", "names a stored conversation; this server keeps none: send the whole conversation in 'input'.")
        }
        if f.value("prompt") != nil {
            throw unsupported("prompt", "names a stored prompt template; this server keeps none: send the prompt in 'instructions' and 'input'.")
        }
        try refuseHostedFields(f)
        _ = try object(f, "access_programs")
        _ = try object(f, "image")
        _ = try object(f, "background_options")
        _ = try f.int("max_tool_calls", in: 0...Int(Int32.max))
        for (index, item) in (try f.array("context_management") ?? []).enumerated() {
            let entry = try Fields(item, prefix: "context_management[\(index)]")
            _ = try requiredType(entry)
            _ = try entry.int("compact_threshold", in: 0...Int.max)
        }
        var logprobs = try f.int("top_logprobs", in: 0...20)
        for (index, item) in (try f.array("include") ?? []).enumerated() {
            guard case .string(let value) = item else { throw APIError.invalid("include[\(index)]", "'include' holds strings.", code: "invalid_type") }
            guard HintValues.includable.contains(value) else {
                throw APIError.invalid(
                    "include[\(index)]", "'include[\(index)]': '\(value.prefix(60))' is not a value the Responses API defines.")
            }
            if value == "message.output_text.logprobs", logprobs == nil { logprobs = 0 }
        }
        return (hints, logprobs)
    }

    private static func requiredType(_ f: Fields) throws -> String {
        guard let type = try f.string("type") else { throw APIError.invalid(f.name("type"), "'\(f.name("type"))' is required.", code: "missing_field") }
        return type
    }

    // MARK: Anthropic

    /// Anthropic Messages' fields beyond the conversation and sampling (count_tokens takes a
    /// subset): `metadata` (`user_id` only), `thinking` (permission: `enabled` with a
    /// `budget_tokens` ≥ 1, `disabled`, `adaptive`, `between_tools`), `output_config.effort`,
    /// `cache_control` (a cache hint), `service_tier`, `speed`, `inference_geo`, `diagnostics`,
    /// `context_management`, `billing_policy`, `fallback_credit_token`, `fallbacks: "default"`.
    /// Refused with the reason: `container` (no code-execution containers), a non-empty
    /// `mcp_servers` (no MCP connector), `thread` (no conversation state is held), a list of
    /// `fallbacks` (one model per route here) and `compaction` (no compaction requests; unless
    /// `counting`, where the API ignores it).
    static func anthropicHints(_ f: Fields, counting: Bool = false) throws -> RequestHints {
        var hints = RequestHints()
        if let metadata = try object(f, "metadata") {
            try metadata.refuseUnknown(["user_id"], anthropic: true)
            hints.user = try metadata.string("user_id")
        }
        if let thinking = try object(f, "thinking") {
            guard let type = try choice(thinking, "type", HintValues.thinking) else {
                throw APIError.invalid(thinking.name("type"), "'thinking.type' is required: \(HintValues.thinking.joined(separator: ", ")).", code: "missing_field")
            }
            hints.reasoning.thinking = type
            if type == "enabled" {
                guard let budget = try thinking.int("budget_tokens", in: 1...Int.max) else {
                    throw APIError.invalid(thinking.name("budget_tokens"), "'thinking.budget_tokens' is required when thinking is enabled.", code: "missing_field")
                }
                hints.reasoning.budgetTokens = budget
            }
            _ = try choice(thinking, "display", ["summarized", "omitted"])
        }
        if let config = try object(f, "output_config") {
            hints.reasoning.effort = try choice(config, "effort", HintValues.anthropicEffort)
        }
        if let cacheControl = try object(f, "cache_control") {
            _ = try requiredType(cacheControl)
            hints.cacheRetention = try cacheControl.string("ttl")
        }
        hints.serviceTier = try f.string("service_tier")
        _ = try f.string("speed")
        _ = try f.string("inference_geo")
        _ = try object(f, "diagnostics")
        _ = try object(f, "context_management")
        _ = try object(f, "billing_policy")
        switch f.value("fallback_credit_token") {
        case nil, .string?, .object?: break
        case let other?: throw f.wrongType("fallback_credit_token", "a string", other)
        }
        switch f.value("fallbacks") {
        case nil, .string("default")?: break
        case .array(let items)? where items.isEmpty: break
        default: throw unsupported("fallbacks", "lists other models; each route here serves one model (a gateway's routes fall back as its configuration says).")
        }
        if f.value("container") != nil { throw unsupported("container", "names a code-execution container; this server runs none.") }
        if let servers = try f.array("mcp_servers"), !servers.isEmpty {
            throw unsupported(
                "mcp_servers",
                "asks the server to call MCP servers; /v1/messages has no MCP connector (run the tools in the client, or use /v1/responses with {\"type\": \"mcp\"} tools on a server started with --mcp).")
        }
        if f.value("thread") != nil { throw unsupported("thread", "asks the server to hold the conversation; this server holds none: send every turn in 'messages'.") }
        if !counting, f.value("compaction") != nil {
            throw unsupported("compaction", "asks for a compaction request; this server does not summarise conversations.")
        }
        return hints
    }
}
