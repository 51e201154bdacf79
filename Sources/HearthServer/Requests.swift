import Foundation
import HearthLocal
import HearthProviders

/// Which API a generation request came in through.
enum Endpoint: String, Sendable, CaseIterable {
    case chatCompletions = "/v1/chat/completions"
    case completions = "/v1/completions"
    case messages = "/v1/messages"
    /// OpenAI's Responses API (stateless: nothing is stored).
    case responses = "/v1/responses"

}

/// A validated generation request, whatever API it came in through.
struct GenerationJob: Sendable {
    var endpoint: Endpoint
    var input: LocalProvider.LocalInput
    var options: ChatOptions
    var stream: Bool
    /// OpenAI `stream_options.include_usage`.
    var includeUsage: Bool
    /// Log-probabilities requested: nil = none, else this many alternatives per token (0 allowed).
    var logprobs: Int?
    /// The model name as the client sent it (echoed back).
    var model: String
    /// Responses API: the `instructions`, echoed in the response object.
    var instructions: String?
    /// The request field that asked for `options.responseFormat` (`response_format`,
    /// `json_schema`, `grammar`, `text.format`, `output_config.format`): the `param` of a 400
    /// for a schema or grammar that cannot be enforced.
    var formatParam: String?
    /// The request field of each tool's schema (`tools[0].function.parameters`,
    /// `tools[0].input_schema`): the `param` of a 400 for a schema the local model cannot enforce.
    var toolSchemaParams: [String] = []
    /// OpenAI `n`: how many choices to generate from the one prompt (chat and text completions).
    var choices = 1
    /// Responses API: the `metadata` pairs, echoed in the response object.
    var metadata: [(String, String)] = []
    /// The request's informational fields (user, cache key, tier, the reasoning it allows).
    var hints = RequestHints()
    /// Chat completions asked with the deprecated `functions` / `function_call`: a call is
    /// answered as `message.function_call` with `finish_reason: "function_call"`.
    var legacyFunctions = false
    /// Responses API: MCP tools, an MCP tool choice and MCP input items (`hearth serve --mcp`).
    var mcp: MCPRequest?
}

/// Parses and validates request bodies; every failure is a 4xx ``APIError`` naming the field.
struct RequestParser {
    /// The served model's name.
    var alias: String
    /// Largest `max_tokens` accepted (the context size, when known).
    var maxTokensLimit: Int
    /// The request body as sent. Not read again: the body is parsed once (``json(_:)``), in
    /// order and with every digit, and the endpoint methods take that value.
    var body: Data?

    /// Parses a body as JSON, once, keeping its key order and its numbers' digits (schemas
    /// and tool inputs are passed on as sent); invalid UTF-8 and malformed JSON are 400s.
    static func json(_ data: Data) throws -> JSONValue {
        guard !data.isEmpty else { throw APIError.invalid("body", "The request body is empty; send a JSON object.", code: "invalid_json") }
        // HearthJSON's byte parser: Foundation's JSONDecoder took 63 ms on a 4 MiB body of
        // escaped line breaks, more than the refusal budget for a prompt past the context.
        do { return try JSON.parse(utf8: Array(data)) } catch {
            if error.isInvalidUTF8 || String(validating: data, as: UTF8.self) == nil {
                throw APIError.invalid("body", "The request body is not valid UTF-8.", code: "invalid_json")
            }
            throw APIError.invalid("body", "The request body is not valid JSON.", code: "invalid_json")
        }
    }

    /// The `model` field, required (as the OpenAI and Anthropic APIs require it).
    static func requiredModel(_ fields: Fields) throws -> String {
        guard let model = try fields.string("model"), !model.isEmpty else {
            throw APIError.invalid("model", "'model' is required; GET /v1/models lists the models you may use.", code: "missing_field")
        }
        return model
    }

    /// The `model` field where it may be left out (`/tokenize`): absent, or the alias.
    func model(_ fields: Fields) throws -> String {
        guard let model = try fields.string("model") else { return alias }
        guard model == alias else {
            throw APIError(
                status: 404, message: "The model '\(model.prefix(200))' does not exist; this server serves '\(alias)' (see GET /v1/models).",
                type: "invalid_request_error", code: "model_not_found", param: "model")
        }
        return model
    }

