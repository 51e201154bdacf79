import Foundation

/// What the fakes do with a request that carries tools, shared by the OpenAI, Anthropic and
/// DashScope fakes so each only maps it to its own wire format.
///
/// The rule: when the request has tools, its tool choice is not `none` and its last message is
/// the user's (not a tool result), the reply is tool calls — the named tool when the choice
/// names one, else the first tool and, when there are several and parallel calls are allowed,
/// the second too. Each call's arguments are made from its schema's properties (a string is
/// `"Hangzhou 杭州"`, a number or integer `3`, a boolean `true`, anything else `null`), so a
/// tool without properties is called with `{}`. After a tool result, the reply is text that
/// quotes the result.
public struct FakeToolPlan: Sendable, Equatable {
    /// One call the fake makes.
    public struct Call: Sendable, Equatable {
        /// The call id (`call_…` / `toolu_…`, numbered).
        public var id: String
        /// The tool's name.
        public var name: String
        /// The arguments, JSON text with sorted keys.
        public var arguments: String
    }

    /// The calls (empty: answer with text).
    public var calls: [Call]

    /// A tool as the request named it: its name and parameters schema.
    public struct Tool: Sendable {
        public var name: String
        public var schema: [String: any Sendable]

        public init(name: String, schema: [String: any Sendable]) {
            self.name = name
            self.schema = schema
        }
    }

    /// The plan for `tools` under `choice` (`auto`, `none`, `required` or `any`, or a tool's
    /// name) with parallel calls `parallel`; `lastIsUser` is false after a tool result.
    public static func plan(tools: [Tool], choice: String?, named: String?, parallel: Bool, lastIsUser: Bool, idPrefix: String)
        -> FakeToolPlan
    {
        guard !tools.isEmpty, choice != "none", lastIsUser else { return FakeToolPlan(calls: []) }
        var chosen: [Tool]
        if let named, let tool = tools.first(where: { $0.name == named }) {
            chosen = [tool]
        } else {
            chosen = Array(tools.prefix(parallel ? 2 : 1))
        }
        if chosen.isEmpty { chosen = [tools[0]] }
        let calls = chosen.enumerated().map { number, tool in
            Call(id: "\(idPrefix)fake\(number)", name: tool.name, arguments: arguments(for: tool.schema))
        }
        return FakeToolPlan(calls: calls)
    }

    /// Arguments made from a schema's `properties`.
    static func arguments(for schema: [String: any Sendable]) -> String {
        let properties = schema["properties"] as? [String: Any] ?? [:]
        var object: [String: Any] = [:]
        for (key, value) in properties {
            switch (value as? [String: Any])?["type"] as? String {
            case "string": object[key] = "Hangzhou 杭州"
            case "number", "integer": object[key] = 3
            case "boolean": object[key] = true
            default: object[key] = NSNull()
            }
        }
        return json(object)
    }

    /// `text` cut into pieces of 1 to 6 characters (whole characters, as a JSON string must
    /// hold them), the same cuts for the same seed.
    static func pieces(_ text: String, seed: UInt64) -> [String] {
        var random = SplitMix64(seed: seed)
        var pieces: [String] = []
        var start = text.startIndex
        while start < text.endIndex {
            let end = text.index(start, offsetBy: Int.random(in: 1...6, using: &random), limitedBy: text.endIndex) ?? text.endIndex
            pieces.append(String(text[start..<end]))
            start = end
        }
        return pieces
    }

    /// The text a fake answers after a tool result.
    static func answer(toResult result: String) -> String {
        "根据工具结果（\(result)），杭州今天晴 ☀️。"
    }
}

/// Checks of the OpenAI-shaped tool fields the OpenAI and DashScope fakes share; each returns
/// a description of what is wrong, or nil.
enum OpenAIToolShapes {
    /// `tools: [{type: "function", function: {name, description?, parameters?, strict?}}]`.
    static func tools(_ value: Any?) -> (tools: [FakeToolPlan.Tool], problem: String?) {
        guard let value else { return ([], nil) }
        guard let list = value as? [[String: Any]], !list.isEmpty else { return ([], "tools is not a non-empty array of objects") }
        var tools: [FakeToolPlan.Tool] = []
        for (i, entry) in list.enumerated() {
            guard entry["type"] as? String == "function", let function = entry["function"] as? [String: Any],
                let name = function["name"] as? String, !name.isEmpty
            else { return (tools, "tools[\(i)] is not {type: function, function: {name, …}}") }
            if let description = function["description"], !(description is String) {
                return (tools, "tools[\(i)].function.description is not a string")
            }
            if let strict = function["strict"], !(strict is Bool) { return (tools, "tools[\(i)].function.strict is not a boolean") }
            let schema = function["parameters"] ?? [String: Any]()
            guard let object = schema as? [String: any Sendable] else {
                return (tools, "tools[\(i)].function.parameters is not an object")
            }
            tools.append(FakeToolPlan.Tool(name: name, schema: object))
        }
        return (tools, nil)
    }

    /// `tool_choice`: `"auto"`, `"none"`, `"required"` (when `required` is allowed) or
    /// `{type: "function", function: {name}}` naming one of `tools`. Returns the choice and the name.
    static func choice(_ value: Any?, tools: [FakeToolPlan.Tool], allowsRequired: Bool)
        -> (choice: String?, named: String?, problem: String?)
    {
        guard let value else { return (nil, nil, nil) }
        if tools.isEmpty { return (nil, nil, "tool_choice without tools") }
        if let text = value as? String {
            let allowed = allowsRequired ? ["auto", "none", "required"] : ["auto", "none"]
            return allowed.contains(text) ? (text, nil, nil) : (nil, nil, "tool_choice '\(text)' is not one of \(allowed)")
        }
        guard let object = value as? [String: Any], object["type"] as? String == "function",
            let name = (object["function"] as? [String: Any])?["name"] as? String
        else { return (nil, nil, "tool_choice is not a string or {type: function, function: {name}}") }
        guard tools.contains(where: { $0.name == name }) else { return (nil, nil, "tool_choice names '\(name)', which is not a tool") }
        return ("named", name, nil)
    }

    /// Messages' tool fields: an assistant's `tool_calls` (`[{id, type: function, function:
    /// {name, arguments: string}}]`) and a tool message's `tool_call_id`, which must answer
    /// an earlier call.
    static func messages(_ messages: [[String: Any]]) -> String? {
        var calls: Set<String> = []
        for (i, message) in messages.enumerated() {
            if let list = message["tool_calls"] {
                guard message["role"] as? String == "assistant", let list = list as? [[String: Any]], !list.isEmpty else {
                    return "messages[\(i)].tool_calls is not a non-empty array on an assistant message"
                }
                for call in list {
                    guard let id = call["id"] as? String, !id.isEmpty, call["type"] as? String == "function",
                        let function = call["function"] as? [String: Any], function["name"] is String,
                        function["arguments"] is String
                    else { return "messages[\(i)].tool_calls has an entry that is not {id, type: function, function: {name, arguments}}" }
                    calls.insert(id)
                }
            }
            if message["role"] as? String == "tool" {
                guard let id = message["tool_call_id"] as? String, calls.contains(id) else {
                    return "messages[\(i)] is a tool message whose tool_call_id answers no earlier call"
                }
            }
        }
        return nil
    }
}
