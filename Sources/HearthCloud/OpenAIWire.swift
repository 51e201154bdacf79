import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOCore

/// The OpenAI chat-completions wire format: the request JSON and the streamed reply.
enum OpenAIWire {
    // MARK: Request

    /// The JSON body of `POST /chat/completions` for `request`.
    static func requestBody(
        _ request: ChatRequest, configuration: OpenAICompatibleProvider.Configuration
    ) throws -> Data {
        try ToolWire.validate(request, provider: configuration.id)
        var messages: [[String: Any]] = request.messages.map(message)
        var body: [String: Any] = [
            "model": request.model ?? configuration.model,
            "stream": true,
        ]
        if configuration.includeUsage { body["stream_options"] = ["include_usage": true] }
        if let continuation = request.continuation, !continuation.isEmpty {
            messages = request.continuedMessages.map(message)
            switch configuration.continuationStyle {
            case .trailingAssistantMessage:
                break
            case .deepSeekPrefix:
                messages[messages.count - 1]["prefix"] = true
            case .qwenPartial:
                messages[messages.count - 1]["partial"] = true
            case .vllmContinueFinalMessage:
                body["continue_final_message"] = true
                body["add_generation_prompt"] = false
            case .instruction(let text):
                messages.append(["role": "user", "content": text])
            }
        }
        body["messages"] = messages
        let options = request.options
        if let value = options.temperature { body["temperature"] = value }
        if let value = options.topP { body["top_p"] = value }
        if let value = options.maxTokens { body[configuration.maxTokensField] = value }
        if !options.stop.isEmpty { body["stop"] = options.stop }
        if let value = options.seed { body["seed"] = value }
        if let value = options.presencePenalty { body["presence_penalty"] = value }
        if let value = options.frequencyPenalty { body["frequency_penalty"] = value }
        if !options.logitBias.isEmpty {
            body["logit_bias"] = Dictionary(uniqueKeysWithValues: options.logitBias.map { (String($0.key), $0.value) })
        }
        if configuration.sendsExtendedSampling {
            if let value = options.topK { body["top_k"] = value }
            if let value = options.minP { body["min_p"] = value }
            if let value = options.repetitionPenalty { body["repetition_penalty"] = value }
            if options.ignoreEOS == true { body["ignore_eos"] = true }
        }
        reasoning(options.reasoning, into: &body, dialect: configuration.reasoningDialect)
        var pieces = RawJSONPieces()
        try tools(request, into: &body, pieces: &pieces, configuration: configuration)
        let schema = try responseFormat(options.constrainedFormat, into: &body, configuration: configuration)
        let data = try pieces.data(body, provider: configuration.id)
        guard let schema else { return data }
        return try ResponseFormatWire.splice(data, placeholder: schema.placeholder, schema: schema.text, provider: configuration.id)
    }

    /// Adds the reasoning options in the endpoint's ``ReasoningDialect`` (nothing when the
    /// request has none: the server's default).
    static func reasoning(_ options: ReasoningOptions?, into body: inout [String: Any], dialect: ReasoningDialect) {
        guard let options else { return }
        switch dialect {
        case .openAI:
            if !options.isOff, let effort = options.effort { body["reasoning_effort"] = effort.rawValue }
        case .qwen:
            body["enable_thinking"] = !options.isOff
            if !options.isOff, let budget = options.resolvedBudget { body["thinking_budget"] = budget }
        case .chatTemplateKwargs:
            body["chat_template_kwargs"] = ["enable_thinking": !options.isOff]
            if !options.isOff, let effort = options.effort { body["reasoning_effort"] = effort.rawValue }
        case .none:
            break
        }
    }

    /// One message: `{role, content}`, plus `tool_calls` (`content` null when empty) for an
    /// assistant's calls and `tool_call_id` for a tool result.
    static func message(_ message: ChatMessage) -> [String: Any] {
        var wire: [String: Any] = ["role": message.role.rawValue, "content": message.content]
        if !message.toolCalls.isEmpty {
            if message.content.isEmpty { wire["content"] = NSNull() }
            wire["tool_calls"] = message.toolCalls.map { call in
                ["id": call.id, "type": "function", "function": ["name": call.name, "arguments": call.arguments]]
            }
        }
        if message.role == .tool, let id = message.toolCallID { wire["tool_call_id"] = id }
        return wire
    }

