import HearthConstraints
import HearthProviders
import HearthTokenizers

/// How a local model is shown tools and writes its calls: each chat template's own form.
///
/// | template | tools shown | a call | results |
/// |---|---|---|---|
/// | Phi-4-mini | `<|tool|>[…]<|/tool|>` in the system turn | `functools[{"name": …, "arguments": …}, …]` | `<|tool|>` turns |
/// | Llama 3.1–3.3 | JSON specs in the first user turn, `Environment: ipython` | `{"name": …, "parameters": …}` (one per reply) | `ipython` turns |
/// | ChatML (Qwen 2.5, Hermes) | `<tools>…</tools>` in the system turn | `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>` | `<tool_response>` in a user turn |
/// | Gemma, Phi-3, Phi-2, base models | the ChatML/Hermes instructions, as prompt text | the same tagged JSON | the same |
///
/// Every call is generated under a grammar built from the tools' schemas
/// (`grammar(tools:choice:parallel:)`), so it always parses and its arguments validate.
public struct ToolFormat: Sendable, Hashable {
    /// The call syntaxes.
    public enum Style: String, Sendable, CaseIterable {
        /// `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`, one block per call.
        case taggedJSON = "tagged-json"
        /// `functools[{"name": …, "arguments": …}, …]` (Phi-4-mini).
        case functools
        /// `{"name": …, "parameters": …}`, one call per reply (Llama 3.x).
        case llama3JSON = "llama3-json"
    }

    /// The call syntax.
    public let style: Style

    /// Creates the format of a style.
    public init(_ style: Style) { self.style = style }

    /// The format a chat template's models were trained on (the tagged JSON for templates
    /// without a native tool form).
    package static func forTemplate(_ format: ChatTemplate.Format) -> ToolFormat {
        switch format {
        case .phi4Mini: return ToolFormat(.functools)
        case .llama3: return ToolFormat(.llama3JSON)
        case .chatml, .phi3, .gemma, .instruct, .dialogue, .jinja: return ToolFormat(.taggedJSON)
        }
    }

    // MARK: Syntax

