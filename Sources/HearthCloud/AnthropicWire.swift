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
        let system = request.messages.filter { $0.role == .system }.map(\.content).joined(separator: "\n\n")
        var turns = request.continuedMessages.filter { $0.role != .system }
        var trimmed = false
        if request.continuation?.isEmpty == false, let last = turns.last, last.role == .assistant {
            let kept = String(last.content.reversed().drop { $0.isWhitespace }.reversed())
            trimmed = kept.count != last.content.count
            if kept.isEmpty { turns.removeLast() } else { turns[turns.count - 1].content = kept }
        }
        var body: [String: Any] = [
            "model": request.model ?? configuration.model,
            "max_tokens": request.options.maxTokens ?? configuration.defaultMaxTokens,
            "messages": turns.map { ["role": $0.role.rawValue, "content": $0.content] },
            "stream": true,
        ]
        if !system.isEmpty { body["system"] = system }
        let options = request.options
        if let value = options.temperature { body["temperature"] = value }
        if let value = options.topP { body["top_p"] = value }
        if let value = options.topK { body["top_k"] = value }
        if !options.stop.isEmpty { body["stop_sequences"] = options.stop }
        var schema: (placeholder: String, text: String)?
        if let format = options.constrainedFormat {
            schema = try outputFormat(format, into: &body, provider: configuration.id)
        }
        var data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])
        if let schema {
            data = try ResponseFormatWire.splice(data, placeholder: schema.placeholder, schema: schema.text, provider: configuration.id)
        }
        return PreparedRequest(body: data, trimmedTrailingWhitespace: trimmed)
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
            var stopReason: String?
        }
        struct ErrorPayload: Decodable {
            var type: String?
            var message: String?
        }
        var type: String
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
            case "content_block_delta":
                guard event.delta?.type == "text_delta" || event.delta?.type == nil, var text = event.delta?.text
                else { return }
                if trimLeadingWhitespace {
                    text = String(text.drop { $0.isWhitespace })
                    if !text.isEmpty { trimLeadingWhitespace = false }
                }
                sink.text(text)
            case "message_delta":
                if let reason = event.delta?.stopReason { finishReason = reason == "max_tokens" ? .length : .stop }
                if let output = event.usage?.outputTokens { outputTokens = output }
            case "message_stop":
                done = true
                if let outputTokens {
                    sink.yield(.usage(sink.usage(prompt: promptTokens, completion: outputTokens, cached: cachedTokens)))
                }
                sink.yield(.finished(finishReason ?? .stop))
                sink.finish()
            case "error":
                throw failures.streamError(type: event.error?.type, code: nil, message: event.error?.message)
            default:
                break  // ping, content_block_start, content_block_stop, and types added later
            }
        }
    }
}