    /// Adds `tools` (`{type: function, function: {name, description, parameters, strict}}`),
    /// `tool_choice` and `parallel_tool_calls`, as far as the endpoint's
    /// ``OpenAICompatibleProvider/Configuration/toolCalling`` goes (see ``ToolWire/resolvedChoice(_:support:provider:api:)``);
    /// anything else is ``ProviderError/Code/unsupported(feature:)``.
    static func tools(
        _ request: ChatRequest, into body: inout [String: Any], pieces: inout RawJSONPieces,
        configuration: OpenAICompatibleProvider.Configuration
    ) throws {
        let options = request.options
        let support = configuration.toolCalling
        let api = "The OpenAI-compatible endpoint '\(configuration.id)'"
        if !support.contains(.tools), request.messages.contains(where: { $0.role == .tool || !$0.toolCalls.isEmpty }) {
            throw ToolWire.unsupported("tool messages", provider: configuration.id, api: api, hint: "It has no function calling.")
        }
        guard !options.tools.isEmpty else { return }
        let choice = try ToolWire.resolvedChoice(options, support: support, provider: configuration.id, api: api)
        guard let choice else { return }  // `none` without a `none`: the tools are not sent
        body["tools"] = options.tools.map { tool in
            var function: [String: Any] = ["name": tool.name, "parameters": pieces.add(ToolWire.schema(tool))]
            if let description = tool.description { function["description"] = description }
            if let strict = tool.strict { function["strict"] = strict }
            return ["type": "function", "function": function] as [String: Any]
        }
        if options.toolChoice != nil || choice != .auto {
            switch choice {
            case .auto: body["tool_choice"] = "auto"
            case .disabled: body["tool_choice"] = "none"
            case .required: body["tool_choice"] = "required"
            case .named(let name): body["tool_choice"] = ["type": "function", "function": ["name": name]]
            }
        }
        if let parallel = options.parallelToolCalls, choice != .disabled {
            if support.contains(.parallelSwitch) {
                body["parallel_tool_calls"] = parallel
            } else if !parallel {
                throw ToolWire.unsupported(
                    "parallel_tool_calls false", provider: configuration.id, api: api, hint: "It has no parallel_tool_calls switch.")
            }
        }
    }

    /// Adds the response format: `response_format` `json_object` or `json_schema` (`name`,
    /// `schema`, `strict`, `description`), or llama.cpp's `grammar`, as far as the endpoint's
    /// ``OpenAICompatibleProvider/Configuration/structuredOutput`` goes; anything else is
    /// ``ProviderError/Code/unsupported(feature:)``. Returns the schema to splice in for its placeholder.
    static func responseFormat(
        _ format: ResponseFormat?, into body: inout [String: Any], configuration: OpenAICompatibleProvider.Configuration
    ) throws -> (placeholder: String, text: String)? {
        guard let format else { return nil }
        let id = configuration.id
        let support = configuration.structuredOutput
        let api = "The OpenAI-compatible endpoint '\(id)'"
        switch try ResponseFormatWire.validated(format, provider: id) {
        case .text:
            return nil
        case .jsonObject:
            guard support.contains(.jsonObject) else { throw ResponseFormatWire.unsupported(format, provider: id, api: api) }
            body["response_format"] = ["type": "json_object"]
            return nil
        case .jsonSchema(let schema):
            guard support.contains(.jsonSchema) else {
                throw ResponseFormatWire.unsupported(
                    format, provider: id, api: api,
                    hint: support.contains(.jsonObject) ? "It has JSON mode (json_object) only." : nil)
            }
            let placeholder = ResponseFormatWire.placeholder()
            var fields: [String: Any] = ["name": schema.name, "schema": placeholder, "strict": schema.strict]
            if let description = schema.description { fields["description"] = description }
            body["response_format"] = ["type": "json_schema", "json_schema": fields]
            return (placeholder, schema.schema)
        case .grammar(let text, let root):
            guard support.contains(.gbnfGrammar) else { throw ResponseFormatWire.unsupported(format, provider: id, api: api) }
            guard root == "root" else {
                throw ResponseFormatWire.unsupported(
                    format, provider: id, api: api, hint: "Its grammar field starts at rule 'root', not '\(root)'.")
            }
            body["grammar"] = text
            return nil
        case .regex:
            throw ResponseFormatWire.unsupported(format, provider: id, api: api)
        }
    }

    // MARK: Reply

