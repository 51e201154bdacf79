/// Sampling, length and format options for one request.
///
/// Every field is optional: `nil` means "the provider's default". Providers send only the
/// fields their API understands and document which ones they drop (see docs/PROVIDERS.md).
public struct ChatOptions: Sendable, Codable, Equatable {
    /// Softmax temperature; 0 is greedy.
    public var temperature: Double?
    /// Nucleus sampling: keep the smallest set of tokens whose probabilities sum to at least this (0...1].
    public var topP: Double?
    /// Keep only the `topK` most likely tokens.
    public var topK: Int?
    /// Drop tokens whose probability is below `minP` times the most likely token's (0...1).
    public var minP: Double?
    /// The largest number of tokens to generate.
    public var maxTokens: Int?
    /// Stop generating when any of these strings appears; the stop string is not part of the reply.
    public var stop: [String]
    /// Seed for reproducible sampling, where the provider supports it.
    public var seed: Int?
    /// Multiplicative penalty on tokens already in the context (llama.cpp / transformers style; 1 = off).
    public var repetitionPenalty: Double?
    /// Additive penalty on tokens that appeared at all (OpenAI style; 0 = off).
    public var presencePenalty: Double?
    /// Additive penalty scaled by how often a token appeared (OpenAI style; 0 = off).
    public var frequencyPenalty: Double?
    /// The shape the reply must take (JSON, a schema, a pattern, a grammar); `nil` or
    /// ``ResponseFormat/text`` for free text. Never dropped: a provider that cannot honour it
    /// throws ``ProviderError/Code/unsupported(feature:)``.
    public var responseFormat: ResponseFormat?
    /// Added to the named tokens' logits before sampling (OpenAI's `logit_bias`: token id →
    /// −100…100, at most 300 entries; −100 bans the token). Token ids belong to one model's
    /// vocabulary: the local model checks them against its own, OpenAI-compatible providers
    /// send them on, providers without the field refuse (``ProviderError/Code/unsupported(feature:)``).
    public var logitBias: [Int32: Double]
    /// Functions the model may call (empty: none). Never dropped: a provider whose API has no
    /// tools throws ``ProviderError/Code/unsupported(feature:)``.
    public var tools: [ToolDefinition]
    /// Whether and which tool the model must call (nil: ``ToolChoice/auto`` when there are tools).
    public var toolChoice: ToolChoice?
    /// Whether one reply may make several calls (nil: the provider's default, which is yes).
    public var parallelToolCalls: Bool?
    /// Keep generating past the end-of-sequence token, until `maxTokens` or a stop string
    /// (llama.cpp's and vLLM's `ignore_eos`, what serving benchmarks send so every request
    /// generates the same length): the local model never samples its end tokens. OpenAI-compatible
    /// providers with extended sampling (vLLM, llama-server) get it as `ignore_eos`; `hearth serve`
    /// refuses it on cloud routes.
    public var ignoreEOS: Bool?
    /// Structured output within the token budget (the local model): nil or true lets the
    /// constraint steer the last tokens so a constrained answer ends complete instead of cut
    /// at `maxTokens` (``ChatResponse/finishReason`` ``FinishReason/stop``); false keeps the cut (``FinishReason/length``). Cloud
    /// providers ignore it (their APIs cut).
    public var finishInBudget: Bool?
    /// Reasoning: whether the model may reason, with what effort or budget (nil: the provider's
    /// default). A model that cannot reason accepts any value and answers without reasoning.
    public var reasoning: ReasoningOptions?
    /// Extra variables for the local model's chat template, as a JSON object's text (the
    /// `chat_template_kwargs` of llama-server and vLLM, e.g. `{"enable_thinking": false}`); nil
    /// for none. Only the local model reads it (cloud providers render no templates).
    public var chatTemplateKwargs: String?

    /// The conversation's last message is an assistant message to continue, not a finished
    /// turn: the local model's prompt leaves it open and the reply is only what follows it
    /// (an Anthropic "prefill", vLLM's `continue_final_message`). Ignored when the last message
    /// is not the assistant's; cloud providers send the messages as they are.
    public var continueFinalMessage: Bool?

    /// Creates options; every argument defaults to "provider default".
    public init(
        temperature: Double? = nil, topP: Double? = nil, topK: Int? = nil, minP: Double? = nil,
        maxTokens: Int? = nil, stop: [String] = [], seed: Int? = nil, repetitionPenalty: Double? = nil,
        presencePenalty: Double? = nil, frequencyPenalty: Double? = nil, responseFormat: ResponseFormat? = nil,
        tools: [ToolDefinition] = [], toolChoice: ToolChoice? = nil, parallelToolCalls: Bool? = nil,
        logitBias: [Int32: Double] = [:], ignoreEOS: Bool? = nil, reasoning: ReasoningOptions? = nil
    ) {
        self.reasoning = reasoning
        self.ignoreEOS = ignoreEOS
        self.logitBias = logitBias
        self.tools = tools
        self.toolChoice = toolChoice
        self.parallelToolCalls = parallelToolCalls
        self.temperature = temperature
        self.topP = topP
        self.topK = topK
        self.minP = minP
        self.maxTokens = maxTokens
        self.stop = stop
        self.seed = seed
        self.repetitionPenalty = repetitionPenalty
        self.presencePenalty = presencePenalty
        self.frequencyPenalty = frequencyPenalty
        self.responseFormat = responseFormat
    }

    /// Decodes options; every key may be absent (conversation files written before a field existed).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        temperature = try c.decodeIfPresent(Double.self, forKey: .temperature)
        topP = try c.decodeIfPresent(Double.self, forKey: .topP)
        topK = try c.decodeIfPresent(Int.self, forKey: .topK)
        minP = try c.decodeIfPresent(Double.self, forKey: .minP)
        maxTokens = try c.decodeIfPresent(Int.self, forKey: .maxTokens)
        stop = try c.decodeIfPresent([String].self, forKey: .stop) ?? []
        seed = try c.decodeIfPresent(Int.self, forKey: .seed)
        repetitionPenalty = try c.decodeIfPresent(Double.self, forKey: .repetitionPenalty)
        presencePenalty = try c.decodeIfPresent(Double.self, forKey: .presencePenalty)
        frequencyPenalty = try c.decodeIfPresent(Double.self, forKey: .frequencyPenalty)
        responseFormat = try c.decodeIfPresent(ResponseFormat.self, forKey: .responseFormat)
        tools = try c.decodeIfPresent([ToolDefinition].self, forKey: .tools) ?? []
        toolChoice = try c.decodeIfPresent(ToolChoice.self, forKey: .toolChoice)
        parallelToolCalls = try c.decodeIfPresent(Bool.self, forKey: .parallelToolCalls)
        ignoreEOS = try c.decodeIfPresent(Bool.self, forKey: .ignoreEOS)
        finishInBudget = try c.decodeIfPresent(Bool.self, forKey: .finishInBudget)
        reasoning = try c.decodeIfPresent(ReasoningOptions.self, forKey: .reasoning)
        chatTemplateKwargs = try c.decodeIfPresent(String.self, forKey: .chatTemplateKwargs)
        continueFinalMessage = try c.decodeIfPresent(Bool.self, forKey: .continueFinalMessage)
        logitBias = try c.decodeIfPresent([Int32: Double].self, forKey: .logitBias) ?? [:]
    }

    /// The response format when it constrains the reply (nil for none and for ``ResponseFormat/text``).
    public var constrainedFormat: ResponseFormat? {
        guard let responseFormat, responseFormat.isConstrained else { return nil }
        return responseFormat
    }
}
