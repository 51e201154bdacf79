import Foundation
import HearthTemplates

/// One message of a conversation.
package struct ChatTurn: Sendable, Codable, Equatable {
    /// `system`, `user` or `assistant`.
    package var role: String
    /// The message text.
    package var content: String

    package init(role: String, content: String) {
        self.role = role
        self.content = content
    }
}

/// A chat prompt format. A checkpoint that ships a Jinja `chat_template` is rendered by that
/// template (``jinja``, compiled at load by HearthTemplates); ``format`` then names the family
/// its markers belong to (which decides the tool-call syntax), or ``Format/jinja`` for a family
/// Hearth has no hand-written renderer for. Checkpoints without a template get a hand-written
/// renderer (``renderHandWritten(_:addGenerationPrompt:toolsDeclared:)``), each proven
/// byte-equal to its family's own template (Tests/HearthTokenizersTests/TemplateParityTests).
public struct ChatTemplate: Sendable, Equatable {
    /// The prompt formats Hearth can render.
    package enum Format: String, Sendable {
        /// The model's own Jinja template, of a family Hearth has not hand-written (only with ``ChatTemplate/jinja``).
        case jinja
        /// `<|user|>\n…<|end|>\n<|assistant|>\n` (Phi-3, Phi-3.5).
        case phi3
        /// `<|system|>…<|end|><|user|>…<|end|><|assistant|>` with no newlines (Phi-4-mini).
        case phi4Mini = "phi4-mini"
        /// `<|im_start|>user\n…<|im_end|>\n` (ChatML: Phi-4, Qwen…).
        case chatml
        /// `<start_of_turn>user\n…<end_of_turn>\n` (Gemma).
        case gemma
        /// `<|start_header_id|>user<|end_header_id|>\n\n…<|eot_id|>` (Llama 3.1–3.3: a system
        /// header with the knowledge cut-off and date lines; the date is the templates' own
        /// fallback, 26 Jul 2024, so a prompt is the same on every day).
        case llama3
        /// `Instruct: …\nOutput:` (Phi-2, which ships no template).
        case instruct
        /// A completion-style dialogue for base models (no instruction tuning): a short
        /// preamble, then `User: …` / `Assistant: …` lines; generation stops at the next
        /// `User:` (``dialogueStops``).
        case dialogue
    }

    /// The preamble of the `.dialogue` format: one sentence and a two-turn example exchange,
    /// which is what lets a base model continue the dialogue in the assistant's voice (the
    /// same device as llama.cpp's `chat-with-bob` prompt).
    package static let dialoguePreamble = """
        A conversation between a curious user and a helpful assistant. The assistant answers \
        in one or two clear sentences.

        User: Hello, who are you?
        Assistant: I am an assistant. Ask me anything and I will answer briefly.
        User: What is the largest planet in the solar system?
        Assistant: Jupiter is the largest planet in the solar system.

        """
    /// Where a `.dialogue` reply ends: the model starting the next turn.
    package static let dialogueStops = ["User:", "Assistant:"]

    /// The format.
    package var format: Format
    /// Text to put first (the BOS token) when the template writes `bos_token`.
    package var prefix: String
    /// Text a finished conversation ends with when no generation prompt is added.
    package var endOfText: String
    /// The model's own Jinja template, compiled; when set (and compiled), every prompt is
    /// rendered by it and ``format`` only names the family its markers belong to.
    package var jinja: JinjaChatTemplate?
    /// The file's other named templates (`tool_use`, `rag`…; GGUF `tokenizer.chat_template.<name>`,
    /// `tokenizer_config.json` named list), by name, for `--chat-template NAME`.
    package var variants: [String: String]
    /// The file's `tool_use` template, compiled, when it has one: transformers renders a
    /// conversation given tools with it instead of the default (Command-R, Hermes 2 Pro).
    package var toolUseJinja: JinjaChatTemplate?

    /// A hand-written format (``jinja`` nil).
    package init(format: Format, prefix: String = "", endOfText: String = "") {
        self.format = format
        self.prefix = prefix
        self.endOfText = endOfText
        self.jinja = nil
        self.variants = [:]
        self.toolUseJinja = nil
    }

