import AsyncHTTPClient
import Foundation
import HearthProviders

/// DashScope's native text-generation format: the request JSON and the streamed reply.
enum DashScopeWire {
    // MARK: Request

    /// The JSON body of `POST …/services/aigc/text-generation/generation`.
    ///
    /// Sampling options map to `parameters` (`temperature`, `top_p`, `top_k`, `max_tokens`,
    /// `seed`, `stop`, `repetition_penalty`, `presence_penalty`); `min_p` and
    /// `frequency_penalty` have no field and are dropped. A continuation is sent as a trailing
    /// assistant message with `"partial": true` (Qwen's prefix continuation).
    static func requestBody(_ request: ChatRequest, configuration: DashScopeProvider.Configuration) throws -> Data {
        try ToolWire.validate(request, provider: configuration.id)
        try ToolWire.refuseLogitBias(request, provider: configuration.id, api: "DashScope")
        let transcript = request.continuedMessages
        var messages: [[String: Any]] = transcript.map { message(_: $0, in: transcript) }
        if let continuation = request.continuation, !continuation.isEmpty, !messages.isEmpty {
            messages[messages.count - 1]["partial"] = true
        }
        var parameters: [String: Any] = [
            "result_format": "message",
            "incremental_output": incrementalOutput(request, configuration: configuration),
        ]
        let options = request.options
        if let value = options.temperature { parameters["temperature"] = value }
        if let value = options.topP { parameters["top_p"] = value }
        if let value = options.topK { parameters["top_k"] = value }
        if let value = options.maxTokens { parameters["max_tokens"] = value }
        if let value = options.seed { parameters["seed"] = value }
        if !options.stop.isEmpty { parameters["stop"] = options.stop }
        if let value = options.repetitionPenalty { parameters["repetition_penalty"] = value }
        if let value = options.presencePenalty { parameters["presence_penalty"] = value }
        reasoning(options.reasoning, into: &parameters)
        var pieces = RawJSONPieces()
        try tools(options, into: &parameters, pieces: &pieces, provider: configuration.id)
        var schema: (placeholder: String, text: String)?
        if let format = options.constrainedFormat {
            schema = try responseFormat(format, into: &parameters, provider: configuration.id)
        }
        let body: [String: Any] = [
            "model": request.model ?? configuration.model,
            "input": ["messages": messages],
            "parameters": parameters,
        ]
        let data = try pieces.data(body, provider: configuration.id)
        guard let schema else { return data }
        return try ResponseFormatWire.splice(data, placeholder: schema.placeholder, schema: schema.text, provider: configuration.id)
    }

    /// `incremental_output` for `request`: the configured mode, except that a request with
    /// tools always streams increments — as the official SDK does for every stream (it sends
    /// `true` and joins the pieces itself) — so a call's arguments arrive as pieces, never as
    /// the whole text so far.
    static func incrementalOutput(_ request: ChatRequest, configuration: DashScopeProvider.Configuration) -> Bool {
        configuration.incrementalOutput || !request.options.tools.isEmpty
    }

    /// Adds `enable_thinking` (false when the options turn reasoning off, or give it 0 tokens) and `thinking_budget` (the resolved
    /// budget in tokens, when reasoning is on and has one) to `parameters`; nothing when the
    /// request has no reasoning options (the model's default: Qwen3's commercial models do not
    /// think unless asked, QwQ and the -thinking models always do).
    static func reasoning(_ options: ReasoningOptions?, into parameters: inout [String: Any]) {
        guard let options else { return }
        parameters["enable_thinking"] = !options.isOff
        if !options.isOff, let budget = options.resolvedBudget { parameters["thinking_budget"] = budget }
    }

    /// One message: `{role, content}`, plus `tool_calls` (OpenAI's shape, `content` `""`) for
    /// an assistant's calls and `tool_call_id` and the tool's `name` for a tool result.
    static func message(_ message: ChatMessage, in transcript: [ChatMessage]) -> [String: Any] {
        var wire = OpenAIWire.message(message)
        if wire["content"] is NSNull { wire["content"] = "" }  // the service's own replies carry "" beside calls
        if message.role == .tool, let id = message.toolCallID, let name = transcript.toolName(forCall: id) {
            wire["name"] = name
        }
        return wire
    }

