import Foundation
import HearthProviders

/// The tool-calling features an OpenAI-compatible endpoint honours.
///
/// A request that needs a feature its endpoint lacks is refused with
/// ``HearthProviders/ProviderError/Code/unsupported(feature:)`` before it is sent, never sent
/// with the feature dropped (see docs/TOOLS-cloud.md).
public struct ToolCallingSupport: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `tools` (function definitions) with `tool_choice: "auto"`, assistant `tool_calls` and
    /// `role: "tool"` messages, and streamed `delta.tool_calls`.
    public static let tools = ToolCallingSupport(rawValue: 1 << 0)
    /// `tool_choice: "none"`. Without it, ``HearthProviders/ToolChoice/disabled`` is honoured
    /// by not sending the tools (a model that does not know them cannot call them).
    public static let noneChoice = ToolCallingSupport(rawValue: 1 << 1)
    /// `tool_choice: "required"`.
    public static let requiredChoice = ToolCallingSupport(rawValue: 1 << 2)
    /// `tool_choice: {"type": "function", "function": {"name": …}}`.
    public static let namedChoice = ToolCallingSupport(rawValue: 1 << 3)
    /// `parallel_tool_calls` (needed for `parallelToolCalls: false`; `true` is every API's default).
    public static let parallelSwitch = ToolCallingSupport(rawValue: 1 << 4)

    /// Everything: OpenAI, vLLM, llama.cpp's server (started with `--jinja`).
    public static let openAI: ToolCallingSupport = [.tools, .noneChoice, .requiredChoice, .namedChoice, .parallelSwitch]
    /// Qwen on Model Studio (compatible mode and DashScope's native API): auto, none, a named
    /// tool and `parallel_tool_calls` (no documented `required`).
    public static let qwen: ToolCallingSupport = [.tools, .noneChoice, .namedChoice, .parallelSwitch]
    /// No tools: a request with tools (other than `tool_choice` none) is refused.
    public static let none: ToolCallingSupport = []
}

/// Shared pieces of mapping tools to a cloud API's request body and back.
enum ToolWire {
    /// The error for a tool feature a provider's API does not have (raised before any request is sent).
    static func unsupported(_ feature: String, provider: String, api: String, hint: String? = nil) -> ProviderError {
        let extra = hint.map { " \($0)" } ?? ""
        return ProviderError(
            .unsupported(feature: feature), provider: provider,
            message: "\(api) cannot honour \(feature).\(extra) The local model can (FallbackRouter fails over to it).")
    }

    /// Checks the request's tools and tool messages before they are mapped: a malformed tool
    /// (``ChatOptions/validateTools()``) or a tool result that answers no call is
    /// ``ProviderError/Code/invalidRequest``.
    static func validate(_ request: ChatRequest, provider: String) throws {
        do {
            try request.options.validateTools()
            try request.messages.validateToolResults()
        } catch {
            throw ProviderError(.invalidRequest, provider: provider, message: error.message, underlying: error)
        }
    }

    /// Refuses `logit_bias` on an API that has no such field (token ids belong to one
    /// vocabulary; dropping the field would leave the client believing it took effect).
    static func refuseLogitBias(_ request: ChatRequest, provider: String, api: String) throws {
        guard !request.options.logitBias.isEmpty else { return }
        throw ProviderError(
            .unsupported(feature: "logit_bias"), provider: provider,
            message: "\(api) has no logit_bias; send the request without it or to an OpenAI-compatible provider")
    }

    /// Refuses tools on an API that has none (``ToolChoice/disabled`` is honoured by sending
    /// none), and tool-call or tool-result messages it cannot carry.
    static func refuseTools(_ request: ChatRequest, provider: String, api: String) throws {
        try validate(request, provider: provider)
        if request.options.effectiveToolChoice != .disabled {
            throw unsupported("tools", provider: provider, api: api, hint: "Its API has no function calling.")
        }
        if request.messages.contains(where: { $0.role == .tool || !$0.toolCalls.isEmpty }) {
            throw unsupported(
                "tool messages", provider: provider, api: api,
                hint: "Its messages cannot carry tool calls or tool results.")
        }
    }

    /// The tool choice to send for an API with `support`: `nil` for ``ToolChoice/disabled``
    /// when the API has no `none` (the tools are then left out); `required` with one tool is
    /// that tool by name (and the reverse) when the API has only one of the two.
    /// - Throws: ``ProviderError/Code/unsupported(feature:)`` for a choice the API cannot express.
    static func resolvedChoice(
        _ options: ChatOptions, support: ToolCallingSupport, provider: String, api: String
    ) throws -> ToolChoice? {
        let choice = options.effectiveToolChoice
        if choice == .disabled { return support.contains(.noneChoice) ? .disabled : nil }
        guard support.contains(.tools) else {
            throw ToolWire.unsupported("tools", provider: provider, api: api, hint: "It has no function calling.")
        }
        switch choice {
        case .required where !support.contains(.requiredChoice):
            if support.contains(.namedChoice), options.tools.count == 1 { return .named(options.tools[0].name) }
            throw ToolWire.unsupported("tool_choice required", provider: provider, api: api)
        case .named where !support.contains(.namedChoice):
            if support.contains(.requiredChoice), options.tools.count == 1 { return .required }
            throw ToolWire.unsupported("tool_choice naming a tool", provider: provider, api: api)
        default:
            return choice
        }
    }

