import Foundation

/// What a chat template is rendered with: the arguments of transformers'
/// `apply_chat_template(conversation, tools=, documents=, add_generation_prompt=,
/// continue_final_message=, **kwargs)` plus the tokenizer's special tokens.
package struct ChatTemplateInput: Sendable {
    /// The messages, each a dict (`role`, `content`, `tool_calls`, `reasoning_content`…).
    package var messages: [JinjaValue]
    /// Tool schemas (`{"type": "function", "function": {...}}`), or nil (the template sees `None`).
    package var tools: [JinjaValue]?
    /// Documents for retrieval templates, or nil (the template sees `None`).
    package var documents: [JinjaValue]?
    /// Whether to end with the header of a new assistant turn.
    package var addGenerationPrompt: Bool
    /// Whether the final message is left open for the model to continue (its `content`).
    package var continueFinalMessage: Bool
    /// The tokenizer's special tokens by name (`bos_token`, `eos_token`, `unk_token`, `pad_token`…).
    package var specialTokens: [String: String]
    /// Extra variables (`chat_template_kwargs`, e.g. `enable_thinking`); they override special tokens.
    package var extraVariables: [String: JinjaValue]

    /// An input with `messages` and the given options.
    package init(
        messages: [JinjaValue], tools: [JinjaValue]? = nil, documents: [JinjaValue]? = nil, addGenerationPrompt: Bool = false,
        continueFinalMessage: Bool = false, specialTokens: [String: String] = [:], extraVariables: [String: JinjaValue] = [:]
    ) {
        self.messages = messages
        self.tools = tools
        self.documents = documents
        self.addGenerationPrompt = addGenerationPrompt
        self.continueFinalMessage = continueFinalMessage
        self.specialTokens = specialTokens
        self.extraVariables = extraVariables
    }
}

extension Template {
    // Long: transformers' apply_chat_template input rules in their order (empty conversations, message
    // shapes, continue_final_message, tools, documents, the generation prompt), each a check with its
    // own error, then one render.
    /// Renders a chat as transformers' `apply_chat_template(..., tokenize=False)` does: drops
    /// message keys whose value is null, copies a message's reasoning to both `reasoning_content`
    /// and `thinking`, passes `tools` and `documents` (as `None` when absent), and with
    /// `continueFinalMessage` cuts the prompt after the final message's content.
    ///
    /// - Throws: `TemplateError` (`.type` for input transformers refuses: an empty conversation,
    ///   a message that is not a dict, `continueFinalMessage` with `addGenerationPrompt`…), or
    ///   whatever rendering throws.
    package func apply(_ input: ChatTemplateInput, now: Date = Date(), timeZone: TimeZone = .current) throws -> String {
        guard !input.messages.isEmpty else {
            throw TemplateError(.type, "cannot apply a chat template to an empty conversation")
        }
        if input.continueFinalMessage && input.addGenerationPrompt {
            throw TemplateError(.type, "continue_final_message and add_generation_prompt are not compatible")
        }
        let reasoningFields = ["reasoning_content", "thinking", "reasoning"]
        var messages: [JinjaValue] = []
        for message in input.messages {
            guard case .dict(let d) = message else {
                throw TemplateError(.type, "chat messages must be dicts, got \(message.typeName)")
            }
            // Drop null-valued keys (transformers' `_normalize_chat_messages`); a message without
            // any is kept as it is (shared, not rebuilt).
            var kept = d
            if d.values.contains(where: { if case .none = $0 { return true }; return false }) {
                kept = JinjaDict()
                for (k, v) in d.entries {
                    if case .none = v { continue }
                    kept[k] = v
                }
            }
            // Alias reasoning: {"thinking": r, **message, "reasoning_content": r}.
            if let reasoning = reasoningFields.lazy.compactMap({ kept[string: $0] }).first {
                var aliased = JinjaDict()
                aliased[.string("thinking")] = reasoning
                for (k, v) in kept.entries { aliased[k] = v }
                aliased[.string("thinking")] = kept[string: "thinking"] ?? reasoning
                aliased[.string("reasoning_content")] = reasoning
                kept = aliased
            }
            messages.append(.dict(kept))
        }
        let tag = "CONTINUE_FINAL_MESSAGE_TAG "
        var finalText = ""
        if input.continueFinalMessage {
            guard case .dict(var last) = messages[messages.count - 1], let final = last[string: "content"] else {
                throw TemplateError(.type, "continue_final_message is set but the final message has no \"content\" to continue")
            }
            guard source.contains("content") else {
                throw TemplateError(.type, "continue_final_message is set to \"content\" but this is not an accepted field in the chat template")
            }
            switch final {
            case .list(var blocks):
                guard let i = blocks.lastIndex(where: { if case .dict(let b) = $0 { return b[string: "text"] != nil }; return false }),
                    case .dict(var block) = blocks[i], case .string(let text) = block[string: "text"] ?? JinjaValue.none
                else {
                    throw TemplateError(.type, "continue_final_message is set but there is no text to continue in the final message")
                }
                finalText = text
                block[.string("text")] = .string(text + tag)
                blocks[i] = .dict(block)
                last[.string("content")] = .list(blocks)
            case .string(let text):
                finalText = text
                last[.string("content")] = .string(text + tag)
            default:
                throw TemplateError(.type, "continue_final_message: the final message's content is not text")
            }
            messages[messages.count - 1] = .dict(last)
        }
        var context: [String: JinjaValue] = [:]
        for (k, v) in input.specialTokens { context[k] = .string(v) }
        for (k, v) in input.extraVariables { context[k] = v }
        context["messages"] = .list(messages)
        context["tools"] = input.tools.map { .list($0) } ?? JinjaValue.none
        context["documents"] = input.documents.map { .list($0) } ?? JinjaValue.none
        context["add_generation_prompt"] = .bool(input.addGenerationPrompt)
        var rendered = try render(context, now: now, timeZone: timeZone)
        if input.continueFinalMessage {
            let strippedTag = StringOps.strip(tag, nil, leading: true, trailing: true)
            let strippedFinal = StringOps.strip(finalText, nil, leading: true, trailing: true)
            guard (strippedFinal.isEmpty || rendered.contains(strippedFinal)), let tagRange = rendered.range(of: strippedTag, options: .backwards) else {
                throw TemplateError(.type, "continue_final_message is set but the final message does not appear in the rendered chat")
            }
            if rendered[tagRange.lowerBound...].hasPrefix(tag) {
                rendered = String(rendered[..<tagRange.lowerBound])
            } else {
                rendered = StringOps.strip(String(rendered[..<tagRange.lowerBound]), nil, leading: false, trailing: true)
            }
        }
        return rendered
    }
}