    /// OpenAI's `logit_bias`: an object from token ids (as strings) to numbers. Its count and
    /// ranges are checked with the other options (`ChatOptions.validate()`), its ids
    /// against the model's vocabulary when it generates.
    static func logitBias(_ f: Fields) throws -> [Int32: Double] {
        guard let value = f.value("logit_bias") else { return [:] }
        guard case .object(let pairs) = value else { throw f.wrongType("logit_bias", "an object of token ids to numbers", value) }
        var bias: [Int32: Double] = [:]
        for (key, item) in pairs {
            guard let id = Int32(key) else {
                throw APIError.invalid("logit_bias", "'logit_bias' keys must be token ids (whole numbers ≥ 0), got '\(key.prefix(40))'.")
            }
            guard case .number(let number) = item else {
                throw APIError.invalid("logit_bias", "'logit_bias' values must be numbers in -100...100 (token \(id)).")
            }
            bias[id] = number.double
        }
        return bias
    }

    /// OpenAI sampling fields shared by chat and text completions, the response format
    /// (``openAIFormat(_:)``) with the field that asked for it, and the chat's tools.
    func openAIOptions(_ f: Fields, tools: ParsedTools = ParsedTools()) throws -> (ChatOptions, formatParam: String?) {
        var o = ChatOptions()
        o.temperature = try f.number("temperature", in: 0...2)
        o.topP = try f.number("top_p", in: 0...1)
        if o.topP == 0 { throw APIError.invalid("top_p", "'top_p' must be greater than 0.") }
        o.topK = try f.int("top_k", in: 0...1000)
        o.minP = try f.number("min_p", in: 0...1)
        o.presencePenalty = try f.number("presence_penalty", in: -2...2)
        o.frequencyPenalty = try f.number("frequency_penalty", in: -2...2)
        o.repetitionPenalty = try f.number("repetition_penalty", in: 0.01...10)
        o.seed = try f.int("seed", in: Int(Int64.min / 2)...Int(Int64.max / 2))
        o.stop = try f.stops("stop", limit: 4)
        o.logitBias = try Self.logitBias(f)
        o.ignoreEOS = try f.bool("ignore_eos")
        o.finishInBudget = try f.bool("finish_in_budget")
        let maxTokens = try f.int("max_tokens", in: 1...maxTokensLimit)
        let maxCompletion = try f.int("max_completion_tokens", in: 1...maxTokensLimit)
        o.maxTokens = maxCompletion ?? maxTokens
        let format = try openAIFormat(f)
        o.responseFormat = format?.format
        tools.apply(to: &o)
        try validated(o, tools: tools)
        return (o, format?.param)
    }

    /// OpenAI `n`: 1 (the default) up to ``LocalProvider/maxChoices`` choices from one prompt.
    static func choices(_ f: Fields) throws -> Int {
        try f.int("n", in: 1...LocalProvider.maxChoices) ?? 1
    }

    /// `stream` and `stream_options` (`include_usage`; `include_obfuscation` is a hint: a local
    /// link has no payload sizes to hide) of chat and text completions.
    func streamFlags(_ f: Fields) throws -> (stream: Bool, includeUsage: Bool) {
        let stream = try f.bool("stream") ?? false
        return (stream, try Self.streamOptions(f, keys: ["include_usage", "include_obfuscation"]))
    }

