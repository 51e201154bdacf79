import Foundation
import HearthFakeServers
import HearthProviders
import Testing

@testable import HearthCloud

extension Collected {
    /// The reasoning deltas, joined.
    var reasoningText: String {
        events.reduce(into: "") { if case .reasoningDelta(let delta) = $1 { $0 += delta } }
    }
    /// The reasoning parts, in order.
    var reasoningParts: [ReasoningPart] {
        events.compactMap { if case .reasoningEnded(let part) = $0 { part } else { nil } }
    }
    /// Whether every reasoning event comes before the first text delta or tool call.
    var reasoningComesFirst: Bool {
        let firstAnswer = events.firstIndex {
            switch $0 {
            case .textDelta, .toolCall: return true
            default: return false
            }
        }
        let lastReasoning = events.lastIndex {
            switch $0 {
            case .reasoningDelta, .reasoningEnded: return true
            default: return false
            }
        }
        guard let firstAnswer, let lastReasoning else { return true }
        return lastReasoning < firstAnswer
    }
}

/// Reasoning on every cloud provider's wire, against the fakes in HearthFakeServers (which
/// stream it in each API's format; scripts/check-dashscope-fakes.sh proves them against the
/// official SDKs): parsed into reasoning events apart from the text, reasoning tokens in usage,
/// the options sent in each API's shape, and Anthropic's signed thinking sent back.
@Suite struct ReasoningWireTests {
    static let key = "sk-reasoning-test-5c1d"

    // MARK: OpenAI-compatible