    /// One `chat.completion.chunk` (or, for servers that ignore `stream`, a whole `chat.completion`).
    struct Chunk: Decodable {
        struct Choice: Decodable {
            struct Delta: Decodable {
                var content: String?
                var toolCalls: [ToolCallDelta]?
                /// DeepSeek's, Qwen's, vLLM's and llama.cpp's field for reasoning.
                var reasoningContent: String?
                /// The same under the name vLLM (since 0.9), Ollama and OpenRouter use; read
                /// only when it is a string (some gateways put an object here).
                var reasoning: String?

                private enum CodingKeys: String, CodingKey { case content, toolCalls, reasoningContent, reasoning }

                init(from decoder: any Decoder) throws {
                    let container = try decoder.container(keyedBy: CodingKeys.self)
                    content = try container.decodeIfPresent(String.self, forKey: .content)
                    toolCalls = try container.decodeIfPresent([ToolCallDelta].self, forKey: .toolCalls)
                    reasoningContent = try? container.decodeIfPresent(String.self, forKey: .reasoningContent)
                    reasoning = try? container.decodeIfPresent(String.self, forKey: .reasoning)
                }

                /// The reasoning piece, under either name.
                var reasoningPiece: String? { reasoningContent ?? reasoning }
            }
            var delta: Delta?
            var message: Delta?
            var finishReason: String?
        }
        struct UsagePayload: Decodable {
            struct Details: Decodable {
                var cachedTokens: Int?
            }
            struct CompletionDetails: Decodable {
                var reasoningTokens: Int?
            }
            var promptTokens: Int?
            var completionTokens: Int?
            var promptTokensDetails: Details?
            /// `completion_tokens_details.reasoning_tokens` (OpenAI, DeepSeek, vLLM).
            var completionTokensDetails: CompletionDetails?
            var promptCacheHitTokens: Int?
        }
        struct ErrorPayload: Decodable {
            var message: String?
            var type: String?
            var code: String?

            private enum CodingKeys: String, CodingKey { case message, type, code }

            init(from decoder: any Decoder) throws {
                if let text = try? decoder.singleValueContainer().decode(String.self) {
                    message = text
                    return
                }
                let container = try decoder.container(keyedBy: CodingKeys.self)
                message = try? container.decodeIfPresent(String.self, forKey: .message)
                type = try? container.decodeIfPresent(String.self, forKey: .type)
                code = (try? container.decodeIfPresent(String.self, forKey: .code))
                    ?? (try? container.decodeIfPresent(Int.self, forKey: .code)).flatMap { $0.map(String.init) }
            }
        }
        var choices: [Choice]?
        var usage: UsagePayload?
        var error: ErrorPayload?
    }

    /// One entry of `tool_calls`: a streamed piece of a call (`index` names it) or, in a whole
    /// message, a whole call. DashScope's native replies use the same shape.
    struct ToolCallDelta: Decodable {
        struct Function: Decodable {
            var name: String?
            var arguments: String?
        }
        var index: Int?
        var id: String?
        var function: Function?
    }

    /// The finish reason a reply's `finish_reason` names: `length`, `tool_calls` (and the
    /// older `function_call`), else `stop`; a reply that made calls and says `stop` is `tool_calls`.
    static func finishReason(_ raw: String, calls: Int) -> FinishReason {
        switch raw {
        case "length": return .length
        case "tool_calls", "function_call": return .toolCalls
        default: return calls > 0 ? .toolCalls : .stop
        }
    }

    /// What the stream has said so far.
    struct State {
        var finishReason: FinishReason?
        var usage: Chunk.UsagePayload?
        var calls = StreamedToolCalls()
        var reasoning: StreamedReasoning
        var done = false

        init(provider: String) {
            reasoning = StreamedReasoning(provider: provider)
        }

        /// Handles one decoded chunk.
        mutating func handle(_ chunk: Chunk, sink: EventSink, failures: HTTPFailureMapper) throws {
            if let error = chunk.error {
                throw failures.streamError(type: error.type, code: error.code, message: error.message)
            }
            for choice in chunk.choices ?? [] {
                // Reasoning comes before the answer; the part ends where text or a call begins.
                if let piece = choice.delta?.reasoningPiece ?? choice.message?.reasoningPiece {
                    reasoning.add(piece, sink: sink)
                }
                if let text = choice.delta?.content ?? choice.message?.content, !text.isEmpty {
                    reasoning.end(sink: sink)
                    sink.text(text)
                }
                if let deltas = choice.delta?.toolCalls {
                    reasoning.end(sink: sink)
                    try addCalls(deltas, whole: false, sink: sink, provider: failures.provider)
                } else if let whole = choice.message?.toolCalls {
                    reasoning.end(sink: sink)
                    try addCalls(whole, whole: true, sink: sink, provider: failures.provider)
                }
                if let reason = choice.finishReason {
                    reasoning.end(sink: sink)
                    try calls.finish(sink: sink, provider: failures.provider)
                    finishReason = OpenAIWire.finishReason(reason, calls: calls.count)
                }
            }
            if let usage = chunk.usage { self.usage = usage }
        }

