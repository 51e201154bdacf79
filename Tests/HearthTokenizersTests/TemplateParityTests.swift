import Foundation
import HearthTemplates
import HearthTestSupport
import Testing

@testable import HearthTokenizers

/// Every hand-written renderer (what a checkpoint without a template gets) equals, byte for
/// byte, its family's own Jinja template on the corpus conversations transformers renders
/// (Tests/Fixtures/chat-templates/expected.json, made by scripts/make_template_fixtures.py):
/// the marker recognition picks the family and its BOS/EOS handling from the template's
/// source, and the hand-written text is compared with transformers' prompt.
@Suite struct TemplateParityTests {
    static let corpus = Fixtures.directory.appendingPathComponent("chat-templates")

    /// Each hand-written format with the corpus templates it must equal.
    static let pairs: [(ChatTemplate.Format, String)] = [
        (.phi3, "registry--phi3-mini"), (.phi3, "llama.cpp--microsoft-Phi-3.5-mini-instruct"),
        (.phi4Mini, "registry--phi4-mini"),
        (.chatml, "llama.cpp--Qwen3-Coder"), (.chatml, "llama.cpp--LFM2.5-Instruct"), (.chatml, "llama.cpp--LFM2-8B-A1B"),
        (.llama3, "llama.cpp--meta-llama-Llama-3.1-8B-Instruct"),
        (.gemma, "llama.cpp--google-gemma-2-2b-it"),
    ]

    struct Corpus {
        var special: [String: String] = [:]
        var conversations: [String: (turns: [ChatTurn], generate: Bool)] = [:]
        var outputs: [String: [String: String]] = [:]
    }

