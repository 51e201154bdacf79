import Foundation
import HearthConstraints
import HearthProviders

/// Tools, tool choice and tool messages of a request, as each API spells them (docs/TOOLS-server.md):
///
/// - Chat completions: `tools: [{"type": "function", "function": {name, description,
///   parameters, strict}}]`, `tool_choice` `"auto" | "none" | "required" | {"type": "function",
///   "function": {"name"}}`, `parallel_tool_calls`; assistant messages with `tool_calls`
///   (`content` may be null) and `role: "tool"` messages with `tool_call_id`.
/// - Anthropic Messages: `tools: [{name, description, input_schema}]`, `tool_choice`
///   `{"type": "auto" | "any" | "tool" | "none", "name", "disable_parallel_tool_use"}`;
///   assistant `tool_use` blocks and user `tool_result` blocks.
/// - Responses: `tools: [{"type": "function", name, description, parameters, strict}]`,
///   `tool_choice` `"auto" | "none" | "required" | {"type": "function", "name"}`,
///   `parallel_tool_calls`; input items `function_call` and `function_call_output`.
///
/// Every API's tools become the provider protocol's ``ToolDefinition``s, ``ToolChoice`` and
/// tool messages, checked by the provider layer's one validation (``ChatOptions/validateTools()``,
/// ``Swift/Array/validateToolResults()``); its errors are answered as 400s naming the field as
/// the client sent it (`tools[1].function.name`, `messages[3].content[0].tool_use_id`).
extension RequestParser {
    /// The tools part of a request, and where each piece came from in the body.
    struct ParsedTools {
        var tools: [ToolDefinition] = []
        var choice: ToolChoice?
        var parallel: Bool?
        /// The wire path of each tool's name and schema (`tools[0].function.name`, `tools[0].input_schema`).
        var nameParams: [String] = []
        var schemaParams: [String] = []
        /// The wire path of the tool choice's tool name (`tool_choice.function.name`), or `tool_choice`.
        var choiceParam = "tool_choice"
        /// Responses: the `{"type": "mcp"}` tools and an MCP `tool_choice` (``MCPRequest``).
        var mcp: [MCPRequest.Server] = []
        var mcpChoice: (label: String, name: String?)?

        /// Adds one function definition: `name`, `description`, the schema under `schemaKey`
        /// (absent: no parameters) as the client wrote it (key order kept: the order the model
        /// writes the arguments in), `strict`; and where its name and schema are in the body.
        mutating func add(_ t: Fields, schemaKey: String, parser: RequestParser) throws {
            var parameters = ToolDefinition.noParameters
            if let schema = t.value(schemaKey) { parameters = schema.serialized }
            tools.append(
                ToolDefinition(
                    name: try parser.requiredString(t, "name"), description: try t.string("description"), parameters: parameters,
                    strict: try t.bool("strict")))
            nameParams.append(t.name("name"))
            schemaParams.append(t.name(schemaKey))
        }

        /// The options with these tools.
        func apply(to options: inout ChatOptions) {
            options.tools = tools
            options.toolChoice = choice
            options.parallelToolCalls = parallel
        }

        /// A field of the provider layer's validation (`tools[1].parameters.type`) as the client spelled it.
        func wireField(_ field: String) -> String {
            if field == "tool_choice" { return choiceParam }
            guard let (index, rest) = Self.indexed(field, "tools"), nameParams.indices.contains(index) else { return field }
            if rest.hasPrefix(".parameters") { return schemaParams[index] + rest.dropFirst(".parameters".count) }
            if rest.hasPrefix(".name") { return nameParams[index] + rest.dropFirst(".name".count) }
            return field
        }

        /// A message of the provider layer's validation with its field names as the client spelled them.
        func wireMessage(_ message: String) -> String {
            var message = message
            for index in nameParams.indices.reversed() {
                message = message.replacingOccurrences(of: "tools[\(index)].parameters", with: schemaParams[index])
                message = message.replacingOccurrences(of: "tools[\(index)].name", with: nameParams[index])
            }
            return message
        }

