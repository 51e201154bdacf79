/// A function the model may call: its name, what it does, and its parameters as a JSON Schema.
///
/// The same value goes to every provider: the local model describes it in its own prompt
/// format and generates the call's arguments under ``parameters`` (so every call parses and
/// validates); cloud providers send it as their API's tool definition (OpenAI `tools`,
/// Anthropic `tools`, DashScope `tools`). See docs/TOOLS.md.
public struct ToolDefinition: Sendable, Hashable, Codable {
    /// The name the model calls it by: 1–64 characters of `a-z A-Z 0-9 _ -` (OpenAI's rule,
    /// applied everywhere so a request that works locally also works in the cloud).
    public var name: String
    /// What the tool does and when to use it; the model reads it.
    public var description: String?
    /// The arguments as a JSON Schema (JSON text, an object whose `type` is `object`). Kept as
    /// text so its property order — the order the model writes the arguments in — survives.
    public var parameters: String
    /// OpenAI's `strict`, passed to cloud providers that take it. The local model always
    /// enforces the whole schema.
    public var strict: Bool?

    /// Parameters of a tool that takes no arguments.
    public static let noParameters = #"{"type": "object", "properties": {}, "additionalProperties": false}"#

    /// Creates a tool definition.
    public init(name: String, description: String? = nil, parameters: String = ToolDefinition.noParameters, strict: Bool? = nil) {
        self.name = name
        self.description = description
        self.parameters = parameters
        self.strict = strict
    }
}

extension ToolDefinition {
    /// Reads a JSON array of tools, each either OpenAI's form
    /// (`{"type": "function", "function": {"name", "description", "parameters"}}`) or the bare
    /// `{"name", "description", "parameters"}` (missing parameters: none).
    /// - Throws: ``InvalidGenerationOption`` naming `tools[i]…`.
    public static func parseList(_ text: String) throws(InvalidGenerationOption) -> [ToolDefinition] {
        let value: JSONText.Value
        do { value = try JSONText.parse(text) } catch {
            throw InvalidGenerationOption(field: "tools", message: "tools is not valid JSON: \(error.message) (at byte \(error.offset))")
        }
        guard case .array(let items) = value else {
            throw InvalidGenerationOption(field: "tools", message: "tools must be a JSON array, got \(value.typeName)")
        }
        var tools: [ToolDefinition] = []
        for (i, item) in items.enumerated() {
            var spec = item
            if case .string("function") = item["type"] ?? .null, let function = item["function"] { spec = function }
            guard case .object = spec, case .string(let name) = spec["name"] ?? .null else {
                throw InvalidGenerationOption(field: "tools[\(i)].name", message: "tools[\(i)] needs a string name")
            }
            var description: String?
            if let value = spec["description"] {
                guard case .string(let text) = value else {
                    throw InvalidGenerationOption(field: "tools[\(i)].description", message: "tools[\(i)].description must be a string")
                }
                description = text
            }
            tools.append(
                ToolDefinition(name: name, description: description, parameters: spec["parameters"]?.serialized ?? ToolDefinition.noParameters))
        }
        return tools
    }
}

/// Whether and which tool the model must call.
public enum ToolChoice: Sendable, Hashable, Codable {
    /// The model decides: a text answer or calls (the default when tools are given).
    case auto
    /// No calls: the answer is text (OpenAI's and Anthropic's `none`; not named `none`, which
    /// an optional's `nil` would shadow).
    case disabled
    /// At least one call, to any of the tools.
    case required
    /// Exactly one call, to the tool of this name.
    case named(String)

    /// The OpenAI spelling: `auto`, `none`, `required`, or the tool's name.
    public var description: String {
        switch self {
        case .auto: return "auto"
        case .disabled: return "none"
        case .required: return "required"
        case .named(let name): return name
        }
    }
}

/// One call the model made: which tool, with which arguments.
public struct ToolCall: Sendable, Hashable, Codable {
    /// The call's id (`call_…` for the local model; the provider's own id for cloud models). A
    /// tool-result message names it in ``ChatMessage/toolCallID``.
    public var id: String
    /// The tool's name.
    public var name: String
    /// The arguments as JSON text (an object). From the local model it always validates
    /// against the tool's schema.
    public var arguments: String

    /// Creates a call.
    public init(id: String, name: String, arguments: String) {
        self.id = id
        self.name = name
        self.arguments = arguments
    }

    /// A fresh call id: `call_` and 24 random letters and digits.
    public static func newID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var generator = SystemRandomNumberGenerator()
        return "call_" + String((0..<24).map { _ in alphabet[Int(generator.next(upperBound: UInt(alphabet.count)))] })
    }
}

/// One step of a tool call as it streams (``ChatEvent/toolCall(_:)``).
///
/// For each call: ``started(index:id:name:)`` once, then ``arguments(index:fragment:)`` whose
/// fragments concatenate to the arguments' JSON text, then ``finished(index:)``. `index`
/// counts the reply's calls from 0, in order. A provider never streams half a call and then
/// text: a stream that fails mid-call throws (a ``FallbackRouter`` then restarts the call on
/// the next provider and the consumer never sees the broken one).
public enum ToolCallEvent: Sendable, Hashable {
    /// A call begins.
    case started(index: Int, id: String, name: String)
    /// The next piece of the call's arguments (JSON text).
    case arguments(index: Int, fragment: String)
    /// The call's arguments are complete.
    case finished(index: Int)

