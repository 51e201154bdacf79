import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOCore

/// The Anthropic Messages wire format: the request JSON and the streamed events.
enum AnthropicWire {
    /// A request body, and whether whitespace was cut from the end of the prefilled answer.
    struct PreparedRequest: Sendable {
        var body: Data
        var trimmedTrailingWhitespace: Bool
    }

    /// The JSON body of `POST /v1/messages`.
    ///
    /// The API rejects a final assistant message that ends in whitespace, so the prefill is
    /// trimmed; the reply's leading whitespace is then dropped (the consumer already has it).
    static func requestBody(_ request: ChatRequest, configuration: AnthropicProvider.Configuration) throws
        -> PreparedRequest
    {
        try ToolWire.validate(request, provider: configuration.id)
        try ToolWire.refuseLogitBias(request, provider: configuration.id, api: "The Anthropic Messages API")
        let system = request.messages.filter { $0.role == .system }.map(\.content).joined(separator: "\n\n")
        var turns = request.continuedMessages.filter { $0.role != .system }
        var trimmed = false
        if request.continuation?.isEmpty == false, let last = turns.last, last.role == .assistant {
            let kept = String(last.content.reversed().drop { $0.isWhitespace }.reversed())
            trimmed = kept.count != last.content.count
            if kept.isEmpty { turns.removeLast() } else { turns[turns.count - 1].content = kept }
        }
        var pieces = RawJSONPieces()
        var maxTokens = request.options.maxTokens ?? configuration.defaultMaxTokens
        let thinking = try thinking(
            request.options.reasoning, maxTokens: &maxTokens, maxTokensSet: request.options.maxTokens != nil,
            provider: configuration.id)
        var body: [String: Any] = [
            "model": request.model ?? configuration.model,
            "max_tokens": maxTokens,
            "messages": try messages(turns, pieces: &pieces, provider: configuration.id),
            "stream": true,
        ]
        if !system.isEmpty { body["system"] = system }
        if let thinking { body["thinking"] = thinking }
        let options = request.options
        if let value = options.temperature { body["temperature"] = value }
        if let value = options.topP { body["top_p"] = value }
        if let value = options.topK { body["top_k"] = value }
        if !options.stop.isEmpty { body["stop_sequences"] = options.stop }
        var schema: (placeholder: String, text: String)?
        if let format = options.constrainedFormat {
            schema = try outputFormat(format, into: &body, provider: configuration.id)
        }
        tools(options, into: &body, pieces: &pieces)
        var data = try pieces.data(body, provider: configuration.id)
        if let schema {
            data = try ResponseFormatWire.splice(data, placeholder: schema.placeholder, schema: schema.text, provider: configuration.id)
        }
        return PreparedRequest(body: data, trimmedTrailingWhitespace: trimmed)
    }

    /// The conversation as Messages API turns: text messages as `{role, content: "…"}`; an
    /// assistant's calls as `tool_use` blocks (after a `text` block when it wrote any); tool
    /// results as `tool_result` blocks of one user message (consecutive results, and a user
    /// text right after them, share it, as the API wants all results of a turn together).
    static func messages(_ turns: [ChatMessage], pieces: inout RawJSONPieces, provider: String) throws -> [[String: Any]] {
        var out: [[String: Any]] = []
        var results: [[String: Any]] = []  // the user turn of tool results being gathered
        func flushResults() {
            if !results.isEmpty { out.append(["role": "user", "content": results]) }
            results = []
        }
        for message in turns {
            switch message.role {
            case .tool:
                results.append(["type": "tool_result", "tool_use_id": message.toolCallID ?? "", "content": message.content])
            case .user where !results.isEmpty:
                results.append(["type": "text", "text": message.content])
            case .assistant where !message.toolCalls.isEmpty || !thinkingBlocks(message.reasoning, provider: provider).isEmpty:
                flushResults()
                // Thinking first, signature intact: the API checks it and wants it before tool_use.
                var blocks = thinkingBlocks(message.reasoning, provider: provider)
                if !message.content.isEmpty { blocks.append(["type": "text", "text": message.content]) }
                for call in message.toolCalls {
                    let input = pieces.add(try ToolWire.arguments(call, provider: provider))
                    blocks.append(["type": "tool_use", "id": call.id, "name": call.name, "input": input])
                }
                out.append(["role": "assistant", "content": blocks])
            default:
                flushResults()
                out.append(["role": message.role.rawValue, "content": message.content])
            }
        }
        flushResults()
        return out
    }