        /// `name[i]…` split into `i` and the rest (`tools[2].name` → (2, `.name`)).
        static func indexed(_ field: String, _ name: String) -> (Int, Substring)? {
            guard field.hasPrefix(name + "["), let close = field.firstIndex(of: "]") else { return nil }
            guard let index = Int(field[field.index(field.startIndex, offsetBy: name.count + 1)..<close]) else { return nil }
            return (index, field[field.index(after: close)...])
        }
    }

    /// Where each message of a conversation came from in the body, for 400s about tool results.
    struct MessageOrigins {
        /// The wire path of each message (`messages[2]`, `input[3]`, `messages[1].content[0]`).
        var owners: [String] = []
        /// The wire path of each message's tool-call id field (`messages[2].tool_call_id`, `…tool_use_id`, `input[3].call_id`).
        var callIDs: [String] = []
        /// The wire path of each message's calls (`messages[2].tool_calls`, `messages[1].content`).
        var calls: [String] = []

        mutating func add(owner: String, callID: String, calls: String) {
            owners.append(owner)
            callIDs.append(callID)
            self.calls.append(calls)
        }
    }

    // MARK: Tools

    /// `tools`, `tool_choice` and `parallel_tool_calls` of a chat completions body (`nested`:
    /// each definition under `function`, `type` optional) or a Responses body (flat, `type`
    /// required). Only function tools are served: hosted ones are refused by name.
    func openAITools(_ f: Fields, nested: Bool) throws -> ParsedTools {
        var parsed = ParsedTools()
        for (index, item) in (try f.array("tools") ?? []).enumerated() {
            let t = try Fields(item, prefix: "tools[\(index)]")
            let type = nested ? try t.string("type") ?? "function" : try requiredString(t, "type")
            if type == "mcp", !nested {
                parsed.mcp.append(try mcpTool(t))  // served by the operator's MCP servers (RequestMCP.swift)
                continue
            }
            guard type == "function" else {
                throw APIError.invalid(
                    t.name("type"), "'\(t.name("type"))' is '\(type.prefix(40))': only function tools are served (no custom or hosted tools).")
            }
            var definition = t
            if nested {
                guard let function = t.value("function") else {
                    throw APIError.invalid(t.name("function"), "'\(t.name("function"))' is required: {name, description, parameters}.", code: "missing_field")
                }
                definition = try Fields(function, prefix: t.name("function"))
            }
            try parsed.add(definition, schemaKey: "parameters", parser: self)
        }
        try openAIChoice(f, nameIn: nested ? "function" : nil, into: &parsed)
        return parsed
    }

    /// `tools` and `tool_choice` of an Anthropic Messages body.
    func anthropicTools(_ f: Fields) throws -> ParsedTools {
        var parsed = ParsedTools()
        for (index, item) in (try f.array("tools") ?? []).enumerated() {
            let t = try Fields(item, prefix: "tools[\(index)]")
            if let type = try t.string("type"), type != "custom" {
                throw APIError.invalid(
                    t.name("type"), "'\(t.name("type"))' is '\(type.prefix(40))': only client tools (name, description, input_schema) are served.")
            }
            guard t.value("input_schema") != nil else {
                throw APIError.invalid(t.name("input_schema"), "'\(t.name("input_schema"))' is required: the JSON Schema of the tool's input.", code: "missing_field")
            }
            try parsed.add(t, schemaKey: "input_schema", parser: self)
        }
        if let value = f.value("tool_choice") {
            let c = try Fields(value, prefix: "tool_choice")
            switch try requiredString(c, "type") {
            case "auto": parsed.choice = .auto
            case "any": parsed.choice = .required
            case "none": parsed.choice = ToolChoice.disabled
            case "tool":
                parsed.choice = .named(try requiredString(c, "name"))
                parsed.choiceParam = "tool_choice.name"
            case let other:
                throw APIError.invalid(c.name("type"), "'tool_choice.type' must be auto, any, tool or none, got '\(other.prefix(40))'.")
            }
            if try c.bool("disable_parallel_tool_use") == true { parsed.parallel = false }
        }
        return parsed
    }

