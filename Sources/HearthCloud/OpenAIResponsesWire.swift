import Foundation
import HearthProviders

/// The OpenAI Responses API's request (`POST /responses`): the conversation as `input` items,
/// the options, tools, `text.format` and `reasoning`. The reply is read in
/// OpenAIResponsesWire+Reply.swift.
enum OpenAIResponsesWire {
    /// The API's name in errors.
    static func api(_ id: String) -> String { "The OpenAI Responses endpoint '\(id)'" }

    /// The JSON body of `POST /responses` for `request`.
    ///
    /// - Throws: ``ProviderError/Code/invalidRequest`` for malformed tools, tool results or
    ///   formats; ``ProviderError/Code/unsupported(feature:)`` for what the API has no field for
    ///   (`stop`, `logit_bias`, a regex or grammar format).
    static func requestBody(_ request: ChatRequest, configuration: OpenAIResponsesProvider.Configuration) throws -> Data {
        let id = configuration.id
        try ToolWire.validate(request, provider: id)
        try ToolWire.refuseLogitBias(request, provider: id, api: api(id))
        let options = request.options
        if !options.stop.isEmpty {
            throw ProviderError(
                .unsupported(feature: "stop"), provider: id,
                message: "\(api(id)) has no stop sequences; send the request without them or to a chat-completions provider.")
        }
        var pieces = RawJSONPieces()
        var body: [String: Any] = [
            "model": request.model ?? configuration.model,
            "stream": true,
            "store": configuration.store,
            "input": try input(request, configuration: configuration, pieces: &pieces),
        ]
        if let value = options.temperature { body["temperature"] = value }
        if let value = options.topP { body["top_p"] = value }
        if let value = options.maxTokens { body["max_output_tokens"] = value }
        let reasoning = reasoning(options.reasoning, summaryByDefault: configuration.summaryByDefault)
        if let reasoning { body["reasoning"] = reasoning }
        // Without stored state, a reasoning item can only be sent back with its encrypted content.
        if configuration.includesEncryptedReasoning, options.reasoning?.isOff != true {
            body["include"] = ["reasoning.encrypted_content"]
        }
        try tools(request, into: &body, pieces: &pieces, configuration: configuration)
        let schema = try textFormat(options.constrainedFormat, into: &body, provider: id)
        let data = try pieces.data(body, provider: id)
        guard let schema else { return data }
        return try ResponseFormatWire.splice(data, placeholder: schema.placeholder, schema: schema.text, provider: id)
    }

    /// `reasoning: {effort, summary}` for the options (nil when the request has none: the
    /// model's default). Off is `effort: "none"`; a budget without an effort is the smallest
    /// effort whose ``HearthProviders/ReasoningEffort/defaultBudgetTokens`` covers it; `summary`
    /// true asks for `auto` summaries, and so does nil with `summaryByDefault`.
    static func reasoning(_ options: ReasoningOptions?, summaryByDefault: Bool = false) -> [String: Any]? {
        guard let options else { return summaryByDefault ? ["summary": "auto"] : nil }
        var reasoning: [String: Any] = [:]
        if options.isOff {
            reasoning["effort"] = "none"
            return reasoning
        }
        if let effort = options.effort {
            reasoning["effort"] = effort.rawValue
        } else if let budget = options.budgetTokens {
            let effort = ReasoningEffort.allCases.first { budget <= $0.defaultBudgetTokens } ?? .high
            reasoning["effort"] = effort.rawValue
        }
        if options.summary ?? summaryByDefault { reasoning["summary"] = "auto" }
        return reasoning.isEmpty ? nil : reasoning
    }