    /// A call's arguments as compact JSON text (key order kept); `""` becomes `{}`.
    /// - Throws: ``ProviderError/Code/invalidRequest`` when they are not a JSON object.
    static func arguments(_ call: ToolCall, provider: String) throws -> String {
        if call.arguments.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return "{}" }
        let value: JSONText.Value
        do { value = try JSONText.parse(call.arguments) } catch {
            throw ProviderError(
                .invalidRequest, provider: provider,
                message: "The arguments of tool call '\(call.id.prefix(80))' are not valid JSON: \(error.message) (at byte \(error.offset)).")
        }
        guard case .object = value else {
            throw ProviderError(
                .invalidRequest, provider: provider,
                message: "The arguments of tool call '\(call.id.prefix(80))' must be a JSON object, got \(value.typeName).")
        }
        return value.serialized
    }

    /// A tool's parameters schema as compact JSON text (key order kept; already validated).
    static func schema(_ tool: ToolDefinition) -> String {
        (try? JSONText.parse(tool.parameters).serialized) ?? tool.parameters
    }
}

/// JSON texts (schemas, call arguments) placed into a body built with `JSONSerialization`:
/// each goes in as a unique placeholder string and is replaced by its own text afterwards, so
/// it keeps its key order — the order a model writes the keys in — which a dictionary would lose.
struct RawJSONPieces {
    private var pieces: [(placeholder: String, text: String)] = []

    /// A placeholder that ``splice(into:provider:)`` replaces with `text` (valid JSON).
    mutating func add(_ text: String) -> String {
        let placeholder = ResponseFormatWire.placeholder()
        pieces.append((placeholder, text))
        return placeholder
    }

    /// `body` with every placeholder replaced.
    func splice(into body: Data, provider: String) throws -> Data {
        var body = body
        for piece in pieces {
            body = try ResponseFormatWire.splice(body, placeholder: piece.placeholder, schema: piece.text, provider: provider)
        }
        return body
    }

    /// Serialises `body` (sorted keys, slashes unescaped) and splices the pieces in.
    func data(_ body: [String: Any], provider: String) throws -> Data {
        let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])
        return try splice(into: data, provider: provider)
    }
}

/// Turns OpenAI-shaped streamed tool-call deltas (`{index, id, function: {name, arguments}}`,
/// as OpenAI-compatible servers and DashScope send them) into ``ToolCallEvent``s.
///
/// Calls are numbered 0, 1, … in the order their wire index first appears. A call's
/// ``ToolCallEvent/started(index:id:name:)`` goes out when its arguments begin (its name may
/// arrive in pieces before that); it is finished when another index starts or the reply ends.
/// A call with no arguments gets `{}`. A piece for a call already finished (interleaved
/// calls) or a call without a name is ``ProviderError/Code/decoding``.
struct StreamedToolCalls {
    private struct Pending {
        var id: String
        var name: String
        var started = false
        var sentArguments = false
    }

    private var byWireIndex: [Int: Int] = [:]
    private var calls: [Pending] = []
    private var open: Int?
    private var lastWireIndex: Int?

    /// How many calls the reply has made so far.
    var count: Int { calls.count }

    /// Handles one delta for the call at `wireIndex` (nil: the current call, or the first).
    mutating func add(
        wireIndex: Int?, id: String?, name: String?, arguments: String?, sink: EventSink, provider: String
    ) throws {
        let key = wireIndex ?? lastWireIndex ?? 0
        lastWireIndex = key
        let index: Int
        if let known = byWireIndex[key] {
            guard known == open else {
                throw ProviderError(
                    .decoding, provider: provider,
                    message: "The reply continued tool call \(known) after the next call had begun (interleaved calls are not supported).")
            }
            index = known
        } else {
            try closeOpen(sink: sink, provider: provider)
            index = calls.count
            byWireIndex[key] = index
            calls.append(Pending(id: "", name: ""))
            open = index
        }
        if let id, !id.isEmpty, calls[index].id.isEmpty { calls[index].id = id }
        if let name, !name.isEmpty {
            if !calls[index].started {
                calls[index].name += name
            } else if name != calls[index].name {
                throw ProviderError(
                    .decoding, provider: provider, message: "The reply renamed tool call \(index) after its arguments began.")
            }
        }
        if let arguments, !arguments.isEmpty {
            try start(index, sink: sink, provider: provider)
            calls[index].sentArguments = true
            sink.toolCall(.arguments(index: index, fragment: arguments))
        }
    }

    /// Finishes the open call (at the end of the reply).
    mutating func finish(sink: EventSink, provider: String) throws {
        try closeOpen(sink: sink, provider: provider)
    }

    private mutating func start(_ index: Int, sink: EventSink, provider: String) throws {
        guard !calls[index].started else { return }
        guard !calls[index].name.isEmpty else {
            throw ProviderError(.decoding, provider: provider, message: "The reply's tool call \(index) has no function name.")
        }
        if calls[index].id.isEmpty { calls[index].id = ToolCall.newID() }
        calls[index].started = true
        sink.toolCall(.started(index: index, id: calls[index].id, name: calls[index].name))
    }

    private mutating func closeOpen(sink: EventSink, provider: String) throws {
        guard let index = open else { return }
        open = nil
        try start(index, sink: sink, provider: provider)
        if !calls[index].sentArguments { sink.toolCall(.arguments(index: index, fragment: "{}")) }
        sink.toolCall(.finished(index: index))
    }
}