    /// Chat completions' deprecated `functions` (`{name, description, parameters}`) and
    /// `function_call` (`none`, `auto`, `{"name": …}`) as tools: one call per reply, answered as
    /// `message.function_call` (``GenerationJob/legacyFunctions``).
    func legacyFunctionTools(_ f: Fields) throws -> ParsedTools {
        if f.value("tools") != nil || f.value("tool_choice") != nil {
            throw APIError.invalid("functions", "Send 'tools' / 'tool_choice' or the deprecated 'functions' / 'function_call', not both.")
        }
        var parsed = ParsedTools()
        for (index, item) in (try f.array("functions") ?? []).enumerated() {
            try parsed.add(try Fields(item, prefix: "functions[\(index)]"), schemaKey: "parameters", parser: self)
        }
        parsed.parallel = false
        switch f.value("function_call") {
        case nil: break
        case .string("auto")?: parsed.choice = .auto
        case .string("none")?: parsed.choice = ToolChoice.disabled
        case .object(let pairs)?:
            let c = try Fields(.object(pairs), prefix: "function_call")
            parsed.choice = .named(try requiredString(c, "name"))
            parsed.choiceParam = c.name("name")
        case .string(let text)?:
            throw APIError.invalid("function_call", "'function_call' must be none, auto or {\"name\": …}, got '\(text.prefix(40))'.")
        case let other?: throw f.wrongType("function_call", "a string or an object", other)
        }
        return parsed
    }

    /// The deprecated function-calling turns of a chat: an assistant's `function_call` is a tool
    /// call with an id of the server's making, and a `role: "function"` message answers the
    /// latest call of its `name` not yet answered.
    struct LegacyFunctionCalls {
        private var open: [(id: String, name: String)] = []
        private var made = 0

        /// The call of an assistant message's `function_call` (nil when it has none).
        mutating func call(_ m: Fields) throws -> ToolCall? {
            guard let value = m.value("function_call") else { return nil }
            let fn = try Fields(value, prefix: m.name("function_call"))
            guard let name = try fn.string("name") else {
                throw APIError.invalid(fn.name("name"), "'\(fn.name("name"))' is required.", code: "missing_field")
            }
            let id = "call_function_\(made)"
            made += 1
            open.append((id, name))
            return ToolCall(id: id, name: name, arguments: try fn.string("arguments") ?? "{}")
        }

        /// The call id a `role: "function"` message answers.
        mutating func result(_ m: Fields) throws -> String {
            guard let name = try m.string("name") else {
                throw APIError.invalid(m.name("name"), "'\(m.name("name"))' is required: the function this result is from.", code: "missing_field")
            }
            guard let index = open.lastIndex(where: { $0.name == name }) else {
                throw APIError.invalid(
                    m.name("name"), "'\(m.prefix)' is the result of function '\(name.prefix(64))', which no earlier assistant message's function_call named.")
            }
            return open.remove(at: index).id
        }
    }

    /// OpenAI's `tool_choice` (`auto`, `none`, `required`, or `{"type": "function"}` with the
    /// name in the object `nameIn`, or at its top when nil) and `parallel_tool_calls`.
    private func openAIChoice(_ f: Fields, nameIn: String?, into parsed: inout ParsedTools) throws {
        parsed.parallel = try f.bool("parallel_tool_calls")
        let shape = nameIn.map { "{\"type\": \"function\", \"\($0)\": {\"name\": …}}" } ?? "{\"type\": \"function\", \"name\": …}"
        switch f.value("tool_choice") {
        case nil: return
        case .string("auto")?: parsed.choice = .auto
        case .string("none")?: parsed.choice = ToolChoice.disabled
        case .string("required")?: parsed.choice = .required
        case .string(let text)?:
            throw APIError.invalid("tool_choice", "'tool_choice' must be auto, none, required or \(shape), got '\(text.prefix(40))'.")
        case .object(let pairs)?:
            let c = try Fields(.object(pairs), prefix: "tool_choice")
            if nameIn == nil, try c.string("type") == "mcp" {
                parsed.mcpChoice = (try requiredString(c, "server_label"), try c.string("name"))
                return
            }
            guard try c.string("type") == "function" else {
                throw APIError.invalid("tool_choice", "'tool_choice' must be auto, none, required or \(shape).")
            }
            var holder = c
            if let nameIn {
                guard let inner = c.value(nameIn) else {
                    throw APIError.invalid(c.name(nameIn), "'\(c.name(nameIn))' is required: \(shape).", code: "missing_field")
                }
                holder = try Fields(inner, prefix: c.name(nameIn))
            }
            parsed.choice = .named(try requiredString(holder, "name"))
            parsed.choiceParam = holder.name("name")
        case let other?: throw f.wrongType("tool_choice", "a string or an object", other)
        }
    }