    /// Adds `parameters.tools` (`{type: function, function: {name, description, parameters}}`),
    /// `tool_choice` (`auto`, `none`, `{type: function, function: {name}}`; `required` only
    /// as the one tool by name — Model Studio documents no `required`) and `parallel_tool_calls`.
    static func tools(
        _ options: ChatOptions, into parameters: inout [String: Any], pieces: inout RawJSONPieces, provider: String
    ) throws {
        guard !options.tools.isEmpty else { return }
        let choice = try ToolWire.resolvedChoice(options, support: .qwen, provider: provider, api: "DashScope")
        parameters["tools"] = options.tools.map { tool in
            var function: [String: Any] = ["name": tool.name, "parameters": pieces.add(ToolWire.schema(tool))]
            if let description = tool.description { function["description"] = description }
            return ["type": "function", "function": function] as [String: Any]
        }
        switch choice {
        case .disabled?: parameters["tool_choice"] = "none"
        case .named(let name)?: parameters["tool_choice"] = ["type": "function", "function": ["name": name]]
        case .auto? where options.toolChoice != nil: parameters["tool_choice"] = "auto"
        default: break
        }
        if let parallel = options.parallelToolCalls, choice != .disabled { parameters["parallel_tool_calls"] = parallel }
    }

    /// Model Studio's structured output in `parameters.response_format`: `{"type": "json_object"}`
    /// (JSON mode — the service asks that a message mention JSON, and says so in its error) or
    /// `{"type": "json_schema", "json_schema": {name, schema, strict}}` (JSON Schema mode, on the
    /// models the service lists). Regular expressions and grammars:
    /// ``ProviderError/Code/unsupported(feature:)``.
    static func responseFormat(_ format: ResponseFormat, into parameters: inout [String: Any], provider: String) throws
        -> (placeholder: String, text: String)?
    {
        switch try ResponseFormatWire.validated(format, provider: provider) {
        case .text:
            return nil
        case .jsonObject:
            parameters["response_format"] = ["type": "json_object"]
            return nil
        case .jsonSchema(let schema):
            let placeholder = ResponseFormatWire.placeholder()
            var fields: [String: Any] = ["name": schema.name, "schema": placeholder, "strict": schema.strict]
            if let description = schema.description { fields["description"] = description }
            parameters["response_format"] = ["type": "json_schema", "json_schema": fields]
            return (placeholder, schema.schema)
        case .regex, .grammar:
            throw ResponseFormatWire.unsupported(format, provider: provider, api: "DashScope")
        }
    }

    // MARK: Reply

    /// One `event:result` document (or the whole reply of a non-streamed request).
    struct Chunk: Decodable {
        struct Output: Decodable {
            struct Choice: Decodable {
                struct Message: Decodable {
                    var content: String?
                    var toolCalls: [OpenAIWire.ToolCallDelta]?
                    /// The thinking of a Qwen3/QwQ model (`enable_thinking`), before the content.
                    var reasoningContent: String?
                }
                var message: Message?
                var finishReason: String?
            }
            var choices: [Choice]?
            /// `result_format: "text"` puts the text here.
            var text: String?
            var finishReason: String?
        }
        struct UsagePayload: Decodable {
            struct Details: Decodable {
                var cachedTokens: Int?
            }
            struct OutputDetails: Decodable {
                var reasoningTokens: Int?
            }
            var inputTokens: Int?
            var outputTokens: Int?
            var promptTokensDetails: Details?
            /// `output_tokens_details.reasoning_tokens` of a thinking reply.
            var outputTokensDetails: OutputDetails?
        }
        var output: Output?
        var usage: UsagePayload?
        var requestId: String?
        var code: String?
        var message: String?
    }

    static let decoder = JSONDecoder.snakeCase

    /// What the stream has said so far.
    struct State {
        let incremental: Bool
        var text: CumulativeText
        /// The reasoning so far, when the documents carry it whole (not incremental).
        var reasoningText = CumulativeText()
        var reasoning: StreamedReasoning
        var usage: Chunk.UsagePayload?
        var calls = StreamedToolCalls()
        var done = false

        init(incremental: Bool, provider: String) {
            self.incremental = incremental
            text = CumulativeText()
            reasoning = StreamedReasoning(provider: provider)
        }