    /// The call this event belongs to.
    public var index: Int {
        switch self {
        case .started(let index, _, _), .arguments(let index, _), .finished(let index): return index
        }
    }
}

/// Reassembles ``ToolCallEvent``s into ``ToolCall``s.
public struct ToolCallCollector: Sendable {
    /// The calls so far, by index (a started call has its id and name; its arguments grow).
    public private(set) var calls: [ToolCall] = []
    /// The indices of calls whose ``ToolCallEvent/finished(index:)`` arrived.
    public private(set) var finished: Set<Int> = []

    /// An empty collector.
    public init() {}

    /// Adds one event (events for an index never started are ignored).
    public mutating func add(_ event: ToolCallEvent) {
        switch event {
        case .started(let index, let id, let name):
            while calls.count <= index { calls.append(ToolCall(id: "", name: "", arguments: "")) }
            calls[index] = ToolCall(id: id, name: name, arguments: "")
        case .arguments(let index, let fragment):
            if calls.indices.contains(index) { calls[index].arguments += fragment }
        case .finished(let index):
            finished.insert(index)
        }
    }

    /// Whether a call has started and not finished.
    public var hasOpenCall: Bool { calls.indices.contains { !finished.contains($0) } }
}

extension ChatOptions {
    /// Checks the tools part of the options: names of 1–64 characters of `a-z A-Z 0-9 _ -`,
    /// no name twice, parameters that are a JSON object, a named ``ToolChoice`` that names a
    /// tool, and a choice other than `auto`/`none` only with tools. Whether a schema can be
    /// enforced is known when the local model compiles it.
    /// - Throws: ``InvalidGenerationOption`` naming `tools[i].…` or `tool_choice`.
    public func validateTools() throws(InvalidGenerationOption) {
        var seen: Set<String> = []
        for (i, tool) in tools.enumerated() {
            guard ResponseFormat.isAPIName(tool.name) else {
                throw InvalidGenerationOption(
                    field: "tools[\(i)].name",
                    message: "tools[\(i)].name must be 1–64 characters of a-z, A-Z, 0-9, _ and -, got '\(tool.name.prefix(80))'")
            }
            guard seen.insert(tool.name).inserted else {
                throw InvalidGenerationOption(
                    field: "tools[\(i)].name", message: "tools[\(i)].name '\(tool.name)' is given twice; tool names must be unique")
            }
            let value: JSONText.Value
            do { value = try JSONText.parse(tool.parameters) } catch {
                throw InvalidGenerationOption(
                    field: "tools[\(i)].parameters",
                    message: "tools[\(i)].parameters is not valid JSON: \(error.message) (at byte \(error.offset))")
            }
            guard case .object(let members) = value else {
                throw InvalidGenerationOption(
                    field: "tools[\(i)].parameters", message: "tools[\(i)].parameters must be a JSON Schema object, got \(value.typeName)")
            }
            if let type = members.first(where: { $0.0 == "type" })?.1, type != .string("object") {
                throw InvalidGenerationOption(
                    field: "tools[\(i)].parameters.type",
                    message: "tools[\(i)].parameters must describe an object (\"type\": \"object\"): a call's arguments are named")
            }
        }
        switch toolChoice {
        case .named(let name):
            guard seen.contains(name) else {
                throw InvalidGenerationOption(
                    field: "tool_choice",
                    message: tools.isEmpty
                        ? "tool_choice names the tool '\(name.prefix(80))' but the request has no tools"
                        : "tool_choice names the tool '\(name.prefix(80))', which is not among the request's tools (\(tools.map(\.name).joined(separator: ", ")))")
            }
        case .required:
            if tools.isEmpty {
                throw InvalidGenerationOption(field: "tool_choice", message: "tool_choice 'required' needs at least one tool in tools")
            }
        case .auto, .disabled, nil:
            break
        }
    }

    /// The tool choice in effect: ``ToolChoice/disabled`` without tools, else the request's (default ``ToolChoice/auto``).
    public var effectiveToolChoice: ToolChoice {
        tools.isEmpty ? .disabled : (toolChoice ?? .auto)
    }
}

extension Array where Element == ChatMessage {
    /// Checks that every tool-result message answers a call an earlier assistant message
    /// made, and that call ids are unique.
    /// - Throws: ``InvalidGenerationOption`` naming `messages[i].tool_call_id`.
    package func validateToolResults() throws(InvalidGenerationOption) {
        var calls: Set<String> = []
        for (i, message) in enumerated() {
            for call in message.toolCalls {
                guard calls.insert(call.id).inserted else {
                    throw InvalidGenerationOption(
                        field: "messages[\(i)].tool_calls", message: "messages[\(i)] repeats the tool call id '\(call.id.prefix(80))'")
                }
            }
            if message.role == .tool {
                guard let id = message.toolCallID, !id.isEmpty else {
                    throw InvalidGenerationOption(
                        field: "messages[\(i)].tool_call_id", message: "messages[\(i)] is a tool result without a tool_call_id")
                }
                guard calls.contains(id) else {
                    throw InvalidGenerationOption(
                        field: "messages[\(i)].tool_call_id",
                        message: "messages[\(i)].tool_call_id '\(id.prefix(80))' answers no tool call of an earlier assistant message")
                }
            }
        }
    }

    /// The name of the tool the call `id` went to, from the assistant messages.
    package func toolName(forCall id: String) -> String? {
        for message in self {
            if let call = message.toolCalls.first(where: { $0.id == id }) { return call.name }
        }
        return nil
    }
}