    /// An assistant message's reasoning as the blocks the API takes back: `thinking` (text and
    /// signature) and `redacted_thinking` (its opaque `data`), in order. Only parts that
    /// ``HearthProviders/ReasoningPart/belongs(to:)`` this provider and carry a signature or
    /// redacted data: the API refuses a thinking block without its signature, and another
    /// provider's reasoning (unsigned, or sealed for it) means nothing here.
    static func thinkingBlocks(_ parts: [ReasoningPart], provider: String) -> [[String: Any]] {
        parts.belonging(to: provider).compactMap { part in
            if let data = part.redactedData { return ["type": "redacted_thinking", "data": data] }
            guard let signature = part.signature else { return nil }
            return ["type": "thinking", "thinking": part.text, "signature": signature]
        }
    }

    /// The smallest `budget_tokens` the API takes.
    static let minimumThinkingBudget = 1024

    /// The `thinking` field for `options`: `{type: disabled}` when reasoning is off (or its
    /// budget is 0), `{type: enabled, budget_tokens}` when on — the resolved budget (an effort's
    /// ``HearthProviders/ReasoningEffort/defaultBudgetTokens``, or medium's when the options name
    /// neither), at least 1024 as the API requires. The API counts thinking in `max_tokens` and
    /// wants it above the budget: when the request set no `maxTokens`, `maxTokens` grows to the
    /// budget plus the default; when it set one at or below the budget, the budget shrinks to
    /// fit, and below 1024 is ``HearthProviders/ProviderError/Code/invalidRequest``.
    static func thinking(_ options: ReasoningOptions?, maxTokens: inout Int, maxTokensSet: Bool, provider: String) throws
        -> [String: Any]?
    {
        guard let options else { return nil }
        guard !options.isOff else { return ["type": "disabled"] }
        var budget = max(minimumThinkingBudget, options.resolvedBudget ?? ReasoningEffort.medium.defaultBudgetTokens)
        if maxTokens <= budget {
            if maxTokensSet {
                budget = maxTokens - 1
                guard budget >= minimumThinkingBudget else {
                    throw ProviderError(
                        .invalidRequest, provider: provider,
                        message: "Anthropic counts thinking in max_tokens and takes a thinking budget of at least "
                            + "\(minimumThinkingBudget) tokens below it: raise maxTokens above \(minimumThinkingBudget), "
                            + "or turn reasoning off.")
                }
            } else {
                maxTokens += budget
            }
        }
        return ["type": "enabled", "budget_tokens": budget]
    }

    /// Adds `tools` (`{name, description, input_schema, strict}`) and `tool_choice`
    /// (`auto`, `any` for required, `tool` with a name, `none`), with
    /// `disable_parallel_tool_use` for `parallelToolCalls: false`. Anthropic has every tool
    /// feature, so nothing is refused here.
    static func tools(_ options: ChatOptions, into body: inout [String: Any], pieces: inout RawJSONPieces) {
        guard !options.tools.isEmpty else { return }
        body["tools"] = options.tools.map { tool in
            var wire: [String: Any] = ["name": tool.name, "input_schema": pieces.add(ToolWire.schema(tool))]
            if let description = tool.description { wire["description"] = description }
            if let strict = tool.strict { wire["strict"] = strict }
            return wire
        }
        let choice = options.effectiveToolChoice
        var wire: [String: Any]
        switch choice {
        case .auto: wire = ["type": "auto"]
        case .disabled: wire = ["type": "none"]
        case .required: wire = ["type": "any"]
        case .named(let name): wire = ["type": "tool", "name": name]
        }
        let serial = options.parallelToolCalls == false && choice != .disabled
        if serial { wire["disable_parallel_tool_use"] = true }
        if options.toolChoice != nil || serial { body["tool_choice"] = wire }
    }