    /// Text before the first call.
    var listOpen: String { style == .functools ? "functools[" : "" }
    /// Text before each call's object.
    var callOpen: String { style == .taggedJSON ? "<tool_call>\n" : "" }
    /// Text after each call's object.
    var callClose: String { style == .taggedJSON ? "\n</tool_call>" : "" }
    /// Text between calls.
    var separator: String { style == .functools ? ", " : "\n" }
    /// Text after the last call.
    var listClose: String { style == .functools ? "]" : "" }
    /// The key of the call object that holds the arguments.
    var argumentsKey: String { style == .llama3JSON ? "parameters" : "arguments" }
    /// Whether a reply may hold several calls.
    public var allowsParallelCalls: Bool { style != .llama3JSON }
    /// What a reply that calls tools begins with; a text reply may not begin with it.
    var trigger: String {
        switch style {
        case .taggedJSON: return "<tool_call>"
        case .functools: return "functools["
        case .llama3JSON: return "{"
        }
    }
    /// The fixed text from the reply's start to the first call's name.
    var callPrefix: String { listOpen + callOpen + #"{"name": ""# }

    /// One call as the model writes it (arguments in Python's `json.dumps` spacing, as chat
    /// templates render them).
    func render(_ call: ToolCall) -> String {
        let arguments = (try? JSONText.parse(call.arguments)).map { PythonJSON.dumps($0) } ?? call.arguments
        return callOpen + #"{"name": ""# + call.name + #"", ""# + argumentsKey + #"": "# + arguments + "}" + callClose
    }

    /// An assistant message's calls as the model writes them (after any text it wrote first).
    func render(_ calls: [ToolCall], after content: String) -> String {
        let written = listOpen + calls.map(render).joined(separator: separator) + listClose
        switch style {
        case .llama3JSON: return written  // its template writes the call alone
        case .taggedJSON, .functools: return content.isEmpty ? written : content + "\n" + written
        }
    }

    // MARK: Prompt

    /// The conversation as turns of the model's chat template, with the tools described the
    /// way the model was trained to read them, earlier calls in its call syntax and tool
    /// results in its result turns. `toolsDeclared` is for `ChatTemplate.render`.
    func turns(_ messages: [ChatMessage], tools: [ToolDefinition]) -> (turns: [ChatTurn], toolsDeclared: Bool) {
        var turns: [ChatTurn] = []
        var rest = messages[...]
        var system: String?
        if let first = rest.first, first.role == .system {
            system = first.content
            rest = rest.dropFirst()
        }
        switch style {
        case .taggedJSON:
            if !tools.isEmpty {
                turns.append(ChatTurn(role: "system", content: (system ?? "You are a helpful assistant.") + taggedInstructions(tools)))
            } else if let system {
                turns.append(ChatTurn(role: "system", content: system))
            }
        case .functools:
            if !tools.isEmpty {
                let specs = JSONText.Value.array(tools.map { Self.spec($0) })
                turns.append(
                    ChatTurn(
                        role: "system",
                        content: (system ?? "You are a helpful assistant with some tools.") + "<|tool|>" + PythonJSON.dumps(specs)
                            + "<|/tool|>"))
            } else if let system {
                turns.append(ChatTurn(role: "system", content: system))
            }
        case .llama3JSON:
            turns.append(ChatTurn(role: "system", content: system ?? ""))
            if !tools.isEmpty, let first = rest.first, first.role == .user {
                let specs = tools.map { PythonJSON.dumps(Self.openAISpec($0), indent: 4) + "\n\n" }.joined()
                turns.append(
                    ChatTurn(
                        role: "user",
                        content: "Given the following functions, please respond with a JSON for a function call with its proper "
                            + "arguments that best answers the given prompt.\n\n"
                            + #"Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}."#
                            + "Do not use variables.\n\n" + specs + ChatTemplate.trimmed(first.content)))
                rest = rest.dropFirst()
            }
        }
        var pendingResults: [String] = []
        func flushResults() {
            guard !pendingResults.isEmpty else { return }
            turns.append(ChatTurn(role: "user", content: pendingResults.joined(separator: "\n")))
            pendingResults = []
        }
        for message in rest {
            switch message.role {
            case .tool:
                switch style {
                case .taggedJSON: pendingResults.append("<tool_response>\n" + message.content + "\n</tool_response>")
                case .functools: turns.append(ChatTurn(role: "tool", content: message.content))
                // Llama's template writes a string result through `tojson` (a string is iterable
                // in Jinja), so the model reads it as a JSON string.
                case .llama3JSON: turns.append(ChatTurn(role: "ipython", content: PythonJSON.dumps(.string(message.content))))
                }
                continue
            case .assistant where !message.toolCalls.isEmpty:
                flushResults()
                turns.append(ChatTurn(role: "assistant", content: render(message.toolCalls, after: message.content)))
            case .system, .user, .assistant:
                flushResults()
                turns.append(ChatTurn(role: message.role.rawValue, content: message.content))
            }
        }
        flushResults()
        return (turns, style == .llama3JSON && !tools.isEmpty)
    }

    /// The tools block of the tagged form (Qwen 2.5's wording), after the system text.
    private func taggedInstructions(_ tools: [ToolDefinition]) -> String {
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            + "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
            + tools.map { "\n" + PythonJSON.dumps(Self.openAISpec($0)) }.joined()
            + "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
            + "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
    }

    /// `{"name", "description", "parameters"}` (the form Phi-4-mini's model card shows).
    static func spec(_ tool: ToolDefinition) -> JSONText.Value {
        var members: [(String, JSONText.Value)] = [("name", .string(tool.name))]
        if let description = tool.description { members.append(("description", .string(description))) }
        members.append(("parameters", (try? JSONText.parse(tool.parameters)) ?? .object([])))
        return .object(members)
    }

    /// `{"type": "function", "function": {…}}` (what chat templates receive from transformers).
    static func openAISpec(_ tool: ToolDefinition) -> JSONText.Value {
        .object([("type", .string("function")), ("function", spec(tool))])
    }

    // MARK: Grammar

    /// The grammar of a reply under `choice`: calls to `tools` whose arguments follow their
    /// schemas (several when `parallel` and the syntax allows it; exactly one to the named
    /// tool), or — for `ToolChoice.auto` — text that does not begin like a call, or — for
    /// `ToolChoice.disabled` — only such text. At most two white-space bytes may precede either.
    /// - Throws: `ConstraintError` (`ConstraintError.schemaIndex` names the tool at fault).
    package func grammar(tools: [ToolDefinition], choice: ToolChoice, parallel: Bool) throws -> Grammar {
        var callable = tools
        var several = parallel && allowsParallelCalls
        switch choice {
        case .named(let name):
            callable = tools.filter { $0.name == name }
            several = false
        case .disabled:
            callable = []
        case .auto, .required:
            break
        }
        return try JSONSchema.grammar(schemas: callable.map(\.parameters)) { arguments in
            let lead = GrammarExpression.repeating(.bytes(ByteSet(bytes: Array(" \n".utf8))), min: 0, max: 2)
            let calls: GrammarExpression
            if callable.isEmpty {
                calls = .choice([])
            } else {
                let one = GrammarExpression.choice(
                    zip(callable, arguments).map { tool, value in
                        .sequence([
                            .literal(callOpen + #"{"name": ""# + tool.name + #"", ""# + argumentsKey + #"": "#), value,
                            .literal("}" + callClose),
                        ])
                    })
                calls = .sequence([
                    .literal(listOpen), one, several ? .zeroOrMore(.sequence([.literal(separator), one])) : .empty,
                    .literal(listClose),
                ])
            }
            switch choice {
            case .required, .named: return .sequence([lead, calls])
            case .auto: return .sequence([lead, .choice([calls, Self.textNotStarting(with: trigger)])])
            case .disabled: return .sequence([lead, Self.textNotStarting(with: trigger)])
            }
        }
    }

    /// Any text that does not begin with `trigger` or white space (the empty text included).
    static func textNotStarting(with trigger: String) -> GrammarExpression {
        let bytes = Array(trigger.utf8)
        let anything = GrammarExpression.zeroOrMore(.bytes(.all))
        var options: [GrammarExpression] = [.empty]
        for i in bytes.indices {
            var other = ByteSet(bytes[i]).inverted
            if i == 0 { other = other.intersection(ByteSet(bytes: Array(" \t\n\r".utf8)).inverted) }
            options.append(.sequence([.byteString(Array(bytes[..<i])), .bytes(other), anything]))
            if i > 0 { options.append(.byteString(Array(bytes[..<i]))) }
        }
        return .choice(options)
    }
}

/// JSON text as Python's `json.dumps(value, ensure_ascii=False, indent=indent)` writes it —
/// what Jinja's `tojson` in transformers' chat templates produces, so a prompt Hearth renders
/// is the one the model was trained on (HearthJSON's writer, ``JSON/Layout/python(indent:)``).
enum PythonJSON {
    static func dumps(_ value: JSON, indent: Int? = nil) -> String { value.serialized(.python(indent: indent)) }
}
