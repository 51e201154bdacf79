import Foundation
import HearthConstraints
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// Reasoning through the provider protocol (issue 57, item 3) on the reasoning fixture
/// (Phi-4-mini-reasoning's shape, template and tags; greedy decoding opens a block after these
/// prompts, what it writes inside is random): reasoning arrives as `reasoningDelta`s and one
/// `reasoningEnded`, never as text; a budget ends the block with the closing sequence and an
/// answer follows; a forced tool call and a JSON schema apply to the answer after the block;
/// reasoning off closes it in the prompt; a model without the tags never reasons.
@Suite struct LocalProviderReasoningTests {
    static func provider(_ checkpoint: String = "phi4-mini-reasoning-tiny", context: Int = 128) throws -> LocalProvider {
        let model = try TransformerModel(path: Fixtures.checkpoint(checkpoint).path)
        return try LocalProvider(model: model, context: context, threads: 2, batch: 16)
    }

    /// The closing sequence's length: `</think>` and the separator "\n\n" (two tokens here).
    static let closing = 3

    struct Reply {
        var reasoning = ""
        var ended: [ReasoningPart] = []
        var text = ""
        var calls = ToolCallCollector()
        var usage: Usage?
        var order: [String] = []
    }

    static func collect(_ provider: LocalProvider, _ request: ChatRequest) async throws -> Reply {
        var reply = Reply()
        for try await event in provider.stream(request) {
            switch event {
            case .reasoningDelta(let piece):
                reply.reasoning += piece
                if reply.order.last != "reasoning" { reply.order.append("reasoning") }
            case .reasoningEnded(let part):
                reply.ended.append(part)
                reply.order.append("ended")
            case .textDelta(let piece):
                reply.text += piece
                if reply.order.last != "text" { reply.order.append("text") }
            case .toolCall(let step): reply.calls.add(step)
            case .usage(let usage): reply.usage = usage
            default: break
            }
        }
        return reply
    }

    /// With a budget B (and the end tokens banned, so only the budget ends the block), the
    /// reply's reasoning tokens are at most B plus the closing sequence, the part ends once,
    /// and a non-empty answer follows that holds neither tag.
    @Test(arguments: [(2, 1), (5, 2), (9, 3)] as [(Int, Int)])
    func budgetEndsTheBlock(budget: Int, seed: Int) async throws {
        let provider = try Self.provider()
        var options = ChatOptions(temperature: 1, maxTokens: 30, seed: seed)
        options.logitBias = [1812: -100, 1799: -100, 1802: -100]
        options.reasoning = .budget(budget)
        let reply = try await Self.collect(provider, ChatRequest(messages: [.user("Hi")], options: options))
        #expect(reply.order == ["reasoning", "ended", "text"] || reply.order == ["ended", "text"], "\(reply.order)")
        #expect(reply.ended.count == 1 && reply.ended.first?.text == reply.reasoning)
        let tokens = try #require(reply.usage?.reasoningTokens)
        #expect(tokens <= budget + Self.closing)
        #expect(!reply.text.isEmpty)
        #expect(!reply.text.contains("think>") && !reply.reasoning.contains("think>"))
        // complete() gathers the same part.
        let whole = try await provider.complete(ChatRequest(messages: [.user("Hi")], options: options))
        #expect(whole.reasoning.map(\.text) == [reply.reasoning] && whole.text == reply.text)
    }

    /// Effort maps to budgets: `minimal` is 256 tokens, more than this reply, so the block runs
    /// to the length and the reply has no answer bytes.
    @Test func effortIsABudget() async throws {
        let provider = try Self.provider()
        var options = ChatOptions(temperature: 0, maxTokens: 12)
        options.reasoning = .effort(.minimal)
        let reply = try await Self.collect(provider, ChatRequest(messages: [.user("Hi")], options: options))
        #expect(reply.text.isEmpty && !reply.reasoning.isEmpty && reply.ended.count == 1)
        #expect(reply.usage?.reasoningTokens == 12)
    }

    /// A forced tool call after the block parses (the tool grammar starts after it).
    @Test(arguments: [1, 2, 3]) func forcedToolCallAfterReasoning(seed: Int) async throws {
        let provider = try Self.provider(context: 512)  // the tools' description is 140 tokens
        let tool = ToolDefinition(
            name: "get_weather", description: "The weather in a city.",
            parameters: #"{"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"], "additionalProperties": false}"#)
        var options = ChatOptions(temperature: 1, maxTokens: 90, seed: seed, tools: [tool], toolChoice: .required)
        options.reasoning = .budget(4)
        let reply = try await Self.collect(provider, ChatRequest(messages: [.user("Hi")], options: options))
        #expect(reply.ended.count == 1)
        #expect(reply.text.isEmpty)
        let call = try #require(reply.calls.calls.first)
        #expect(call.name == "get_weather")
        let arguments = try JSONSerialization.jsonObject(with: Data(call.arguments.utf8)) as? [String: Any]
        #expect((arguments?["city"] as? String)?.count ?? 99 <= 8, "\(call.arguments)")
    }

    /// A JSON schema applies to the answer after the block.
    @Test func schemaAfterReasoning() async throws {
        let provider = try Self.provider()
        var options = ChatOptions(temperature: 0, maxTokens: 60)
        options.responseFormat = .jsonSchema(
            JSONSchemaFormat(name: "answer", schema: #"{"type": "object", "properties": {"n": {"type": "integer", "maximum": 99}}, "required": ["n"], "additionalProperties": false}"#))
        options.reasoning = .budget(3)
        let reply = try await Self.collect(provider, ChatRequest(messages: [.user("Hi")], options: options))
        #expect(reply.ended.count == 1)
        let object = try JSONSerialization.jsonObject(with: Data(reply.text.utf8)) as? [String: Any]
        #expect(object?["n"] is Int, "\(reply.text)")
    }

    /// Reasoning off: the prompt ends with the no-think form (as transformers tokenizes it)
    /// and the reply has no reasoning part.
    @Test func offClosesTheBlockInThePrompt() async throws {
        let provider = try Self.provider()
        var options = ChatOptions(temperature: 0, maxTokens: 6)
        options.reasoning = .off
        let request = ChatRequest(messages: [.user("Hi")], options: options)
        let generator = try await provider.loadedGenerator()
        let tokens = try provider.prompt(for: request, generator: generator).tokens
        #expect(Array(tokens.suffix(6)) == [1811, 198, 198, 1812, 198, 198])
        let reply = try await Self.collect(provider, request)
        #expect(reply.ended.isEmpty && reply.reasoning.isEmpty && !reply.text.isEmpty)
        #expect(reply.usage?.reasoningTokens == nil)
    }

    /// A model without the tags accepts reasoning options and never reasons.
    @Test func modelsWithoutTheTagsDoNotReason() async throws {
        let provider = try Self.provider("phi4-mini-tiny")
        var options = ChatOptions(temperature: 0, maxTokens: 6)
        options.reasoning = .budget(4)
        let reply = try await Self.collect(provider, ChatRequest(messages: [.user("Hi")], options: options))
        #expect(reply.ended.isEmpty && reply.reasoning.isEmpty && !reply.text.isEmpty)
    }
}