    /// Anthropic's structured outputs: a JSON Schema goes out as
    /// `output_config: {"format": {"type": "json_schema", "schema": …}}` (generally available,
    /// no beta header; the schema's name and `strict` have no field — the API always enforces
    /// it, and refuses schemas outside its subset with a 400). JSON mode, regular expressions
    /// and grammars have no Anthropic counterpart: ``ProviderError/Code/unsupported(feature:)``.
    static func outputFormat(_ format: ResponseFormat, into body: inout [String: Any], provider: String) throws
        -> (placeholder: String, text: String)?
    {
        switch try ResponseFormatWire.validated(format, provider: provider) {
        case .text:
            return nil
        case .jsonSchema(let schema):
            let placeholder = ResponseFormatWire.placeholder()
            body["output_config"] = ["format": ["type": "json_schema", "schema": placeholder]]
            return (placeholder, schema.schema)
        case .jsonObject:
            throw ResponseFormatWire.unsupported(
                format, provider: provider, api: "The Anthropic Messages API",
                hint: "It has JSON Schema outputs only: send a schema that names the object's properties.")
        case .regex, .grammar:
            throw ResponseFormatWire.unsupported(format, provider: provider, api: "The Anthropic Messages API")
        }
    }

    /// One streamed event's JSON (only the fields used).
    struct Event: Decodable {
        struct Message: Decodable {
            var usage: UsagePayload?
        }
        struct UsagePayload: Decodable {
            var inputTokens: Int?
            var outputTokens: Int?
            var cacheReadInputTokens: Int?
            var cacheCreationInputTokens: Int?
        }
        struct Delta: Decodable {
            var type: String?
            var text: String?
            var partialJson: String?
            var stopReason: String?
            /// A `thinking_delta`'s piece of thinking.
            var thinking: String?
            /// A `signature_delta`'s signature of the thinking block.
            var signature: String?
        }
        struct ContentBlock: Decodable {
            var type: String?
            var id: String?
            var name: String?
            /// A `thinking` block's opening text and signature (usually empty; deltas follow).
            var thinking: String?
            var signature: String?
            /// A `redacted_thinking` block's opaque data.
            var data: String?
        }
        struct ErrorPayload: Decodable {
            var type: String?
            var message: String?
        }
        var type: String
        var index: Int?
        var contentBlock: ContentBlock?
        var message: Message?
        var delta: Delta?
        var usage: UsagePayload?
        var error: ErrorPayload?
    }

    static let decoder = JSONDecoder.snakeCase

    /// Reads a 2xx event stream until `message_stop`.
    static func readReply(
        _ response: HTTPClientResponse, sink: EventSink, watchdog: IdleWatchdog, failures: HTTPFailureMapper,
        trimLeadingWhitespace: Bool
    ) async throws {
        let contentType = response.contentType
        try failures.requireEventStream(contentType)
        var state = State(trimLeadingWhitespace: trimLeadingWhitespace)
        try await ServerSentEventParser.read(response.body, watchdog: watchdog, isDone: { state.done }) { event in
            try state.handle(event, sink: sink, failures: failures)
        }
        guard state.done else {
            throw ProviderError(
                .network, provider: failures.provider, message: "The connection closed before the reply was complete.")
        }
    }

    /// What the stream has said so far.
    struct State {
        var trimLeadingWhitespace: Bool
        var promptTokens = 0
        var cachedTokens: Int?
        var outputTokens: Int?
        var finishReason: FinishReason?
        var done = false
        /// Open `tool_use` blocks: block index → call index, and whether arguments came.
        var openCalls: [Int: (call: Int, sentArguments: Bool)] = [:]
        var callCount = 0
        /// The open `thinking` block: its index, its text so far and its signature.
        var openThinking: (block: Int, text: String, signature: String?)?