        /// Handles one decoded document; the first real finish reason completes the reply.
        /// Tool calls come as OpenAI-shaped pieces in `message.tool_calls` (the request asked
        /// for increments, see ``incrementalOutput(_:configuration:)``); a whole (non-streamed)
        /// reply's calls are numbered by position.
        mutating func handle(_ chunk: Chunk, sink: EventSink, whole: Bool = false, provider: String) throws {
            if let usage = chunk.usage { self.usage = usage }
            let choice = chunk.output?.choices?.first
            let content = choice?.message?.content ?? chunk.output?.text
            let raw = choice?.finishReason ?? chunk.output?.finishReason
            let ending = Self.isFinal(raw)
            if let thinking = choice?.message?.reasoningContent {
                // Without increments the service repeats the whole reasoning so far in each document.
                reasoning.add(incremental ? thinking : reasoningText.delta(for: thinking, final: false), sink: sink)
            }
            if let content {
                let delta = incremental ? content : text.delta(for: content, final: ending)
                if !delta.isEmpty { reasoning.end(sink: sink) }
                sink.text(delta)
            }
            if choice?.message?.toolCalls?.isEmpty == false { reasoning.end(sink: sink) }
            for (position, delta) in (choice?.message?.toolCalls ?? []).enumerated() {
                try calls.add(
                    wireIndex: delta.index ?? (whole ? position : nil), id: delta.id, name: delta.function?.name,
                    arguments: delta.function?.arguments, sink: sink, provider: provider)
            }
            if ending, let raw { try complete(OpenAIWire.finishReason(raw, calls: calls.count), sink: sink, provider: provider) }
        }

        /// `"null"` (a string), `null` and `""` mean "not yet"; anything else (`stop`, `length`,
        /// `tool_calls`) ends the reply.
        static func isFinal(_ raw: String?) -> Bool {
            guard let raw else { return false }
            return raw != "null" && !raw.isEmpty
        }

        mutating func complete(_ reason: FinishReason, sink: EventSink, provider: String) throws {
            reasoning.end(sink: sink)
            try calls.finish(sink: sink, provider: provider)
            done = true
            if let usage, let prompt = usage.inputTokens, let completion = usage.outputTokens {
                var figures = sink.usage(prompt: prompt, completion: completion, cached: usage.promptTokensDetails?.cachedTokens)
                figures.reasoningTokens = usage.outputTokensDetails?.reasoningTokens
                sink.yield(.usage(figures))
            }
            sink.yield(.finished(reason))
            sink.finish()
        }
    }

    /// Reads a 2xx response: the event stream (no `[DONE]`: the first document with a finish
    /// reason ends it), or one JSON document when the server did not stream.
    static func readReply(
        _ response: HTTPClientResponse, incremental: Bool, sink: EventSink, watchdog: IdleWatchdog,
        failures: HTTPFailureMapper
    ) async throws {
        let contentType = response.contentType
        var state = State(incremental: true, provider: failures.provider)
        if contentType.contains("application/json") {
            let body = try await OpenAIWire.collect(response.body, limit: 16 << 20, watchdog: watchdog, provider: failures.provider)
            let chunk = try decode(Data(body.readableBytesView), failures: failures)
            try check(chunk, failures: failures)
            try state.handle(chunk, sink: sink, whole: true, provider: failures.provider)
            if !state.done {
                try state.complete(state.calls.count > 0 ? .toolCalls : .stop, sink: sink, provider: failures.provider)
            }
            return
        }
        try failures.requireEventStream(contentType)
        state = State(incremental: incremental, provider: failures.provider)
        try await ServerSentEventParser.read(response.body, watchdog: watchdog, isDone: { state.done }) { event in
            let data = event.data.trimmingCharacters(in: .whitespaces)
            guard !data.isEmpty else { return }
            let chunk = try? decoder.decode(Chunk.self, from: Data(data.utf8))
            if event.name == "error" {
                let code = chunk?.code
                throw DashScopeErrors.error(
                    status: code.map(DashScopeErrors.status(forCode:)) ?? 500, code: code,
                    message: chunk?.message ?? (chunk == nil ? data : nil), reference: chunk?.requestId.map { "request_id \($0)" },
                    service: "DashScope", failures: failures)
            }
            let decoded = try chunk ?? decode(Data(data.utf8), failures: failures)
            try check(decoded, failures: failures)
            try state.handle(decoded, sink: sink, provider: failures.provider)
        }
        guard state.done else {
            throw ProviderError(
                .network, provider: failures.provider,
                message: "The connection closed before the reply was complete (no finish_reason).")
        }
    }

    /// A document with a `code` and no output is an error, whatever the event said.
    private static func check(_ chunk: Chunk, failures: HTTPFailureMapper) throws {
        guard chunk.output == nil, let code = chunk.code, !code.isEmpty else { return }
        throw DashScopeErrors.error(
            status: DashScopeErrors.status(forCode: code), code: code, message: chunk.message,
            reference: chunk.requestId.map { "request_id \($0)" }, service: "DashScope", failures: failures)
    }

    private static func decode(_ data: Data, failures: HTTPFailureMapper) throws -> Chunk {
        try failures.decode(Chunk.self, from: data, decoder: decoder, what: "A piece of the reply")
    }
}