    func requiredString(_ f: Fields, _ key: String) throws -> String {
        guard let text = try f.string(key) else {
            throw APIError.invalid(f.name(key), "'\(f.name(key))' is required.", code: "missing_field")
        }
        return text
    }

    // MARK: Tool messages

    /// The calls of a chat assistant message's `tool_calls`.
    func chatToolCalls(_ m: Fields) throws -> [ToolCall] {
        try (try m.array("tool_calls") ?? []).enumerated().map { index, item in
            let c = try Fields(item, prefix: m.name("tool_calls[\(index)]"))
            if let type = try c.string("type"), type != "function" {
                throw APIError.invalid(c.name("type"), "'\(c.name("type"))' must be function, got '\(type.prefix(40))'.")
            }
            guard let function = c.value("function") else {
                throw APIError.invalid(c.name("function"), "'\(c.name("function"))' is required: {name, arguments}.", code: "missing_field")
            }
            let fn = try Fields(function, prefix: c.name("function"))
            return ToolCall(id: try requiredString(c, "id"), name: try requiredString(fn, "name"), arguments: try fn.string("arguments") ?? "{}")
        }
    }

    /// The Anthropic content of one message: text runs, `tool_use` blocks (assistant) and
    /// `tool_result` blocks (user), in order, as protocol messages with their origins.
    func anthropicMessages(_ m: Fields, role: ChatMessage.Role, into messages: inout [ChatMessage], origins: inout MessageOrigins) throws {
        let owner = m.prefix
        guard case .array(let blocks)? = m.value("content") else {
            messages.append(ChatMessage(role: role, content: try text(m, key: "content", partType: "text")))
            origins.add(owner: owner, callID: owner, calls: m.name("content"))
            return
        }
        let start = messages.count
        var text = ""
        var calls: [ToolCall] = []
        var reasoning: [ReasoningPart] = []
        var pending = false
        func flush() {
            guard pending else { return }
            messages.append(ChatMessage(role: role, content: text, toolCalls: calls, reasoning: reasoning))
            origins.add(owner: owner, callID: owner, calls: m.name("content"))
            (text, calls, reasoning, pending) = ("", [], [], false)
        }
        for (index, block) in blocks.enumerated() {
            let b = try Fields(block, prefix: m.name("content[\(index)]"))
            switch try requiredString(b, "type") {
            case "text":
                text += try b.string("text") ?? ""
                pending = true
            case "tool_use" where role == .assistant:
                let input = b.value("input") ?? .object([])
                guard case .object = input else { throw b.wrongType("input", "an object", input) }
                calls.append(ToolCall(id: try requiredString(b, "id"), name: try requiredString(b, "name"), arguments: input.serialized))
                pending = true
            case "thinking" where role == .assistant:
                // Reasoning of an earlier turn, with the signature its provider needs back
                // (Anthropic's; a local block's is checked, ``ReasoningSignature``).
                reasoning.append(ReasoningSignature.returned(text: try b.string("thinking") ?? "", signature: try b.string("signature")))
                pending = true
            case "redacted_thinking" where role == .assistant:
                reasoning.append(ReasoningPart(text: "", redactedData: try requiredString(b, "data")))
                pending = true
            case "tool_result" where role == .user:
                flush()
                var result = b.value("content") == nil ? "" : try self.text(b, key: "content", partType: "text")
                if try b.bool("is_error") == true { result = "Error: " + result }
                messages.append(ChatMessage(role: .tool, content: result, toolCallID: try requiredString(b, "tool_use_id")))
                origins.add(owner: b.prefix, callID: b.name("tool_use_id"), calls: b.prefix)
            case let other:
                let allowed = role == .assistant ? "text and tool_use" : "text and tool_result"
                throw APIError.invalid(b.name("type"), "'\(b.name("type"))' is '\(other.prefix(40))': only \(allowed) blocks are supported in \(role.rawValue) messages.")
            }
        }
        flush()
        if messages.count == start {  // an empty list of blocks: an empty turn
            messages.append(ChatMessage(role: role, content: ""))
            origins.add(owner: owner, callID: owner, calls: m.name("content"))
        }
    }