    /// `POST /v1/chat/completions`.
    func chat(_ body: JSONValue) throws -> GenerationJob {
        let f = try Fields(body)
        try f.refuseUnknown(AcceptedFields.chatCompletions)
        if try f.bool("store") == true {
            throw APIError.invalid("store", "'store': true is not supported: this server stores no completions.")
        }
        let hints = try Self.chatHints(f)
        let model = alias
        guard let items = try f.array("messages") else { throw APIError.invalid("messages", "'messages' is required.", code: "missing_field") }
        guard !items.isEmpty else { throw APIError.invalid("messages", "'messages' must contain at least one message.") }
        var messages: [ChatMessage] = []
        var origins = MessageOrigins()
        var functionCalls = LegacyFunctionCalls()
        for (index, item) in items.enumerated() {
            let m = try Fields(item, prefix: "messages[\(index)]")
            try m.refuseUnknown(AcceptedFields.chatMessage)
            guard let roleName = try m.string("role") else { throw APIError.invalid(m.name("role"), "'\(m.name("role"))' is required.", code: "missing_field") }
            // `name` tells participants of one role apart; the served chat templates have no place for it.
            _ = try m.string("name")
            var message = ChatMessage(role: .user, content: try text(m, key: "content", partType: "text"))
            switch roleName {
            case "system", "developer": message.role = .system
            case "user": message.role = .user
            case "assistant":
                message.role = .assistant
                message.toolCalls = try chatToolCalls(m)
                if let call = try functionCalls.call(m) { message.toolCalls.append(call) }
                // An earlier refusal is what the assistant said that turn.
                if let refusal = try m.string("refusal"), message.content.isEmpty { message.content = refusal }
                // The turn's reasoning as DeepSeek, vLLM and llama-server return it (`reasoning` the alias).
                if let reasoning = try m.string("reasoning_content") ?? m.string("reasoning"), !reasoning.isEmpty {
                    message.reasoning = [ReasoningPart(text: reasoning)]
                }
                // The reply's url citations, echoed back when a client appends the message it received.
                _ = try m.array("annotations")
                if m.value("audio") != nil {
                    throw Self.unsupported(m.name("audio"), "refers to an earlier spoken reply; this server's models produce text only.")
                }
            case "tool":
                message.role = .tool
                message.toolCallID = try m.string("tool_call_id")
            case "function":
                message.role = .tool
                message.toolCallID = try functionCalls.result(m)
            default:
                throw APIError.invalid(
                    m.name("role"),
                    "'\(m.name("role"))' must be system, developer, user, assistant, tool or function, got '\(roleName.prefix(40))'.")
            }
            messages.append(message)
            origins.add(owner: m.prefix, callID: m.name("tool_call_id"), calls: m.name("tool_calls"))
        }
        try validateToolResults(messages, origins: origins)
        let legacy = f.value("functions") != nil || f.value("function_call") != nil
        let tools = legacy ? try legacyFunctionTools(f) : try openAITools(f, nested: true)
        var (options, formatParam) = try openAIOptions(f, tools: tools)
        options.chatTemplateKwargs = try Self.chatTemplateKwargs(f)
        if try f.bool("continue_final_message") == true {
            // vLLM's: the last message, the assistant's, is left open and the reply continues it.
            guard let last = messages.last, last.role == .assistant, last.toolCalls.isEmpty, !last.content.isEmpty else {
                throw APIError.invalid(
                    "continue_final_message", "'continue_final_message' needs an assistant message with text last in 'messages'.")
            }
            options.continueFinalMessage = true
        }
        var logprobs: Int?
        if try f.bool("logprobs") == true { logprobs = try f.int("top_logprobs", in: 0...20) ?? 0 }
        else if f.value("top_logprobs") != nil {
            throw APIError.invalid("top_logprobs", "'top_logprobs' needs 'logprobs': true.")
        }
        let (stream, includeUsage) = try streamFlags(f)
        return GenerationJob(
            endpoint: .chatCompletions, input: .chat(messages), options: options, stream: stream, includeUsage: includeUsage,
            logprobs: logprobs, model: model, formatParam: formatParam, toolSchemaParams: tools.schemaParams,
            choices: try Self.choices(f), hints: hints, legacyFunctions: legacy)
    }

    /// A message's content: a string, or an array of `{"type": partType, "text": …}` parts.
    func text(_ m: Fields, key: String, partType: String) throws -> String {
        try text(m, key: key, partTypes: [partType])
    }

    /// A message's content: a string, or an array of text parts of the given types.
    func text(_ m: Fields, key: String, partTypes: [String]) throws -> String {
        guard let content = m.value(key) else { return "" }
        switch content {
        case .string(let text): return text
        case .array(let parts):
            var text = ""
            for (index, part) in parts.enumerated() {
                let p = try Fields(part, prefix: "\(m.name(key))[\(index)]")
                guard let type = try p.string("type"), partTypes.contains(type) else {
                    throw APIError.invalid(
                        p.name("type"), "Only \(partTypes.map { "'\($0)'" }.joined(separator: ", ")) content parts are supported.")
                }
                text += try p.string("text") ?? ""
            }
            return text
        default:
            throw m.wrongType(key, "a string or an array of content parts", content)
        }
    }