    /// Recognises a Jinja template by its markers, or returns nil for an unknown one.
    package init?(jinja source: String, bosToken: String?, eosToken: String?) {
        let format: Format
        if source.contains("<|user|>") && source.contains("<|end|>") {
            format = .phi3
        } else if source.contains("'<|' + message['role'] + '|>'") && source.contains("<|end|>") {
            // Phi-4-mini writes the role marker from the role name and no newlines.
            format = .phi4Mini
        } else if source.contains("<|im_start|>") {
            format = .chatml
        } else if source.contains("<start_of_turn>") {
            format = .gemma
        } else if source.contains("<|start_header_id|>") && source.contains("<|eot_id|>") {
            format = .llama3
        } else {
            return nil
        }
        // Templates that start with `{{ bos_token }}` write BOS as text themselves.
        let loopStart =
            source.range(of: "{%- for")?.lowerBound ?? source.range(of: "{% for")?.lowerBound ?? source.endIndex
        let writesBOS = source[..<loopStart].contains("bos_token")
        self.init(format: format, prefix: writesBOS ? (bosToken ?? "") : "", endOfText: eosToken ?? "")
    }

    /// Renders a conversation of plain turns; with `addGenerationPrompt` the text ends where
    /// the assistant's reply begins. With ``jinja`` the model's own template renders it (the
    /// turns as `{"role", "content"}` messages); otherwise the hand-written renderer does.
    /// `toolsDeclared` marks a conversation whose turns describe tools (the hand-written Llama 3
    /// then writes `Environment: ipython` in its system header, as its template does when given tools).
    /// - Throws: `TemplateError` when the model's template fails (or did not compile).
    package func render(_ messages: [ChatTurn], addGenerationPrompt: Bool, toolsDeclared: Bool = false) throws -> String {
        if let jinja = activeJinja {
            let input = ChatTemplateInput(
                messages: messages.map { ["role": .string($0.role), "content": .string($0.content)] as JinjaValue },
                addGenerationPrompt: addGenerationPrompt)
            return try jinja.render(input)
        }
        return renderHandWritten(messages, addGenerationPrompt: addGenerationPrompt, toolsDeclared: toolsDeclared)
    }

    /// The hand-written renderer of ``format`` (what a checkpoint without a template gets),
    /// whatever ``jinja`` holds. ``Format/jinja`` has none: it gives ``prefix`` alone.
    package func renderHandWritten(_ messages: [ChatTurn], addGenerationPrompt: Bool, toolsDeclared: Bool = false) -> String {
        var text = prefix
        switch format {
        case .jinja:
            break
        case .phi3:
            for m in messages { text += "<|\(m.role)|>\n\(m.content)<|end|>\n" }
            text += addGenerationPrompt ? "<|assistant|>\n" : endOfText
        case .phi4Mini:
            for m in messages { text += "<|\(m.role)|>\(m.content)<|end|>" }
            text += addGenerationPrompt ? "<|assistant|>" : endOfText
        case .chatml:
            for m in messages { text += "<|im_start|>\(m.role)\n\(m.content)<|im_end|>\n" }
            if addGenerationPrompt { text += "<|im_start|>assistant\n" }
        case .gemma:
            // Gemma has no system role: its template folds the system text into the first user
            // turn; it trims each turn's text (Gemma 2's and 3's templates: `content | trim`).
            var pendingSystem = ""
            for m in messages {
                if m.role == "system" {
                    pendingSystem += m.content + "\n\n"
                    continue
                }
                let role = m.role == "assistant" ? "model" : m.role
                text += "<start_of_turn>\(role)\n\(pendingSystem)\(Self.trimmed(m.content))<end_of_turn>\n"
                pendingSystem = ""
            }
            if addGenerationPrompt { text += "<start_of_turn>model\n" }
        case .llama3:
            // The system header always comes first, with the template's fixed lines.
            var turns = messages[...]
            var system = ""
            if let first = turns.first, first.role == "system" {
                system = Self.trimmed(first.content)
                turns = turns.dropFirst()
            }
            text += "<|start_header_id|>system<|end_header_id|>\n\n"
            if toolsDeclared { text += "Environment: ipython\n" }
            text += "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n\(system)<|eot_id|>"
            for m in turns {
                // Tool results (`ipython`) are written as they are; other turns trimmed.
                let content = m.role == "ipython" ? m.content : Self.trimmed(m.content)
                text += "<|start_header_id|>\(m.role)<|end_header_id|>\n\n\(content)<|eot_id|>"
            }
            if addGenerationPrompt { text += "<|start_header_id|>assistant<|end_header_id|>\n\n" }
        case .instruct:
            for m in messages {
                switch m.role {
                case "assistant": text += "Output: \(m.content)\n"
                default: text += "Instruct: \(m.content)\n"
                }
            }
            if addGenerationPrompt { text += "Output:" }
        case .dialogue:
            text += Self.dialoguePreamble
            for m in messages {
                switch m.role {
                case "system": text += "\(m.content)\n\n"
                case "assistant": text += "Assistant: \(m.content)\n"
                default: text += "User: \(m.content)\n"
                }
            }
            if addGenerationPrompt { text += "Assistant:" }
        }
        return text
    }

    /// Text without leading and trailing white space (Jinja's `trim`).
    package static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