    func openAI(_ fake: FakeOpenAIChat, model: String = "deepseek-reasoner", dialect: ReasoningDialect = .openAI)
        -> OpenAICompatibleProvider
    {
        OpenAICompatibleProvider(
            .init(
                id: "deepseek", baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), requiresAPIKey: true, model: model,
                timeouts: testTimeouts, retry: .none, reasoningDialect: dialect))
    }

    @Test(arguments: ["Why is the sky blue?", "#think-alias Why is the sky blue?"])
    func openAIReasoningContentIsApartFromTheAnswer(prompt: String) async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let result = await collect(openAI(fake).stream(ChatRequest(messages: [.user(prompt)])))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.error == nil)
        let thought = FakeReasoning.thought(for: prompt)
        #expect(result.reasoningText == thought)
        #expect(result.reasoningParts == [ReasoningPart(text: thought, provider: "deepseek")])
        #expect(result.text == FakeAnswers().answer(to: prompt, round: 1))
        #expect(!result.text.contains("先想一想"))
        #expect(result.reasoningComesFirst)
        #expect(result.usage?.reasoningTokens == thought.count)
    }

    @Test func openAIWithoutReasoningHasNoPartAndNoReasoningTokens() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let result = await collect(openAI(fake, model: "gpt-test").stream(ChatRequest(messages: [.user("Hi")])))
        await fake.stop()
        #expect(result.error == nil && result.reasoningParts.isEmpty && result.reasoningText.isEmpty)
        #expect(result.usage != nil && result.usage?.reasoningTokens == nil)
    }

    @Test func openAIReasoningThenToolCalls() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let weather = ToolDefinition(name: "weather", parameters: #"{"type":"object","properties":{"city":{"type":"string"}}}"#)
        let request = ChatRequest(messages: [.user("Weather?")], options: ChatOptions(tools: [weather], toolChoice: .required))
        let result = await collect(openAI(fake).stream(request))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.reasoningParts.count == 1 && result.reasoningComesFirst)
        #expect(result.toolCalls.map(\.name) == ["weather"] && result.finish == .toolCalls)
    }

    @Test func openAIReadsAWholeReplysReasoning() async throws {
        let whole = #"""
            {"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",
            "reasoning_content":"Think 🤔.","content":"Answer."},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":4}}}
            """#
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChatEvent.self, throwing: Error.self)
        let sink = EventSink(continuation)
        var state = OpenAIWire.State(provider: "p")
        try state.handle(
            OpenAIWire.decoder.decode(OpenAIWire.Chunk.self, from: Data(whole.utf8)), sink: sink,
            failures: HTTPFailureMapper(provider: "p", redactor: Redactor([]), credentialHint: ""))
        try state.complete(sink: sink, provider: "p")  // finishes the stream: its events are buffered
        let result = await collect(stream)
        #expect(result.reasoningParts == [ReasoningPart(text: "Think 🤔.", provider: "p")])
        #expect(result.text == "Answer." && result.usage?.reasoningTokens == 4 && result.reasoningComesFirst)
    }

    @Test func openAIDialectsSendTheOptionsInTheirShape() throws {
        func body(_ reasoning: ReasoningOptions?, _ dialect: ReasoningDialect) throws -> [String: Any] {
            let configuration = OpenAICompatibleProvider.Configuration(baseURL: "http://x", model: "m", reasoningDialect: dialect)
            let request = ChatRequest(messages: [.user("Hi")], options: ChatOptions(reasoning: reasoning))
            let data = try OpenAIWire.requestBody(request, configuration: configuration)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        #expect(try body(nil, .openAI)["reasoning_effort"] == nil)
        #expect(try body(.effort(.high), .openAI)["reasoning_effort"] as? String == "high")
        #expect(try body(.budget(900), .openAI)["reasoning_effort"] == nil)  // OpenAI chat takes no budget
        #expect(try body(.off, .openAI)["reasoning_effort"] == nil)
        let qwen = try body(.budget(900), .qwen)
        #expect(qwen["enable_thinking"] as? Bool == true && qwen["thinking_budget"] as? Int == 900)
        let qwenOff = try body(.off, .qwen)
        #expect(qwenOff["enable_thinking"] as? Bool == false && qwenOff["thinking_budget"] == nil)
        #expect(try body(nil, .qwen)["enable_thinking"] == nil)
        #expect(try body(.budget(0), .qwen)["enable_thinking"] as? Bool == false)
        let kwargs = try body(.off, .chatTemplateKwargs)
        #expect((kwargs["chat_template_kwargs"] as? [String: Any])?["enable_thinking"] as? Bool == false)
        #expect(try body(.effort(.low), .chatTemplateKwargs)["reasoning_effort"] as? String == "low")
        let none = try body(.effort(.high), .none)
        #expect(none["reasoning_effort"] == nil && none["enable_thinking"] == nil)
    }

    @Test func openAISendsEffortTheFakeAccepts() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let request = ChatRequest(messages: [.user("Hi")], options: ChatOptions(reasoning: .effort(.minimal)))
        let result = await collect(openAI(fake).stream(request))
        await fake.stop()
        #expect(result.error == nil && fake.violations.isEmpty, "\(fake.violations)")
        #expect(fake.requests.first?.json?["reasoning_effort"] as? String == "minimal")
    }

    // MARK: DashScope native

    func dashScope(_ fake: FakeDashScopeGeneration, incremental: Bool) -> DashScopeProvider {
        DashScopeProvider(
            .init(
                baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), model: "qwen-plus", incrementalOutput: incremental,
                timeouts: testTimeouts, retry: .none))
    }

    @Test(arguments: [true, false])
    func dashScopeThinkingStreamsReasoningContent(incremental: Bool) async throws {
        let fake = try await FakeDashScopeGeneration.start(.init(apiKey: Self.key, pause: .zero))
        let prompt = "介绍一下杭州"
        let request = ChatRequest(messages: [.user(prompt)], options: ChatOptions(reasoning: .budget(2048)))
        let result = await collect(dashScope(fake, incremental: incremental).stream(request))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.error == nil)
        let parameters = fake.requests.first?.json?["parameters"] as? [String: Any]
        #expect(parameters?["enable_thinking"] as? Bool == true && parameters?["thinking_budget"] as? Int == 2048)
        let thought = FakeReasoning.thought(for: prompt)
        #expect(result.reasoningText == thought)
        #expect(result.reasoningParts == [ReasoningPart(text: thought, provider: "dashscope")])
        #expect(result.text == FakeAnswers().answer(to: prompt, round: 1))
        #expect(result.reasoningComesFirst)
        #expect((result.usage?.reasoningTokens ?? 0) > 0)
    }

    @Test func dashScopeThinkingOffSendsFalseAndGetsNoReasoning() async throws {
        let fake = try await FakeDashScopeGeneration.start(.init(apiKey: Self.key, pause: .zero))
        let request = ChatRequest(messages: [.user("你好")], options: ChatOptions(reasoning: .off))
        let result = await collect(dashScope(fake, incremental: true).stream(request))
        await fake.stop()
        let parameters = fake.requests.first?.json?["parameters"] as? [String: Any]
        #expect(parameters?["enable_thinking"] as? Bool == false && parameters?["thinking_budget"] == nil)
        #expect(result.error == nil && result.reasoningParts.isEmpty && result.usage?.reasoningTokens == nil)
    }

    // MARK: Anthropic

    func anthropic(_ fake: FakeAnthropicMessages, defaultMaxTokens: Int = 4096) -> AnthropicProvider {
        AnthropicProvider(
            .init(
                baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), model: "claude-test", defaultMaxTokens: defaultMaxTokens,
                timeouts: testTimeouts, retry: .none))
    }

    static let weather = ToolDefinition(
        name: "weather", parameters: #"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#)

    @Test func anthropicStreamsSignedThinkingAndRedactedBlocks() async throws {
        let fake = try await FakeAnthropicMessages.start(apiKey: Self.key)
        let prompt = "#redacted Why is the sky blue?"
        let request = ChatRequest(messages: [.user(prompt)], options: ChatOptions(reasoning: .budget(2000)))
        let result = await collect(anthropic(fake).stream(request))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.error == nil)
        let thinking = fake.requests.first?.json?["thinking"] as? [String: Any]
        #expect(thinking?["type"] as? String == "enabled" && thinking?["budget_tokens"] as? Int == 2000)
        let thought = FakeReasoning.thought(for: prompt)
        #expect(result.reasoningText == thought)
        #expect(
            result.reasoningParts == [
                ReasoningPart(text: thought, signature: FakeReasoning.signature(of: thought), provider: "anthropic"),
                ReasoningPart(text: "", redactedData: FakeReasoning.redactedData, provider: "anthropic"),
            ])
        #expect(result.text == FakeAnswers().answer(to: prompt, round: 1) && result.reasoningComesFirst)
        #expect(result.usage != nil && result.usage?.reasoningTokens == nil)  // Anthropic does not count it apart
    }

    @Test func anthropicToolRoundTripSendsTheSignedThinkingBack() async throws {
        let fake = try await FakeAnthropicMessages.start(apiKey: Self.key)
        let provider = anthropic(fake)
        let options = ChatOptions(tools: [Self.weather], reasoning: .effort(.low))
        var messages: [ChatMessage] = [.user("#redacted Weather in Hangzhou?")]
        let first = try await provider.complete(ChatRequest(messages: messages, options: options))
        #expect(first.reasoning.count == 2 && first.toolCalls.count == 1)
        messages.append(first.assistantMessage)
        messages.append(.tool("晴 25°C", callID: first.toolCalls[0].id))
        let second = try await provider.complete(ChatRequest(messages: messages, options: options))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(second.text.contains("晴 25°C") && second.reasoning.isEmpty)
        let sent = try #require(fake.requests.last?.json?["messages"] as? [[String: Any]])
        let blocks = try #require(sent[1]["content"] as? [[String: Any]])
        #expect(blocks.compactMap { $0["type"] as? String } == ["thinking", "redacted_thinking", "tool_use"])
        #expect(blocks[0]["signature"] as? String == first.reasoning[0].signature)
        let budget = (fake.requests.first?.json?["thinking"] as? [String: Any])?["budget_tokens"] as? Int
        #expect(budget == ReasoningEffort.low.defaultBudgetTokens)
    }

    /// The fake checks what Anthropic checks, so the round trip above could fail: without the
    /// thinking block, or with its signature altered, the follow-up is refused.
    @Test(arguments: ["missing", "altered", "foreign"])
    func anthropicRefusesAFollowUpWithoutItsSignedThinking(how: String) async throws {
        let fake = try await FakeAnthropicMessages.start(apiKey: Self.key)
        let provider = anthropic(fake)
        let options = ChatOptions(tools: [Self.weather], reasoning: .budget(1024))
        let first = try await provider.complete(ChatRequest(messages: [.user("Weather?")], options: options))
        var assistant = first.assistantMessage
        switch how {
        case "missing": assistant.reasoning = []
        case "altered": assistant.reasoning[0].text += " (edited)"
        default: assistant.reasoning[0].provider = "another-cloud"  // sealed for another provider: not sent
        }
        let followUp: [ChatMessage] = [.user("Weather?"), assistant, .tool("晴", callID: first.toolCalls[0].id)]
        await #expect(throws: ProviderError.self) {
            _ = try await provider.complete(ChatRequest(messages: followUp, options: options))
        }
        await fake.stop()
        #expect(fake.violations.count == 1, "\(fake.violations)")
    }

    @Test func anthropicThinkingFieldFitsMaxTokens() throws {
        func body(_ options: ChatOptions) throws -> [String: Any] {
            let configuration = AnthropicProvider.Configuration(apiKey: CloudSecret("k"), defaultMaxTokens: 4096)
            let data = try AnthropicWire.requestBody(ChatRequest(messages: [.user("Hi")], options: options), configuration: configuration).body
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        #expect(try body(ChatOptions())["thinking"] == nil)
        #expect((try body(ChatOptions(reasoning: .off))["thinking"] as? [String: Any])?["type"] as? String == "disabled")
        #expect((try body(ChatOptions(reasoning: .budget(0)))["thinking"] as? [String: Any])?["type"] as? String == "disabled")
        // No maxTokens: the default grows by the budget, so the answer keeps its room.
        let grown = try body(ChatOptions(reasoning: .budget(8000)))
        #expect(grown["max_tokens"] as? Int == 8000 + 4096)
        // A small budget is raised to the API's minimum.
        #expect((try body(ChatOptions(reasoning: .budget(10)))["thinking"] as? [String: Any])?["budget_tokens"] as? Int == 1024)
        // maxTokens set at or below the budget: the budget shrinks below it…
        let shrunk = try body(ChatOptions(maxTokens: 3000, reasoning: .budget(5000)))
        #expect(shrunk["max_tokens"] as? Int == 3000)
        #expect((shrunk["thinking"] as? [String: Any])?["budget_tokens"] as? Int == 2999)
        // …and below the minimum it is refused before anything is sent.
        #expect(throws: ProviderError.self) { try body(ChatOptions(maxTokens: 500, reasoning: .budget(2000))) }
    }

    @Test func anthropicSendsOnlyItsOwnSealedPartsBeforeText() throws {
        let own = ReasoningPart(text: "Mine.", signature: "sig-own", provider: "anthropic")
        let foreign = ReasoningPart(text: "Theirs.", signature: "sig-other", provider: "other")
        let unsigned = ReasoningPart(text: "Local thinking.", provider: "local")
        var pieces = RawJSONPieces()
        let turns = [ChatMessage.user("Hi"), ChatMessage(role: .assistant, content: "Hello.", reasoning: [foreign, own, unsigned])]
        let wire = try AnthropicWire.messages(turns, pieces: &pieces, provider: "anthropic")
        let blocks = try #require(wire[1]["content"] as? [[String: Any]])
        #expect(blocks.count == 2)
        #expect(blocks[0]["type"] as? String == "thinking" && blocks[0]["signature"] as? String == "sig-own")
        #expect(blocks[0]["thinking"] as? String == "Mine." && blocks[1]["type"] as? String == "text")
        // No part of its own: a plain string, as before.
        let plain = try AnthropicWire.messages(
            [.user("Hi"), ChatMessage(role: .assistant, content: "Hello.", reasoning: [foreign, unsigned])], pieces: &pieces,
            provider: "anthropic")
        #expect(plain[1]["content"] as? String == "Hello.")
    }
}