    /// The corpus conversations of plain string turns with no options but the generation
    /// prompt, and transformers' outputs by template and conversation.
    static func load() throws -> Corpus {
        let data = try Data(contentsOf: corpus.appendingPathComponent("expected.json"))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var result = Corpus()
        result.special = try #require(root["special_tokens"] as? [String: String])
        for conversation in try #require(root["conversations"] as? [[String: Any]]) {
            guard let name = conversation["name"] as? String,
                Set(conversation.keys).isSubset(of: ["name", "messages", "add_generation_prompt"]),
                let messages = conversation["messages"] as? [[String: Any]]
            else { continue }
            var turns: [ChatTurn] = []
            for m in messages {
                guard Set(m.keys) == ["role", "content"], let role = m["role"] as? String, let content = m["content"] as? String
                else { break }
                turns.append(ChatTurn(role: role, content: content))
            }
            guard turns.count == messages.count else { continue }
            result.conversations[name] = (turns, conversation["add_generation_prompt"] as? Bool ?? false)
        }
        for item in try #require(root["cases"] as? [[String: Any]]) {
            guard let template = item["template"] as? String, let conversation = item["conversation"] as? String,
                let output = item["output"] as? String
            else { continue }
            result.outputs[template, default: [:]][conversation] = output
        }
        return result
    }

    @Test func handWrittenRenderersEqualTheirFamiliesTemplates() throws {
        let corpus = try Self.load()
        #expect(corpus.conversations.count >= 15)
        for (format, name) in Self.pairs {
            let source = try String(contentsOf: Self.corpus.appendingPathComponent("templates/\(name).jinja"), encoding: .utf8)
            let recognized = try #require(
                ChatTemplate(jinja: source, bosToken: corpus.special["bos_token"], eosToken: corpus.special["eos_token"]), "\(name)")
            #expect(recognized.format == format, "\(name) is recognised as \(recognized.format)")
            var compared = 0
            for (conversation, (turns, generate)) in corpus.conversations.sorted(by: { $0.key < $1.key }) {
                guard let expected = corpus.outputs[name]?[conversation] else { continue }  // the template raises on it
                let text = recognized.renderHandWritten(turns, addGenerationPrompt: generate)
                #expect(text == expected, "\(format.rawValue) vs \(name), \(conversation)")
                compared += 1
            }
            #expect(compared >= (format == .gemma ? 5 : 15), "\(name): only \(compared) conversations compared")
        }
    }

    /// Gemma's template refuses a system turn, so the corpus gives it few conversations: these
    /// add turns with white space at their edges, non-ASCII and a long exchange, rendered by the
    /// Jinja interpreter (which the corpus proves equal to jinja2).
    @Test func handWrittenGemmaEqualsGemmasTemplateOnMoreTurns() throws {
        let source = try String(
            contentsOf: Self.corpus.appendingPathComponent("templates/llama.cpp--google-gemma-2-2b-it.jinja"), encoding: .utf8)
        let jinja = JinjaChatTemplate(source: source, origin: "test", specialTokens: ["bos_token": "<bos>", "eos_token": "<eos>"])
        let handWritten = try #require(ChatTemplate(jinja: source, bosToken: "<bos>", eosToken: "<eos>"))
        let conversations: [[ChatTurn]] = [
            [ChatTurn(role: "user", content: "  padded \n\n")],
            [ChatTurn(role: "user", content: "\tΓειά σου 👋 "), ChatTurn(role: "assistant", content: "\nこんにちは\n"), ChatTurn(role: "user", content: "{\"a\": [1, 2]}")],
            (0..<12).map { ChatTurn(role: $0 % 2 == 0 ? "user" : "assistant", content: "turn \($0) ") },
        ]
        for turns in conversations {
            for generate in [true, false] {
                let input = ChatTemplateInput(
                    messages: turns.map { ["role": .string($0.role), "content": .string($0.content)] as JinjaValue },
                    addGenerationPrompt: generate)
                #expect(handWritten.renderHandWritten(turns, addGenerationPrompt: generate) == (try jinja.render(input)))
            }
        }
    }

    /// A checkpoint's template renders through the interpreter (not the hand-written form), the
    /// family named by its markers: the model's own text wins where they differ (Phi-4-mini-
    /// reasoning's default system line).
    @Test func ownTemplatesRenderThroughTheInterpreter() throws {
        let source = "{{ '<|system|>Default.<|end|>' }}{% for message in messages %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
        let template = ChatTemplate(ownTemplate: source, origin: "tokenizer_config.json", specialTokens: [:])
        #expect(template.format == .phi4Mini && template.renderer == "jinja")
        #expect(try template.render([ChatTurn(role: "user", content: "hi")], addGenerationPrompt: true) == "<|system|>Default.<|end|><|user|>hi<|end|><|assistant|>")
        #expect(template.renderHandWritten([ChatTurn(role: "user", content: "hi")], addGenerationPrompt: true) == "<|user|>hi<|end|><|assistant|>")
        #expect(template.rendererDescription == "jinja (tokenizer_config.json; phi4-mini markers)")
        // A template that does not compile falls back to its family's hand-written renderer, and says so.
        let broken = ChatTemplate(ownTemplate: source + "{% if %}", origin: "tokenizer_config.json", specialTokens: [:])
        #expect(broken.renderer == "hand-written" && broken.rendererDescription.contains("does not compile"))
        // …while one of no known family throws the compile error (a typed TemplateError with its position).
        let unknown = ChatTemplate(ownTemplate: "{{ messages[0].content }}{% if %}", origin: "chat_template.jinja", specialTokens: [:])
        #expect(unknown.format == .jinja)
        #expect(throws: TemplateError.self) { try unknown.render([ChatTurn(role: "user", content: "hi")], addGenerationPrompt: true) }
    }

    /// `chat_template.jinja` wins over the config's template and named templates are kept.
    @Test func chatTemplateFileAndNamedTemplatesAreRead() throws {
        let config = try TokenizerConfig.parse(
            files: TokenizerFiles(
                sentencePieceModel: nil,
                config: Data(#"{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]}"#.utf8),
                addedTokens: nil, chatTemplateJinja: Data("J{{ bos_token }}".utf8), origin: "/t"))
        #expect(config.chatTemplate == "J{{ bos_token }}" && config.chatTemplateOrigin == "chat_template.jinja")
        #expect(config.namedChatTemplates == ["default": "D", "tool_use": "T"])
        let template = try #require(config.ownChatTemplate)
        #expect(template.variants == ["tool_use": "T"])
        #expect(template.jinja?.origin == "chat_template.jinja")
    }
}