    /// `POST /v1/completions`.
    func completion(_ body: JSONValue) throws -> GenerationJob {
        let f = try Fields(body)
        try f.refuseUnknown(AcceptedFields.completions)
        let hints = try Self.openAIHints(f)
        let model = alias
        let prompt: String
        switch f.value("prompt") {
        case .string(let text)?: prompt = text
        case .array(let items)? where items.count == 1:
            guard case .string(let text) = items[0] else {
                throw APIError.invalid("prompt", "'prompt' must be a string (token-id prompts are not supported).", code: "invalid_type")
            }
            prompt = text
        case .array?: throw APIError.invalid("prompt", "'prompt' must be one string (batches of prompts are not supported).")
        case nil: throw APIError.invalid("prompt", "'prompt' is required.", code: "missing_field")
        case let other?: throw f.wrongType("prompt", "a string", other)
        }
        if try f.bool("echo") == true { throw APIError.invalid("echo", "'echo' is not supported.") }
        if try f.string("suffix") != nil { throw APIError.invalid("suffix", "'suffix' is not supported.") }
        if let bestOf = try f.int("best_of", in: Int.min...Int.max), bestOf != 1 {
            throw APIError.invalid(
                "best_of", "'best_of' is not supported (no server-side ranking of choices); use 'n' for several choices.")
        }
        if f.value("tools") != nil || f.value("tool_choice") != nil {
            throw APIError.invalid("tools", "Tools are served by /v1/chat/completions, /v1/messages and /v1/responses, not by legacy completions.")
        }
        var (options, formatParam) = try openAIOptions(f)
        if options.maxTokens == nil { options.maxTokens = min(16, maxTokensLimit) }  // OpenAI's default for completions
        let logprobs = try f.int("logprobs", in: 0...5)
        let (stream, includeUsage) = try streamFlags(f)
        return GenerationJob(
            endpoint: .completions, input: .text(prompt), options: options, stream: stream, includeUsage: includeUsage,
            logprobs: logprobs, model: model, formatParam: formatParam, choices: try Self.choices(f), hints: hints)
    }

    /// `POST /v1/messages` (Anthropic Messages); with `counting`, the body of a
    /// `/v1/messages/count_tokens` request (which takes `compaction` and ignores it).
    func messages(_ body: JSONValue, counting: Bool = false) throws -> GenerationJob {
        let f = try Fields(body)
        try f.refuseUnknown(AcceptedFields.messages, anthropic: true)
        let hints = try Self.anthropicHints(f, counting: counting)
        let model = alias
        guard let maxTokens = try f.int("max_tokens", in: 1...Int.max) else {
            throw APIError.invalid("max_tokens", "'max_tokens' is required.", code: "missing_field")
        }
        var messages: [ChatMessage] = []
        switch f.value("system") {
        case nil: break
        case .string(let text)?: messages.append(.system(text))
        case .array?:
            messages.append(.system(try text(f, key: "system", partType: "text")))
        case let other?: throw f.wrongType("system", "a string or an array of text blocks", other)
        }
        guard let items = try f.array("messages") else { throw APIError.invalid("messages", "'messages' is required.", code: "missing_field") }
        guard !items.isEmpty else { throw APIError.invalid("messages", "'messages' must contain at least one message.") }
        var origins = MessageOrigins()
        if !messages.isEmpty { origins.add(owner: "system", callID: "system", calls: "system") }
        for (index, item) in items.enumerated() {
            let m = try Fields(item, prefix: "messages[\(index)]")
            let role: ChatMessage.Role
            switch try m.string("role") {
            case "user": role = .user
            case "assistant": role = .assistant
            case nil: throw APIError.invalid(m.name("role"), "'\(m.name("role"))' is required.", code: "missing_field")
            case let other?:
                throw APIError.invalid(m.name("role"), "'\(m.name("role"))' must be user or assistant, got '\(other.prefix(40))'.")
            }
            try anthropicMessages(m, role: role, into: &messages, origins: &origins)
        }
        try validateToolResults(messages, origins: origins)
        var o = ChatOptions()
        o.maxTokens = min(maxTokens, maxTokensLimit)
        o.temperature = try f.number("temperature", in: 0...1)
        o.topP = try f.number("top_p", in: 0...1)
        if o.topP == 0 { throw APIError.invalid("top_p", "'top_p' must be greater than 0.") }
        o.topK = try f.int("top_k", in: 0...1000)
        o.stop = try f.stops("stop_sequences", limit: 16)
        let format = try anthropicFormat(f)
        o.responseFormat = format?.format
        let tools = try anthropicTools(f)
        tools.apply(to: &o)
        // A last assistant message is a prefill, as in the Messages API: the reply continues it.
        if let last = messages.last, last.role == .assistant, last.toolCalls.isEmpty, !last.content.isEmpty {
            o.continueFinalMessage = true
        }
        try validated(o, tools: tools)
        let stream = try f.bool("stream") ?? false
        return GenerationJob(
            endpoint: .messages, input: .chat(messages), options: o, stream: stream, includeUsage: true, logprobs: nil,
            model: model, formatParam: format?.param, toolSchemaParams: tools.schemaParams, hints: hints)
    }