        /// Streamed pieces carry their `index`; a whole message's calls are numbered by position.
        private mutating func addCalls(_ deltas: [ToolCallDelta], whole: Bool, sink: EventSink, provider: String) throws {
            for (position, delta) in deltas.enumerated() {
                try calls.add(
                    wireIndex: delta.index ?? (whole ? position : nil), id: delta.id, name: delta.function?.name,
                    arguments: delta.function?.arguments, sink: sink, provider: provider)
            }
        }

        /// Sends usage and the finish reason and ends the consumer's stream.
        mutating func complete(sink: EventSink, provider: String) throws {
            reasoning.end(sink: sink)
            try calls.finish(sink: sink, provider: provider)
            done = true
            if let usage, let prompt = usage.promptTokens, let completion = usage.completionTokens {
                let cached = usage.promptTokensDetails?.cachedTokens ?? usage.promptCacheHitTokens
                var figures = sink.usage(prompt: prompt, completion: completion, cached: cached)
                figures.reasoningTokens = usage.completionTokensDetails?.reasoningTokens
                sink.yield(.usage(figures))
            }
            sink.yield(.finished(finishReason ?? .stop))
            sink.finish()
        }
    }

    static let decoder = JSONDecoder.snakeCase

    /// Reads a 2xx response: an event stream, or one JSON completion from servers that ignore
    /// `stream: true`. Anything else is ``ProviderError/Code/decoding``.
    static func readReply(
        _ response: HTTPClientResponse, sink: EventSink, watchdog: IdleWatchdog, failures: HTTPFailureMapper
    ) async throws {
        let contentType = response.contentType
        var state = State(provider: failures.provider)
        if contentType.contains("application/json") {
            let body = try await collect(response.body, limit: 16 << 20, watchdog: watchdog, provider: failures.provider)
            let data = Data(body.readableBytesView)
            try state.handle(decode(data, failures: failures), sink: sink, failures: failures)
            try state.complete(sink: sink, provider: failures.provider)
            return
        }
        try failures.requireEventStream(contentType)
        try await ServerSentEventParser.read(response.body, watchdog: watchdog, isDone: { state.done }) { event in
            try handle(event, state: &state, sink: sink, failures: failures)
        }
        if state.done { return }
        guard state.finishReason != nil else {
            throw ProviderError(
                .network, provider: failures.provider,
                message: "The connection closed before the reply was complete.")
        }
        try state.complete(sink: sink, provider: failures.provider)  // some servers end without [DONE]
    }

    private static func handle(
        _ event: ServerSentEvent, state: inout State, sink: EventSink, failures: HTTPFailureMapper
    ) throws {
        let data = event.data.trimmingCharacters(in: .whitespaces)
        if data == "[DONE]" {
            try state.complete(sink: sink, provider: failures.provider)
            return
        }
        if data.isEmpty { return }
        if event.name == "error" {
            let chunk = try? decoder.decode(Chunk.self, from: Data(data.utf8))
            throw failures.streamError(
                type: chunk?.error?.type, code: chunk?.error?.code, message: chunk?.error?.message ?? data)
        }
        try state.handle(decode(Data(data.utf8), failures: failures), sink: sink, failures: failures)
    }

    private static func decode(_ data: Data, failures: HTTPFailureMapper) throws -> Chunk {
        try failures.decode(Chunk.self, from: data, decoder: decoder, what: "A chunk of the reply")
    }

    /// Collects a body up to `limit` bytes.
    static func collect(
        _ body: HTTPClientResponse.Body, limit: Int, watchdog: IdleWatchdog, provider: String
    ) async throws -> ByteBuffer {
        var collected = ByteBuffer()
        for try await chunk in body {
            watchdog.touch()
            var chunk = chunk
            guard collected.readableBytes + chunk.readableBytes <= limit else {
                throw ProviderError(.decoding, provider: provider, message: "The reply is larger than \(limit) bytes.")
            }
            collected.writeBuffer(&chunk)
        }
        return collected
    }
}