    /// A Responses `function_call` item: added to the assistant message before it, or a new one.
    func responsesCall(_ m: Fields, into messages: inout [ChatMessage], origins: inout MessageOrigins) throws {
        let call = ToolCall(id: try requiredString(m, "call_id"), name: try requiredString(m, "name"), arguments: try m.string("arguments") ?? "{}")
        if messages.last?.role == .assistant, let last = messages.indices.last {
            messages[last].toolCalls.append(call)
            return
        }
        messages.append(.assistant(toolCalls: [call]))
        origins.add(owner: m.prefix, callID: m.name("call_id"), calls: m.name("call_id"))
    }

    /// A Responses `function_call_output` item as a tool message.
    func responsesCallOutput(_ m: Fields, into messages: inout [ChatMessage], origins: inout MessageOrigins) throws {
        let output = m.value("output") == nil ? "" : try text(m, key: "output", partTypes: ["input_text", "output_text", "text"])
        messages.append(.tool(output, callID: try requiredString(m, "call_id")))
        origins.add(owner: m.prefix, callID: m.name("call_id"), calls: m.name("call_id"))
    }

    /// The provider layer's check that every tool result answers an earlier call, as a 400
    /// naming the field where the client wrote it.
    func validateToolResults(_ messages: [ChatMessage], origins: MessageOrigins) throws {
        do { try messages.validateToolResults() } catch {
            var param = error.field
            var message = error.message
            if let (index, rest) = ParsedTools.indexed(error.field, "messages"), origins.owners.indices.contains(index) {
                param = rest == ".tool_calls" ? origins.calls[index] : origins.callIDs[index]
                message = message.replacingOccurrences(of: "messages[\(index)]\(rest)", with: param)
                message = message.replacingOccurrences(of: "messages[\(index)] ", with: origins.owners[index] + " ")
            }
            throw APIError.invalid(param, "'\(param)': \(message).")
        }
    }

    // MARK: Schemas the local model enforces

    /// The first tool of `job` whose parameter schema the constraint engine cannot compile, as
    /// a 400 naming its field (`tools[1].function.parameters`) and the keyword; nil when every
    /// schema compiles. The local model generates every call's arguments under its schema, so a
    /// local route refuses such a tool before any work (a cloud route leaves it to the cloud).
    static func toolSchemaError(_ job: GenerationJob) -> APIError? {
        for (index, tool) in job.options.tools.enumerated() {
            do { _ = try JSONSchema.grammar(tool.parameters) } catch let error as ConstraintError {
                let param = job.toolSchemaParams.indices.contains(index) ? job.toolSchemaParams[index] : "tools[\(index)]"
                return APIError.from(error, .toolSchema(param: param))
            } catch {
                let param = job.toolSchemaParams.indices.contains(index) ? job.toolSchemaParams[index] : "tools[\(index)]"
                return APIError.invalid(param, "'\(param)' cannot be compiled: \(error).")
            }
        }
        return nil
    }
}