    /// `POST /v1/responses` (stateless): `input` as a string or a list of message items,
    /// `instructions`, sampling fields, `text.format` (text, json_object, json_schema) and
    /// `stream`, function tools (``openAITools(_:nested:)``) with `function_call` and
    /// `function_call_output` input items; logprobs (`include`, `top_logprobs`); the hints and
    /// refusals of ``responsesHints(_:)``. `reasoning` is permission: echoed, no reasoning item.
    func responses(_ body: JSONValue) throws -> GenerationJob {
        let f = try Fields(body)
        try f.refuseUnknown(AcceptedFields.responses)
        let (hints, logprobs) = try Self.responsesHints(f)
        var messages: [ChatMessage] = []
        var origins = MessageOrigins()
        let instructions = try f.string("instructions")
        if let instructions {
            messages.append(.system(instructions))
            origins.add(owner: "instructions", callID: "instructions", calls: "instructions")
        }
        var mcpItems = MCPRequest()
        switch f.value("input") {
        case nil: throw APIError.invalid("input", "'input' is required: a string or a list of input items.", code: "missing_field")
        case .string(let text)?:
            messages.append(.user(text))
            origins.add(owner: "input", callID: "input", calls: "input")
        case .array(let items)?:
            guard !items.isEmpty else { throw APIError.invalid("input", "'input' must contain at least one item.") }
            try responsesInput(items, into: &messages, origins: &origins, mcp: &mcpItems)
        case let other?: throw f.wrongType("input", "a string or an array of input items", other)
        }
        try validateToolResults(messages, origins: origins)
        if try f.string("previous_response_id") != nil {
            throw APIError.invalid(
                "previous_response_id",
                "This server keeps no responses (store is false in effect): send the whole conversation in 'input' instead of 'previous_response_id'.")
        }
        let tools = try openAITools(f, nested: false)
        let format = try responsesFormat(f)
        if try f.bool("store") == true {
            throw APIError.invalid("store", "'store': true is not supported: this server keeps no responses; send store: false.")
        }
        _ = try Self.streamOptions(f, keys: ["include_obfuscation"])  // the Responses API always ends with usage
        switch try f.string("truncation") {
        case nil, "disabled"?: break
        case let other?:
            throw APIError.invalid(
                "truncation", "'truncation': '\(other.prefix(40))' is not supported; a conversation longer than the context is refused (truncation: disabled).")
        }
        let metadata = try Self.metadata(f)
        var o = ChatOptions()
        o.temperature = try f.number("temperature", in: 0...2)
        o.topP = try f.number("top_p", in: 0...1)
        if o.topP == 0 { throw APIError.invalid("top_p", "'top_p' must be greater than 0.") }
        o.maxTokens = try f.int("max_output_tokens", in: 1...maxTokensLimit)
        o.responseFormat = format?.format
        tools.apply(to: &o)
        try validated(o, tools: tools)
        var job = GenerationJob(
            endpoint: .responses, input: .chat(messages), options: o, stream: try f.bool("stream") ?? false,
            includeUsage: true, logprobs: logprobs, model: alias, instructions: instructions, formatParam: format?.param,
            toolSchemaParams: tools.schemaParams, metadata: metadata, hints: hints)
        mcpItems.servers = tools.mcp
        mcpItems.choice = tools.mcpChoice
        if !mcpItems.isEmpty { job.mcp = mcpItems }
        return job
    }

