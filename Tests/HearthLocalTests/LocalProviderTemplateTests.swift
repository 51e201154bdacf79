import Foundation
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// Prompts from the model's own Jinja template (issue 58, items 2 and 3): a template's default
/// system line reaches the prompt; a conversation with tools, calls and results renders through
/// the template exactly as transformers renders it (the corpus of Tests/Fixtures/chat-templates);
/// `chat_template_kwargs` and reasoning history reach the template; a template that raises is an
/// `invalidRequest` naming its message.
@Suite struct LocalProviderTemplateTests {
    static let corpus = Fixtures.directory.appendingPathComponent("chat-templates")

    static func provider(_ checkpoint: String = "phi3-mha", template: String? = nil) throws -> LocalProvider {
        let model = try TransformerModel(path: Fixtures.checkpoint(checkpoint).path, chatTemplate: template)
        return try LocalProvider(model: model, context: 256, threads: 1, batch: 16)
    }

    /// Phi-4-mini-reasoning's template writes its own system line first; the hand-written
    /// Phi-4-mini renderer used before left it out (`<|user|>hi<|end|><|assistant|>`).
    @Test func theTemplatesDefaultSystemLineIsInThePrompt() async throws {
        let provider = try Self.provider("phi4-mini-reasoning-tiny")
        let text = try await provider.promptText(ChatRequest(messages: [.user("hi")]))
        #expect(text == "<|system|>Your name is Phi, an AI math expert developed by Microsoft.<|end|><|user|>hi<|end|><|assistant|>")
    }

    /// The corpus conversation `tool_call_result_answer` as provider messages.
    static func toolConversation() throws -> (messages: [ChatMessage], tools: [ToolDefinition]) {
        let text = try String(contentsOf: corpus.appendingPathComponent("expected.json"), encoding: .utf8)
        let data = Data(text.utf8)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let conversations = try #require(root["conversations"] as? [[String: Any]])
        let conversation = try #require(conversations.first { $0["name"] as? String == "tool_call_result_answer" })
        var messages: [ChatMessage] = []
        for m in try #require(conversation["messages"] as? [[String: Any]]) {
            var message = ChatMessage(
                role: ChatMessage.Role(rawValue: m["role"] as? String ?? "") ?? .user, content: m["content"] as? String ?? "")
            message.toolCallID = m["tool_call_id"] as? String
            for call in m["tool_calls"] as? [[String: Any]] ?? [] {
                let function = try #require(call["function"] as? [String: Any])
                let arguments = try JSONSerialization.data(withJSONObject: try #require(function["arguments"]), options: [.sortedKeys])
                message.toolCalls.append(
                    ToolCall(
                        id: call["id"] as? String ?? "", name: function["name"] as? String ?? "",
                        arguments: String(decoding: arguments, as: UTF8.self)))
            }
            messages.append(message)
        }
        var tools: [ToolDefinition] = []
        for tool in try #require(conversation["tools"] as? [[String: Any]]) {
            let function = try #require(tool["function"] as? [String: Any])
            // The schema's text in the fixture's key order (JSONSerialization would reorder it).
            tools.append(
                ToolDefinition(
                    name: function["name"] as? String ?? "", description: function["description"] as? String,
                    parameters: #"{"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. \"Paris\""}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}"#))
        }
        return (messages, tools)
    }

    static func expected(_ template: String, _ conversation: String) throws -> String {
        let text = try String(contentsOf: corpus.appendingPathComponent("expected.json"), encoding: .utf8)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let cases = try #require(root["cases"] as? [[String: Any]])
        let found = try #require(cases.first { $0["template"] as? String == template && $0["conversation"] as? String == conversation })
        return try #require(found["output"] as? String)
    }

    /// Tools, an earlier call (arguments as an object) and its result go to templates that write
    /// them in Hearth's call syntax — Qwen 2.5's `<tool_call>` tags and Llama 3.1's JSON — and the
    /// prompt equals transformers' rendering of the same conversation, byte for byte.
    @Test(arguments: ["llama.cpp--Qwen-Qwen2.5-7B-Instruct", "llama.cpp--meta-llama-Llama-3.1-8B-Instruct"])
    func toolConversationsRenderAsTransformersRendersThem(_ template: String) async throws {
        let path = Self.corpus.appendingPathComponent("templates/\(template).jinja").path
        let provider = try Self.provider(template: path)
        let (messages, tools) = try Self.toolConversation()
        let text = try await provider.promptText(ChatRequest(messages: messages, options: ChatOptions(tools: tools)))
        #expect(text == (try Self.expected(template, "tool_call_result_answer")))
    }

    static func writeTemplate(_ source: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-template-\(UUID().uuidString).jinja")
        try source.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// `chat_template_kwargs` become the template's variables (`documents` its documents); a
    /// request that turns reasoning off passes `enable_thinking: false` to a template that reads
    /// it; an earlier turn's reasoning arrives as `reasoning_content`.
    @Test func requestVariablesAndReasoningReachTheTemplate() async throws {
        let path = try Self.writeTemplate(
            "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% if m.reasoning_content %}(thought: {{ m.reasoning_content }}){% endif %}{% endfor %}"
                + "{% if documents %}(docs {{ documents | length }}){% endif %}{% if flavour is defined %}(flavour {{ flavour }}){% endif %}"
                + "{% if enable_thinking is defined %}(thinking {{ enable_thinking }}){% endif %}{% if add_generation_prompt %}[assistant]{% endif %}")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let provider = try Self.provider(template: path)
        var options = ChatOptions()
        options.chatTemplateKwargs = #"{"flavour": "mint", "documents": [{"title": "a", "text": "b"}]}"#
        let earlier = ChatMessage(role: .assistant, content: "4", reasoning: [ReasoningPart(text: "2+2")])
        let text = try await provider.promptText(ChatRequest(messages: [.user("2+2?"), earlier, .user("ok")], options: options))
        #expect(text == "[user]2+2?[assistant]4(thought: 2+2)[user]ok(docs 1)(flavour mint)[assistant]")
        let off = try await provider.promptText(ChatRequest(messages: [.user("hi")], options: ChatOptions(reasoning: .off)))
        #expect(off == "[user]hi(thinking False)[assistant]")
        var bad = ChatOptions()
        bad.chatTemplateKwargs = "[1]"
        await #expect(throws: ProviderError.self) { try await provider.promptText(ChatRequest(messages: [.user("hi")], options: bad)) }
    }

    /// A template that raises (or fails) on a conversation is a typed `invalidRequest` naming
    /// the template's message; the provider keeps serving.
    @Test func aTemplateErrorIsAnInvalidRequestNamingIt() async throws {
        let path = try Self.writeTemplate(
            "{% for m in messages %}{% if m.content == 'boom' %}{{ raise_exception('no booms here') }}{% endif %}{{ m.content }}{% endfor %}")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let provider = try Self.provider(template: path)
        do {
            _ = try await provider.promptText(ChatRequest(messages: [.user("boom")]))
            Issue.record("the template's exception was not thrown")
        } catch let error as ProviderError {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("no booms here"), "\(error.message)")
        }
        #expect(try await provider.promptText(ChatRequest(messages: [.user("fine")])) == "fine")
    }

    /// `--chat-template` that names nothing, or a file that does not compile, fails the load
    /// with the reason (the names it takes; the template's line and column).
    @Test func aChatTemplateThatNamesNothingOrDoesNotCompileFailsTheLoad() throws {
        #expect {
            _ = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path, chatTemplate: "no-such-template")
        } throws: { error in
            "\(error)".contains("neither a file nor a template name") && "\(error)".contains("chatml")
        }
        let path = try Self.writeTemplate("{% for m in messages %}{{ m.content }")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            _ = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path, chatTemplate: path)
        } throws: { error in
            "\(error)".contains("does not compile") && "\(error)".contains("line 1")
        }
        let chatml = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path, chatTemplate: "chatml")
        #expect(chatml.chatTemplate?.format == .chatml && chatml.chatTemplate?.jinja == nil)
    }
}

