import HearthProviders

extension OpenAICompatibleProvider {
    private static func hint(_ variable: String, _ id: String) -> String {
        "Set \(variable), or \"apiKey\" under \"\(id)\" in ~/.config/hearth/providers.json."
    }

    /// OpenAI (`https://api.openai.com/v1`, or `OPENAI_BASE_URL`), key from `OPENAI_API_KEY` or the
    /// config file's `openai` entry. Uses `max_completion_tokens`, and continues a cut-off answer
    /// with an instruction (OpenAI has no assistant prefill). Embeds with `text-embedding-3-small`.
    public static func openAI(model: String? = nil, credentials: CloudCredentials) -> OpenAICompatibleProvider {
        let entry = credentials["openai"]
        return OpenAICompatibleProvider(
            Configuration(
                id: "openai", baseURL: entry.baseURL ?? "https://api.openai.com/v1", apiKey: entry.apiKey,
                requiresAPIKey: true, model: model ?? entry.model ?? "gpt-4o-mini", headers: entry.headers ?? [:],
                maxTokensField: "max_completion_tokens",
                continuationStyle: .instruction(ContinuationStyle.defaultInstruction),
                credentialHint: hint("OPENAI_API_KEY", "openai"), embeddingModel: "text-embedding-3-small"))
    }

    /// DeepSeek (`https://api.deepseek.com/v1`), key from `DEEPSEEK_API_KEY` or the `deepseek` entry.
    /// Structured output: JSON mode (`json_object`) only; a JSON Schema is refused as unsupported.
    /// Tools: `tool_choice` auto, none, required and named; no `parallel_tool_calls` switch
    /// (`parallelToolCalls: false` is refused).
    /// DeepSeek serves chat prefix completion (`"prefix": true`, a true continuation) only on its
    /// beta base URL: with `"baseURL": "https://api.deepseek.com/beta"` that style is used,
    /// otherwise a cut-off answer is continued with an instruction.
    public static func deepSeek(model: String? = nil, credentials: CloudCredentials) -> OpenAICompatibleProvider {
        let entry = credentials["deepseek"]
        let baseURL = entry.baseURL ?? "https://api.deepseek.com/v1"
        let style: ContinuationStyle =
            baseURL.hasSuffix("/beta") ? .deepSeekPrefix : .instruction(ContinuationStyle.defaultInstruction)
        return OpenAICompatibleProvider(
            Configuration(
                id: "deepseek", baseURL: baseURL, apiKey: entry.apiKey, requiresAPIKey: true,
                model: model ?? entry.model ?? "deepseek-chat", headers: entry.headers ?? [:],
                continuationStyle: style, credentialHint: hint("DEEPSEEK_API_KEY", "deepseek"), structuredOutput: .jsonObject,
                toolCalling: [.tools, .noneChoice, .requiredChoice, .namedChoice], reasoningDialect: .none))
    }

    /// Qwen through DashScope's OpenAI-compatible mode
    /// (`https://dashscope.aliyuncs.com/compatible-mode/v1`), key from `DASHSCOPE_API_KEY` or the
    /// `qwen` entry. Continues with `"partial": true`. Structured output: `json_object` and
    /// `json_schema` (Model Studio's JSON Schema mode, on the qwen-plus/max/flash lines; other
    /// models answer it with an error of their own). Tools: `tool_choice` auto, none and named
    /// (Model Studio documents no `required`: with one tool it is sent as that tool by name,
    /// with several it is refused), and `parallel_tool_calls`.
    public static func qwen(model: String? = nil, credentials: CloudCredentials) -> OpenAICompatibleProvider {
        let entry = credentials["qwen"]
        return OpenAICompatibleProvider(
            Configuration(
                id: "qwen", baseURL: entry.baseURL ?? "https://dashscope.aliyuncs.com/compatible-mode/v1",
                apiKey: entry.apiKey, requiresAPIKey: true, model: model ?? entry.model ?? "qwen-plus",
                headers: entry.headers ?? [:], sendsExtendedSampling: true, continuationStyle: .qwenPartial,
                credentialHint: hint("DASHSCOPE_API_KEY", "qwen"), toolCalling: .qwen, reasoningDialect: .qwen))
    }

    /// Ollama's OpenAI-compatible endpoint (default `http://127.0.0.1:11434/v1`), no key. Tools:
    /// `tools` only — Ollama ignores `tool_choice`, so `required` and a named tool are refused
    /// and `none` is honoured by not sending the tools.
    public static func ollama(model: String, baseURL: String = "http://127.0.0.1:11434/v1") -> OpenAICompatibleProvider {
        OpenAICompatibleProvider(
            Configuration(
                id: "ollama", baseURL: baseURL, model: model, sendsExtendedSampling: true,
                continuationStyle: .trailingAssistantMessage, toolCalling: .tools))
    }

    /// llama.cpp's `llama-server` (default `http://127.0.0.1:8080/v1`), no key. Structured output:
    /// `json_object`, `json_schema` and GBNF grammars (its `grammar` field). Tools (the server
    /// must run with `--jinja`): `tool_choice` auto, none and required (a named tool only when it
    /// is the one tool), and `parallel_tool_calls`.
    public static func llamaCpp(model: String = "default", baseURL: String = "http://127.0.0.1:8080/v1")
        -> OpenAICompatibleProvider
    {
        OpenAICompatibleProvider(
            Configuration(
                id: "llama.cpp", baseURL: baseURL, model: model, sendsExtendedSampling: true,
                continuationStyle: .trailingAssistantMessage, structuredOutput: [.jsonObject, .jsonSchema, .gbnfGrammar],
                toolCalling: [.tools, .noneChoice, .requiredChoice, .parallelSwitch], reasoningDialect: .chatTemplateKwargs))
    }

    /// A vLLM server (default `http://127.0.0.1:8000/v1`); pass `apiKey` if it was started with `--api-key`.
    public static func vLLM(model: String, baseURL: String = "http://127.0.0.1:8000/v1", apiKey: CloudSecret? = nil)
        -> OpenAICompatibleProvider
    {
        OpenAICompatibleProvider(
            Configuration(
                id: "vllm", baseURL: baseURL, apiKey: apiKey, model: model, sendsExtendedSampling: true,
                continuationStyle: .vllmContinueFinalMessage, reasoningDialect: .chatTemplateKwargs))
    }
}