    /// The conversation as input items: `message` items (system, user, assistant text), an
    /// assistant's reasoning items (only this provider's, with their `id` and
    /// `encrypted_content`) before its text and `function_call` items, and `function_call_output`
    /// items for tool results. A partial answer to continue is a trailing assistant message
    /// (plus an instruction, with ``ContinuationStyle/instruction(_:)``).
    static func input(
        _ request: ChatRequest, configuration: OpenAIResponsesProvider.Configuration, pieces: inout RawJSONPieces
    ) throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        for message in request.continuedMessages {
            switch message.role {
            case .system, .user:
                items.append(["type": "message", "role": message.role.rawValue, "content": message.content])
            case .assistant:
                for part in message.reasoning.belonging(to: configuration.id) {
                    guard let item = reasoningItem(part) else { continue }
                    items.append(item)
                }
                if !message.content.isEmpty {
                    items.append(["type": "message", "role": "assistant", "content": message.content])
                }
                for call in message.toolCalls {
                    let arguments = try ToolWire.arguments(call, provider: configuration.id)
                    items.append(["type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments])
                }
            case .tool:
                items.append(["type": "function_call_output", "call_id": message.toolCallID ?? "", "output": message.content])
            }
        }
        if let continuation = request.continuation, !continuation.isEmpty,
            case .instruction(let text) = configuration.continuationStyle
        {
            items.append(["type": "message", "role": "user", "content": text])
        }
        return items
    }

    /// A part as a `reasoning` input item, or nil when it cannot be one: the API needs the
    /// item's `id`, and (stateless) its `encrypted_content`; its text goes back as the summary.
    static func reasoningItem(_ part: ReasoningPart) -> [String: Any]? {
        guard let id = part.id, !part.isRedacted else { return nil }
        var item: [String: Any] = [
            "type": "reasoning", "id": id,
            "summary": part.text.isEmpty ? [] : [["type": "summary_text", "text": part.text]],
        ]
        if let encrypted = part.encryptedContent { item["encrypted_content"] = encrypted }
        return item
    }

    /// `tools` (`{type: function, name, description, parameters, strict}`), `tool_choice`
    /// (`auto`, `none`, `required`, `{type: function, name}`) and `parallel_tool_calls`.
    static func tools(
        _ request: ChatRequest, into body: inout [String: Any], pieces: inout RawJSONPieces,
        configuration: OpenAIResponsesProvider.Configuration
    ) throws {
        let options = request.options
        guard !options.tools.isEmpty else { return }
        let choice = try ToolWire.resolvedChoice(options, support: .openAI, provider: configuration.id, api: api(configuration.id))
        guard let choice else { return }
        body["tools"] = options.tools.map { tool in
            var entry: [String: Any] = [
                "type": "function", "name": tool.name, "parameters": pieces.add(ToolWire.schema(tool)),
                "strict": tool.strict ?? false,
            ]
            if let description = tool.description { entry["description"] = description }
            return entry
        }
        if options.toolChoice != nil || choice != .auto {
            switch choice {
            case .auto: body["tool_choice"] = "auto"
            case .disabled: body["tool_choice"] = "none"
            case .required: body["tool_choice"] = "required"
            case .named(let name): body["tool_choice"] = ["type": "function", "name": name]
            }
        }
        if let parallel = options.parallelToolCalls, choice != .disabled { body["parallel_tool_calls"] = parallel }
    }

    /// `text.format`: `json_object`, or `json_schema` with `name`, `schema`, `strict` and
    /// `description`; a regex or grammar is ``ProviderError/Code/unsupported(feature:)``.
    /// Returns the schema's placeholder and text, spliced in after serialisation.
    static func textFormat(
        _ format: ResponseFormat?, into body: inout [String: Any], provider: String
    ) throws -> (placeholder: String, text: String)? {
        guard let format else { return nil }
        switch try ResponseFormatWire.validated(format, provider: provider) {
        case .text:
            return nil
        case .jsonObject:
            body["text"] = ["format": ["type": "json_object"]]
            return nil
        case .jsonSchema(let schema):
            let placeholder = ResponseFormatWire.placeholder()
            var fields: [String: Any] = ["type": "json_schema", "name": schema.name, "schema": placeholder, "strict": schema.strict]
            if let description = schema.description { fields["description"] = description }
            body["text"] = ["format": fields]
            return (placeholder, schema.schema)
        case .regex, .grammar:
            throw ResponseFormatWire.unsupported(format, provider: provider, api: api(provider))
        }
    }
}