    /// The items of a Responses `input` list as messages: message items, `function_call` and
    /// `function_call_output`, `reasoning` (kept with the assistant turn that follows it) and
    /// the MCP items (``mcpInputItem(_:_:into:origins:mcp:)``).
    func responsesInput(_ items: [JSONValue], into messages: inout [ChatMessage], origins: inout MessageOrigins, mcp mcpItems: inout MCPRequest)
        throws
    {
        // Reasoning items belong to the assistant turn that follows them (its message or call).
        var pendingReasoning: [ReasoningPart] = []
        func attachReasoning() {
            guard !pendingReasoning.isEmpty, let last = messages.indices.last, messages[last].role == .assistant else { return }
            messages[last].reasoning += pendingReasoning
            pendingReasoning = []
        }
        for (index, item) in items.enumerated() {
            let m = try Fields(item, prefix: "input[\(index)]")
            let type = try m.string("type") ?? "message"
            switch type {
            case "message": break
            case "function_call":
                try responsesCall(m, into: &messages, origins: &origins)
                attachReasoning()
                continue
            case "function_call_output":
                try responsesCallOutput(m, into: &messages, origins: &origins)
                continue
            case "reasoning":
                pendingReasoning.append(try responsesReasoning(m))
                continue
            case "mcp_list_tools", "mcp_call", "mcp_approval_request", "mcp_approval_response":
                try mcpInputItem(type, m, into: &messages, origins: &origins, mcp: &mcpItems)
                attachReasoning()
                continue
            default:
                throw APIError.invalid(
                    m.name("type"),
                    "'\(m.name("type"))' is '\(type.prefix(40))': only message, reasoning, function_call, function_call_output and MCP items are supported.")
            }
            let role: ChatMessage.Role
            switch try m.string("role") {
            case "system", "developer": role = .system
            case "user": role = .user
            case "assistant": role = .assistant
            case nil: throw APIError.invalid(m.name("role"), "'\(m.name("role"))' is required.", code: "missing_field")
            case let other?:
                throw APIError.invalid(
                    m.name("role"), "'\(m.name("role"))' must be system, developer, user or assistant, got '\(other.prefix(40))'.")
            }
            messages.append(ChatMessage(role: role, content: try text(m, key: "content", partTypes: ["input_text", "output_text", "text"])))
            origins.add(owner: m.prefix, callID: m.prefix, calls: m.prefix)
            attachReasoning()
        }
    }

    /// A Responses `reasoning` input item (an earlier turn's, sent back): its text (the
    /// `reasoning_text` content, else the summary), id and encrypted content, kept as a
    /// ``ReasoningPart`` of the assistant turn that follows it.
    func responsesReasoning(_ m: Fields) throws -> ReasoningPart {
        func texts(_ key: String) throws -> [String] {
            try (m.array(key) ?? []).enumerated().map { index, value in
                let part = try Fields(value, prefix: m.name("\(key)[\(index)]"))
                return try part.string("text") ?? ""
            }
        }
        let content = try texts("content")
        let summary = try texts("summary")
        let text = (content.isEmpty ? summary : content).joined(separator: "\n\n")
        return ReasoningPart(text: text, encryptedContent: try m.string("encrypted_content"), id: try m.string("id"))
    }

    /// The Responses API's `metadata`: up to 16 string pairs (keys ≤ 64 characters, values ≤ 512),
    /// as OpenAI bounds them; echoed in the response object.
    static func metadata(_ f: Fields) throws -> [(String, String)] {
        guard let value = f.value("metadata") else { return [] }
        guard case .object(let pairs) = value else { throw f.wrongType("metadata", "an object of strings", value) }
        guard pairs.count <= 16 else { throw APIError.invalid("metadata", "'metadata' holds at most 16 pairs, got \(pairs.count).") }
        return try pairs.map { key, item in
            guard case .string(let text) = item else { throw APIError.invalid("metadata.\(key.prefix(64))", "'metadata' values must be strings.", code: "invalid_type") }
            guard key.count <= 64, text.count <= 512 else {
                throw APIError.invalid("metadata", "'metadata' keys are at most 64 characters and values at most 512.")
            }
            return (key, text)
        }
    }

    /// The provider layer's one validation (`ChatOptions.validate()`, as the CLI, the
    /// REPL and `LocalProvider` apply it), as a 400 naming the field.
    /// Tools' fields are named as the client spelled them (`tools[0].function.name`).
    func validated(_ o: ChatOptions, tools: ParsedTools = ParsedTools()) throws {
        do { try o.validate() } catch {
            let field = tools.wireField(error.field)
            throw APIError.invalid(field, "'\(field)': \(tools.wireMessage(error.message)).")
        }
    }
}