/// A checkpoint whose `tokenizer_config.json` names several templates (`default`, `tool_use`):
/// the default renders plain conversations, `tool_use` those given tools (as transformers picks).
@Suite struct NamedTemplateTests {
    @Test func theToolUseTemplateRendersRequestsWithTools() async throws {
        let source = Fixtures.checkpoint("phi3-mha")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-named-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) where name != "tokenizer_config.json" {
            try FileManager.default.createSymbolicLink(at: dir.appendingPathComponent(name), withDestinationURL: source.appendingPathComponent(name))
        }
        var config = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: source.appendingPathComponent("tokenizer_config.json"))) as? [String: Any])
        config["chat_template"] = [
            ["name": "default", "template": "{% for m in messages %}<default>{{ m.content }}{% endfor %}"],
            // A template that writes Hearth's tagged calls (so the tools go to it as they are).
            [
                "name": "tool_use",
                "template": "{% if tools %}{% for t in tools %}<tool {{ t.function.name }}>{% endfor %}{% endif %}{% for m in messages %}<tools>{{ m.content }}{% if m.tool_calls %}<tool_call>{% endif %}{% endfor %}",
            ],
        ]
        try JSONSerialization.data(withJSONObject: config).write(to: dir.appendingPathComponent("tokenizer_config.json"))
        let model = try TransformerModel(path: dir.path)
        #expect(model.chatTemplate?.variants.keys.sorted() == ["tool_use"])
        #expect(model.chatTemplate?.rendererDescription.contains("tool_use template") == true)
        let provider = try LocalProvider(model: model, context: 256, threads: 1, batch: 16)
        #expect(try await provider.promptText(ChatRequest(messages: [.user("hi")])) == "<default>hi")
        let tools = ChatOptions(tools: [ToolDefinition(name: "ping")])
        let withTools = try await provider.promptText(ChatRequest(messages: [.user("hi")], options: tools))
        #expect(withTools.hasPrefix("<tool ping>"), "\(withTools)")
        // --chat-template tool_use: that template renders everything, tools or not.
        let pinned = try LocalProvider(model: try TransformerModel(path: dir.path, chatTemplate: "tool_use"), context: 256, threads: 1, batch: 16)
        #expect(try await pinned.promptText(ChatRequest(messages: [.user("hi")])) == "<tools>hi")
    }
}
