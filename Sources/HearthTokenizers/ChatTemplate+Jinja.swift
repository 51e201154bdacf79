import Foundation
import HearthTemplates

/// A model's own Jinja chat template, compiled once when the model loads (HearthTemplates):
/// where it came from, the special tokens it is rendered with, and the compiled template — or
/// the `TemplateError` compiling it gave, which every render then throws.
package struct JinjaChatTemplate: Sendable, Equatable {
    /// The template's source text.
    package let source: String
    /// Where it came from, for `hearth inspect` and errors: `GGUF tokenizer.chat_template`,
    /// `tokenizer_config.json`, `chat_template.jinja`, `--chat-template <name>`…
    package let origin: String
    /// The tokenizer's special tokens by name (`bos_token`, `eos_token`, `unk_token`, `pad_token`).
    package let specialTokens: [String: String]
    /// The compiled template, or why it did not compile.
    package let compiled: Result<Template, TemplateError>

    /// Compiles `source`; a template that does not compile is kept with its error
    /// (``compileError``), so a model loads and says why its chat prompt cannot be rendered.
    package init(source: String, origin: String, specialTokens: [String: String]) {
        self.source = source
        self.origin = origin
        self.specialTokens = specialTokens
        do { compiled = .success(try Template(source)) } catch let error as TemplateError {
            compiled = .failure(error)
        } catch {
            compiled = .failure(TemplateError(.syntax, "\(error)"))
        }
    }

    /// Why the template did not compile (nil when it did).
    package var compileError: TemplateError? {
        if case .failure(let error) = compiled { return error }
        return nil
    }

    /// Renders `input` as transformers' `apply_chat_template` does, with the tokenizer's
    /// special tokens (the input's own take precedence).
    /// - Throws: `TemplateError`: the compile error, or whatever the render throws.
    package func render(_ input: ChatTemplateInput, now: Date = Date()) throws -> String {
        let template: Template
        switch compiled {
        case .success(let t): template = t
        case .failure(let error): throw error
        }
        var input = input
        for (name, text) in specialTokens where input.specialTokens[name] == nil { input.specialTokens[name] = text }
        return try template.apply(input, now: now)
    }

    /// Whether the template's source names `variable` at all (`tools`, `enable_thinking`…): a
    /// cheap test of whether passing it can change the prompt.
    package func mentions(_ variable: String) -> Bool { source.contains(variable) }

    package static func == (a: JinjaChatTemplate, b: JinjaChatTemplate) -> Bool {
        a.source == b.source && a.origin == b.origin && a.specialTokens == b.specialTokens
    }
}

extension ChatTemplate {
    /// A checkpoint's own template: rendered by the Jinja interpreter, with ``format`` set to the
    /// family its markers belong to (``Format/jinja`` when none), and ``prefix``/``endOfText``
    /// as the hand-written renderer of that family would use them.
    ///
    /// - Parameters:
    ///   - source: the Jinja source.
    ///   - origin: where it came from (see ``JinjaChatTemplate/origin``).
    ///   - specialTokens: the tokenizer's special tokens by name (`bos_token`, `eos_token`…).
    ///   - variants: the file's other named templates (`tool_use`, `rag`…), for `--chat-template NAME`.
    package init(ownTemplate source: String, origin: String, specialTokens: [String: String], variants: [String: String] = [:]) {
        let family = ChatTemplate(jinja: source, bosToken: specialTokens["bos_token"], eosToken: specialTokens["eos_token"])
        self.init(format: family?.format ?? .jinja, prefix: family?.prefix ?? "", endOfText: family?.endOfText ?? "")
        jinja = JinjaChatTemplate(source: source, origin: origin, specialTokens: specialTokens)
        self.variants = variants
        toolUseJinja = variants["tool_use"].map {
            JinjaChatTemplate(source: $0, origin: "\(origin), named template 'tool_use'", specialTokens: specialTokens)
        }
    }

    /// Renders a structured conversation (messages as dicts with tool calls, tool results and
    /// reasoning; `tools`, `documents`, `add_generation_prompt`, `continue_final_message` and
    /// extra variables) — what the model's own template takes. Without a Jinja template, the
    /// hand-written renderer gets the messages' roles and text (`content` as a string, or its
    /// text blocks joined); `continueFinalMessage` then ends the prompt after the final
    /// message's content.
    /// - Throws: `TemplateError`.
    package func render(_ input: ChatTemplateInput, now: Date = Date()) throws -> String {
        if let jinja = activeJinja { return try jinja.render(input, now: now) }
        guard !input.messages.isEmpty else { throw TemplateError(.type, "cannot apply a chat template to an empty conversation") }
        var turns: [ChatTurn] = []
        for message in input.messages {
            guard case .dict(let d) = message, case .string(let role) = d[string: "role"] ?? JinjaValue.none else {
                throw TemplateError(.type, "every chat message needs a \"role\" string")
            }
            turns.append(ChatTurn(role: role, content: Self.text(of: d[string: "content"] ?? JinjaValue.none)))
        }
        if input.continueFinalMessage {
            if input.addGenerationPrompt {
                throw TemplateError(.type, "continue_final_message and add_generation_prompt are not compatible")
            }
            let final = turns[turns.count - 1].content
            var open = turns
            open[open.count - 1].content = final + "\u{1}"
            let text = renderHandWritten(open, addGenerationPrompt: false, toolsDeclared: input.tools != nil)
            guard let cut = text.range(of: "\u{1}", options: .backwards) else {
                throw TemplateError(.type, "continue_final_message is set but the final message does not appear in the rendered chat")
            }
            return String(text[..<cut.lowerBound])
        }
        return renderHandWritten(turns, addGenerationPrompt: input.addGenerationPrompt, toolsDeclared: input.tools != nil)
    }

    /// A message's `content` as text: a string as is, text blocks joined, nothing otherwise.
    static func text(of content: JinjaValue) -> String {
        switch content {
        case .string(let s): return s
        case .list(let blocks):
            return blocks.compactMap { block -> String? in
                guard case .dict(let b) = block, case .string(let t) = b[string: "text"] ?? JinjaValue.none else { return nil }
                return t
            }.joined()
        default: return ""
        }
    }

    /// What renders this format, for `hearth inspect` and the server's model info:
    /// `jinja (<origin>; <family> markers)`, `jinja (<origin>) — does not compile: …`, or
    /// `<family> (hand-written)`.
    package var rendererDescription: String {
        if let jinja {
            if let error = jinja.compileError {
                if format != .jinja {
                    return "\(format.rawValue) (hand-written: the model's template from \(jinja.origin) does not compile: \(error))"
                }
                return "jinja (\(jinja.origin)) — does not compile: \(error)"
            }
            let toolUse = toolUseJinja == nil ? "" : "; its tool_use template for requests with tools"
            return "jinja (\(jinja.origin)\(format == .jinja ? "" : "; \(format.rawValue) markers")\(toolUse))"
        }
        return "\(format.rawValue) (hand-written)"
    }

    /// The name of the renderer: `jinja` or `hand-written`.
    package var renderer: String { activeJinja == nil ? "hand-written" : "jinja" }

    /// The Jinja template prompts are rendered with: ``jinja``, except when it did not compile
    /// and the family has a hand-written renderer (which is then used instead).
    package var activeJinja: JinjaChatTemplate? {
        guard let jinja else { return nil }
        return jinja.compileError != nil && format != .jinja ? nil : jinja
    }
}
