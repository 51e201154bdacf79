import Foundation
import HearthEngine
import HearthProviders
import HearthTemplates
import HearthTokenizers

/// How a request becomes the model's prompt when the checkpoint ships its own Jinja template
/// (issue 58): the template gets the whole conversation — tool calls with their arguments as
/// objects, tool results with the call's id and name, each assistant turn's reasoning as
/// `reasoning_content` — plus `tools`, `documents`, `add_generation_prompt` and the request's
/// `chat_template_kwargs` (``ChatOptions/chatTemplateKwargs``; `enable_thinking: false`
/// is passed when the request turns reasoning off and the template reads it).
///
/// Tools go to the template itself when it writes them in the call syntax Hearth generates and
/// parses (``ToolFormat``: Llama 3's JSON, the `<tool_call>` tags) and the rendered prompt shows
/// every tool, call and result; otherwise (a template with no tool support, or another call
/// syntax) the conversation is first rewritten into plain turns that describe the tools in
/// that syntax (``ToolFormat/turns(_:tools:)``), which the template then renders.
extension LocalProvider {
    /// The prompt text of `messages` under `request` (before the reasoning suffix and the
    /// continuation): the base-model dialogue, the hand-written renderer, or the model's own template.
    /// `ending` is how the prompt ends (a generation prompt, unless `/apply-template` asks for
    /// none or for the final message left open).
    /// - Throws: `ProviderError` `.invalidRequest` for malformed `chat_template_kwargs`;
    ///   `EngineError` for a template that fails or a model without one.
    func renderPrompt(_ messages: [ChatMessage], _ request: ChatRequest, model: TransformerModel, ending: PromptEnding = .generationPrompt)
        throws -> String
    {
        let dialogue = usesDialogue(model)
        let toolFormat = Self.involvesTools(request) ? self.toolFormat(model) : nil
        let generate = ending == .generationPrompt, open = ending == .finalMessageOpen
        guard !dialogue, let jinja = model.chatTemplate?.activeJinja else {
            let (turns, toolsDeclared) =
                toolFormat?.turns(messages, tools: request.options.tools)
                ?? (messages.map { ChatTurn(role: $0.role.rawValue, content: $0.content) }, false)
            if generate || dialogue { return try model.chatPromptText(turns, dialogue: dialogue, toolsDeclared: toolsDeclared) }
            return try model.chatPromptText(
                ChatTemplateInput(
                    messages: turns.map { ["role": .string($0.role), "content": .string($0.content)] as JinjaValue },
                    continueFinalMessage: open))
        }
        var variables = try templateVariables(request, jinja)
        var documents: [JinjaValue]? = nil
        if case .list(let given)? = variables.removeValue(forKey: "documents") { documents = given }
        let tools = request.options.tools
        if let toolFormat {
            // A file's `tool_use` template renders when tools are given (``TransformerModel/chatPromptText(_:)``).
            let toolTemplate = tools.isEmpty ? jinja : (model.chatTemplate?.toolUseJinja ?? jinja)
            if Self.rendersToolsNatively(toolTemplate, toolFormat) {
                let input = ChatTemplateInput(
                    messages: templateMessages(messages), tools: tools.isEmpty ? nil : tools.map(Self.templateTool),
                    documents: documents, addGenerationPrompt: generate, continueFinalMessage: open, extraVariables: variables)
                if let text = try? model.chatPromptText(input), Self.shows(text, messages: messages, tools: tools) { return text }
            }
            let (turns, _) = toolFormat.turns(messages, tools: tools)
            return try model.chatPromptText(
                ChatTemplateInput(
                    messages: turns.map { ["role": .string($0.role), "content": .string($0.content)] as JinjaValue },
                    documents: documents, addGenerationPrompt: generate, continueFinalMessage: open, extraVariables: variables))
        }
        return try model.chatPromptText(
            ChatTemplateInput(
                messages: templateMessages(messages), documents: documents, addGenerationPrompt: generate,
                continueFinalMessage: open, extraVariables: variables))
    }

    /// How a rendered prompt ends.
    public enum PromptEnding: Sendable {
        /// With the header of the assistant's reply (`add_generation_prompt`), as generation renders it.
        case generationPrompt
        /// After the last message (`add_generation_prompt` false).
        case afterLastMessage
        /// Inside the final message, left open for the model to continue (`continue_final_message`).
        case finalMessageOpen
    }

    /// The prompt text of a chat request as the model is given it (special tokens written as
    /// text): the rendered conversation, the no-think block when the request turns reasoning
    /// off, and any partial answer to continue. What `POST /apply-template` returns and
    /// `hearth chat`'s `/show prompt` prints. Loads the model when it is not loaded.
    /// `ending` other than ``PromptEnding/generationPrompt`` renders the conversation as
    /// transformers' `add_generation_prompt=False` or `continue_final_message=True` do (no
    /// no-think block then).
    /// - Throws: `ProviderError` (`.invalidRequest` for a template that fails on this conversation).
    public func promptText(_ request: ChatRequest, ending: PromptEnding = .generationPrompt) async throws -> String {
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        let model = generator.model
        do {
            if !request.optionsChecked { try request.options.validate() }
            let text = try renderPrompt(request.messages, request, model: model, ending: ending)
            guard ending == .generationPrompt else { return text + (request.continuation ?? "") }
            return reasoningPrompt(text, request, model) + (request.continuation ?? "")
        } catch let error as InvalidGenerationOption {
            throw ProviderError(.invalidRequest, provider: id, message: error.message, underlying: error)
        } catch {
            throw providerError(error)
        }
    }