        // Long: one case per Messages API stream event type (14), each mapping to the provider's
        // events; the wire protocol's table.
        mutating func handle(_ raw: ServerSentEvent, sink: EventSink, failures: HTTPFailureMapper) throws {
            guard !raw.data.isEmpty else { return }
            let event: Event
            do {
                event = try decoder.decode(Event.self, from: Data(raw.data.utf8))
            } catch {
                throw ProviderError(
                    .decoding, provider: failures.provider,
                    message: "An event of the reply was not the expected JSON: "
                        + failures.redactor(String(raw.data.prefix(300))),
                    underlying: error)
            }
            switch event.type {
            case "message_start":
                if let usage = event.message?.usage {
                    promptTokens = (usage.inputTokens ?? 0) + (usage.cacheReadInputTokens ?? 0)
                        + (usage.cacheCreationInputTokens ?? 0)
                    cachedTokens = usage.cacheReadInputTokens
                    outputTokens = usage.outputTokens
                }
            case "content_block_start" where event.contentBlock?.type == "thinking":
                let start = event.contentBlock?.thinking ?? ""
                openThinking = (event.index ?? -1, start, event.contentBlock?.signature.flatMap { $0.isEmpty ? nil : $0 })
                sink.reasoning(start)
            case "content_block_start" where event.contentBlock?.type == "redacted_thinking":
                let part = ReasoningPart(text: "", redactedData: event.contentBlock?.data ?? "", provider: failures.provider)
                sink.reasoningEnded(part)
            case "content_block_delta" where event.delta?.type == "thinking_delta":
                guard let piece = event.delta?.thinking, openThinking != nil else { return }
                openThinking?.text += piece
                sink.reasoning(piece)
            case "content_block_delta" where event.delta?.type == "signature_delta":
                if let signature = event.delta?.signature, var open = openThinking {
                    open.signature = (open.signature ?? "") + signature
                    openThinking = open
                }
            case "content_block_start":
                guard event.contentBlock?.type == "tool_use" else { return }
                guard let block = event.index, let id = event.contentBlock?.id, let name = event.contentBlock?.name,
                    !id.isEmpty, !name.isEmpty
                else {
                    throw ProviderError(
                        .decoding, provider: failures.provider, message: "A tool_use block of the reply has no index, id or name.")
                }
                openCalls[block] = (callCount, false)
                sink.toolCall(.started(index: callCount, id: id, name: name))
                callCount += 1
            case "content_block_delta" where event.delta?.type == "input_json_delta":
                guard let block = event.index, let open = openCalls[block] else {
                    throw ProviderError(
                        .decoding, provider: failures.provider, message: "The reply sent tool input for a block that is not an open tool_use.")
                }
                if let fragment = event.delta?.partialJson, !fragment.isEmpty {
                    openCalls[block]?.sentArguments = true
                    sink.toolCall(.arguments(index: open.call, fragment: fragment))
                }
            case "content_block_stop":
                if let open = openThinking, open.block == event.index ?? -1 { endThinking(sink: sink, provider: failures.provider) }
                if let block = event.index { closeCall(block, sink: sink) }
            case "content_block_delta":
                guard event.delta?.type == "text_delta" || event.delta?.type == nil, var text = event.delta?.text
                else { return }
                if trimLeadingWhitespace {
                    text = String(text.drop { $0.isWhitespace })
                    if !text.isEmpty { trimLeadingWhitespace = false }
                }
                sink.text(text)
            case "message_delta":
                if let reason = event.delta?.stopReason {
                    switch reason {
                    case "max_tokens": finishReason = .length
                    case "tool_use": finishReason = .toolCalls
                    default: finishReason = .stop
                    }
                }
                if let output = event.usage?.outputTokens { outputTokens = output }
            case "message_stop":
                endThinking(sink: sink, provider: failures.provider)
                for block in openCalls.keys.sorted() { closeCall(block, sink: sink) }
                done = true
                if let outputTokens {  // Anthropic does not count thinking apart: reasoningTokens stays nil
                    sink.yield(.usage(sink.usage(prompt: promptTokens, completion: outputTokens, cached: cachedTokens)))
                }
                sink.yield(.finished(finishReason ?? .stop))
                sink.finish()
            case "error":
                throw failures.streamError(type: event.error?.type, code: nil, message: event.error?.message)
            default:
                break  // ping, and types added later
            }
        }

        /// Ends the open thinking block: its whole text and its signature, as one part.
        private mutating func endThinking(sink: EventSink, provider: String) {
            guard let open = openThinking else { return }
            openThinking = nil
            sink.reasoningEnded(ReasoningPart(text: open.text, signature: open.signature, provider: provider))
        }

        /// Ends the call of a `tool_use` block (a call whose input never came gets `{}`).
        private mutating func closeCall(_ block: Int, sink: EventSink) {
            guard let open = openCalls.removeValue(forKey: block) else { return }
            if !open.sentArguments { sink.toolCall(.arguments(index: open.call, fragment: "{}")) }
            sink.toolCall(.finished(index: open.call))
        }
    }
}