    /// What renders this provider's prompts once its model is loaded (nil before): the model's
    /// own Jinja template and where it came from, a hand-written format, or the base-model
    /// dialogue (`ChatTemplate.rendererDescription`). For `hearth chat`'s `/show` and the
    /// server's `GET /props`.
    package var promptRenderer: String? {
        guard let model = generatorIfLoaded?.model else { return nil }
        if usesDialogue(model) { return "the User:/Assistant: dialogue for base models" }
        return model.chatTemplate?.rendererDescription ?? "none (the model has no chat template)"
    }

    /// The loaded model's own chat template source, as `GET /props` reports it (nil before the
    /// model loads or when the prompt format is hand-written).
    package var chatTemplateSource: String? {
        generatorIfLoaded?.model.chatTemplate?.activeJinja?.source
    }

    /// The extra variables of a request: its `chat_template_kwargs` object, and
    /// `enable_thinking: false` when the request turns reasoning off and the template reads it.
    /// - Throws: `ProviderError` `.invalidRequest` when the kwargs are not a JSON object.
    func templateVariables(_ request: ChatRequest, _ jinja: JinjaChatTemplate) throws -> [String: JinjaValue] {
        var variables: [String: JinjaValue] = [:]
        if let text = request.options.chatTemplateKwargs {
            guard case .dict(let object) = (try? JinjaValue.fromJSON(text)) ?? .none else {
                throw ProviderError(
                    .invalidRequest, provider: id, message: "chat_template_kwargs must be a JSON object",
                    underlying: InvalidGenerationOption(field: "chat_template_kwargs", message: "must be an object"))
            }
            for (key, value) in object.entries {
                if case .string(let name) = key { variables[name] = value }
            }
        }
        if Self.reasoningOff(request), variables["enable_thinking"] == nil, jinja.mentions("enable_thinking") {
            variables["enable_thinking"] = .bool(false)
        }
        return variables
    }

    /// `chat_template_kwargs.enable_thinking` when the request sets it to a boolean.
    static func thinkingSwitch(_ request: ChatRequest) -> Bool? {
        guard let text = request.options.chatTemplateKwargs, case .dict(let object)? = try? JinjaValue.fromJSON(text),
            case .bool(let enabled)? = object[string: "enable_thinking"]
        else { return nil }
        return enabled
    }

    /// The messages as transformers hands them to a template: `role`, `content`; an assistant
    /// turn's `tool_calls` (`{"id", "type": "function", "function": {"name", "arguments"}}`, the
    /// arguments an object when they parse) and its reasoning as `reasoning_content` (the parts
    /// that belong to this provider, redacted ones left out); a tool result's `tool_call_id`
    /// and the called function's `name`.
    func templateMessages(_ messages: [ChatMessage]) -> [JinjaValue] {
        var names: [String: String] = [:]
        for message in messages { for call in message.toolCalls { names[call.id] = call.name } }
        return messages.map { message in
            var d = JinjaDict()
            d["role"] = .string(message.role.rawValue)
            d["content"] = .string(message.content)
            if !message.toolCalls.isEmpty {
                d["tool_calls"] = .list(
                    message.toolCalls.map { call in
                        let arguments = (try? JinjaValue.fromJSON(call.arguments)) ?? .string(call.arguments)
                        return [
                            "id": .string(call.id), "type": "function",
                            "function": ["name": .string(call.name), "arguments": arguments] as JinjaValue,
                        ] as JinjaValue
                    })
            }
            if message.role == .tool, let callID = message.toolCallID {
                d["tool_call_id"] = .string(callID)
                if let name = names[callID] { d["name"] = .string(name) }
            }
            let reasoning = message.reasoning.filter { $0.belongs(to: id) && !$0.isRedacted }.map(\.text).joined()
            if message.role == .assistant, !reasoning.isEmpty { d["reasoning_content"] = .string(reasoning) }
            return .dict(d)
        }
    }

    /// A tool as transformers passes it: `{"type": "function", "function": {"name", "description", "parameters"}}`.
    static func templateTool(_ tool: ToolDefinition) -> JinjaValue {
        JinjaValue(json: ToolFormat.openAISpec(tool))
    }

    /// Whether a template writes tools, calls and results itself in `format`'s call syntax.
    static func rendersToolsNatively(_ jinja: JinjaChatTemplate, _ format: ToolFormat) -> Bool {
        switch format.style {
        case .llama3JSON: return jinja.mentions("tool_calls")
        case .taggedJSON: return jinja.mentions("tool_calls") && jinja.mentions("<tool_call>")
        case .functools: return false  // Phi-4-mini's template reads tools from the system message only
        }
    }

    /// Whether a rendered prompt shows every tool, every earlier call and every result (raw or
    /// as a JSON string): a template that drops them must not be given the conversation as is.
    static func shows(_ text: String, messages: [ChatMessage], tools: [ToolDefinition]) -> Bool {
        for tool in tools where !text.contains(tool.name) { return false }
        for message in messages {
            for call in message.toolCalls where !text.contains(call.name) { return false }
            if message.role == .tool {
                let result = ChatTemplate.trimmed(message.content)
                let quoted = PythonJSON.dumps(.string(result))
                if !result.isEmpty && !text.contains(result) && !text.contains(String(quoted.dropFirst().dropLast())) { return false }
            }
        }
        return true
    }
}
