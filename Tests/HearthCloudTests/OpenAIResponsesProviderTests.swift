import Foundation
import HearthFakeServers
import HearthProviders
import Testing

@testable import HearthCloud

/// ``OpenAIResponsesProvider`` against ``FakeOpenAIResponses`` (a real HTTP server on loopback
/// that checks requests as OpenAI's Responses API does): reasoning items (summaries, reasoning
/// text, encrypted content) as reasoning events and parts, sent back as `reasoning` input items
/// so a tool round trip continues; usage with reasoning and cached tokens; tools, `text.format`,
/// the reasoning options; whole replies, `incomplete` and `failed`; what the API cannot do is
/// refused before anything is sent.
@Suite struct OpenAIResponsesProviderTests {
    static let key = "sk-responses-test-9a4e"
    static let weather = ToolDefinition(name: "weather", parameters: #"{"type":"object","properties":{"city":{"type":"string"}}}"#)

    func provider(_ fake: FakeOpenAIResponses, model: String = "gpt-5-test") -> OpenAIResponsesProvider {
        OpenAIResponsesProvider(
            .init(baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), model: model, timeouts: testTimeouts, retry: .none))
    }

    static func encrypted(_ index: Int) -> String { FakeOpenAIResponses.encryptedContent(id: "rs_fake\(index)_0") }

    @Test func streamedSummaryComesBackAsAPartWithItsEncryptedContent() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        let prompt = "Why is the sky blue?"
        let options = ChatOptions(maxTokens: 200, reasoning: ReasoningOptions(effort: .low, summary: true))
        let result = await collect(provider(fake).stream(ChatRequest(messages: [.system("Be brief."), .user(prompt)], options: options)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.error == nil, "\(String(describing: result.error))")
        let thought = FakeReasoning.thought(for: prompt)
        #expect(result.reasoningText == thought)
        #expect(
            result.reasoningParts == [
                ReasoningPart(text: thought, encryptedContent: Self.encrypted(0), id: "rs_fake0_0", provider: "openai-responses")
            ])
        #expect(result.text == FakeAnswers().answer(to: prompt, round: 1))
        #expect(result.reasoningComesFirst && result.finish == .stop)
        #expect(result.usage?.promptTokens == 31 && result.usage?.cachedPromptTokens == 8)
        #expect(result.usage?.reasoningTokens == thought.count && result.usage?.completionTokens == 17 + thought.count)
        let body = try #require(fake.requests.first?.json)
        #expect(body["stream"] as? Bool == true && body["store"] as? Bool == false)
        #expect(body["include"] as? [String] == ["reasoning.encrypted_content"])
        #expect(body["max_output_tokens"] as? Int == 200)
        let reasoning = try #require(body["reasoning"] as? [String: Any])
        #expect(reasoning["effort"] as? String == "low" && reasoning["summary"] as? String == "auto")
        let input = try #require(body["input"] as? [[String: Any]])
        #expect(input.map { $0["role"] as? String } == ["system", "user"])
    }

    @Test func reasoningTextAndWholeRepliesAreReadToo() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        for prompt in ["#reasoning-text Hi", "#whole Hi"] {
            let options = ChatOptions(reasoning: ReasoningOptions(summary: true))
            let result = await collect(provider(fake).stream(ChatRequest(messages: [.user(prompt)], options: options)))
            #expect(result.error == nil, "\(prompt): \(String(describing: result.error))")
            let thought = FakeReasoning.thought(for: prompt)
            #expect(result.reasoningText == thought, "\(prompt)")
            #expect(result.reasoningParts.map(\.text) == [thought] && result.reasoningParts.first?.encryptedContent != nil, "\(prompt)")
            #expect(result.text == FakeAnswers().answer(to: prompt, round: 1), "\(prompt)")
            #expect(result.reasoningComesFirst && result.usage?.reasoningTokens == thought.count, "\(prompt)")
        }
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
    }

    /// Without a summary asked for, OpenAI shows no reasoning text: the part has none, but its
    /// id and encrypted content still come back (the next turn needs them).
    @Test func withoutASummaryThePartCarriesOnlyItsSeal() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        let result = await collect(provider(fake).stream(ChatRequest(messages: [.user("Hi")])))
        await fake.stop()
        #expect(result.error == nil && result.reasoningText.isEmpty)
        #expect(result.reasoningParts == [ReasoningPart(text: "", encryptedContent: Self.encrypted(0), id: "rs_fake0_0", provider: "openai-responses")])
        #expect(fake.requests.first?.json?["reasoning"] == nil)
    }

    /// A reasoning model's tool round trip: the calls' reasoning item goes back before the
    /// `function_call` items with its encrypted content, and the fake answers the result. The
    /// fake refuses the same turn without the item, and with its encrypted content altered.
    @Test func toolRoundTripSendsTheReasoningItemBack() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        let options = ChatOptions(tools: [Self.weather], toolChoice: .required, reasoning: .effort(.medium))
        let first = try await provider(fake).complete(ChatRequest(messages: [.user("Weather in Hangzhou?")], options: options))
        #expect(first.toolCalls.map(\.name) == ["weather"] && first.finishReason == .toolCalls)
        #expect(first.reasoning.count == 1 && first.reasoning.first?.encryptedContent == Self.encrypted(0))
        let call = try #require(first.toolCalls.first)
        #expect(call.id == "call_fake0" && call.arguments == #"{"city":"Hangzhou 杭州"}"#)

        let conversation: [ChatMessage] = [.user("Weather in Hangzhou?"), first.assistantMessage, .tool("晴 25°C", callID: call.id)]
        let second = try await provider(fake).complete(ChatRequest(messages: conversation, options: options))
        #expect(second.text == "根据工具结果（晴 25°C），杭州今天晴 ☀️。" && second.finishReason == .stop)
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        let input = try #require(fake.requests.last?.json?["input"] as? [[String: Any]])
        #expect(input.map { $0["type"] as? String } == ["message", "reasoning", "function_call", "function_call_output"])
        #expect(input[1]["id"] as? String == "rs_fake0_0" && input[1]["encrypted_content"] as? String == Self.encrypted(0))
        #expect(input[2]["call_id"] as? String == "call_fake0" && input[3]["output"] as? String == "晴 25°C")

        var stripped = conversation
        stripped[1].reasoning = []
        let refused = await collect(provider(fake).stream(ChatRequest(messages: stripped, options: options)))
        #expect(refused.providerError?.code == .invalidRequest, "\(String(describing: refused.error))")
        var altered = conversation
        altered[1].reasoning[0].encryptedContent = "gAAAAB-not-the-fakes"
        let tampered = await collect(provider(fake).stream(ChatRequest(messages: altered, options: options)))
        #expect(tampered.providerError?.code == .invalidRequest && "\(tampered.error.map { "\($0)" } ?? "")".contains("could not be verified"))
        await fake.stop()
        #expect(fake.violations.count == 2, "\(fake.violations)")
    }

    /// Another provider's sealed parts and plain parts without an id are never sent.
    @Test func onlyItsOwnPartsWithAnIDGoBack() throws {
        let configuration = OpenAIResponsesProvider.Configuration(apiKey: CloudSecret(Self.key))
        let mine = ReasoningPart(text: "mine", encryptedContent: "e1", id: "rs_1", provider: "openai-responses")
        let theirs = ReasoningPart(text: "theirs", signature: "sig", provider: "anthropic")
        let plain = ReasoningPart(text: "plain")
        let message = ChatMessage(role: .assistant, content: "Answer.", reasoning: [theirs, plain, mine])
        let data = try OpenAIResponsesWire.requestBody(ChatRequest(messages: [.user("Hi"), message, .user("More")]), configuration: configuration)
        let body = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let input = try #require(body["input"] as? [[String: Any]])
        #expect(input.map { $0["type"] as? String } == ["message", "reasoning", "message", "message"])
        #expect(input[1]["id"] as? String == "rs_1" && input[1]["encrypted_content"] as? String == "e1")
        #expect((input[1]["summary"] as? [[String: Any]])?.first?["text"] as? String == "mine")
    }

    @Test func reasoningOptionsInTheAPIsShape() throws {
        #expect(OpenAIResponsesWire.reasoning(nil) == nil)
        #expect(OpenAIResponsesWire.reasoning(.off)?["effort"] as? String == "none")
        #expect(OpenAIResponsesWire.reasoning(.effort(.high))?["effort"] as? String == "high")
        #expect(OpenAIResponsesWire.reasoning(.budget(1000))?["effort"] as? String == "low")
        #expect(OpenAIResponsesWire.reasoning(.budget(100_000))?["effort"] as? String == "high")
        #expect(OpenAIResponsesWire.reasoning(ReasoningOptions(summary: true))?["summary"] as? String == "auto")
        #expect(OpenAIResponsesWire.reasoning(ReasoningOptions()) == nil)
        #expect(OpenAIResponsesWire.reasoning(nil, summaryByDefault: true)?["summary"] as? String == "auto")
        #expect(OpenAIResponsesWire.reasoning(.effort(.low), summaryByDefault: true)?["summary"] as? String == "auto")
        #expect(OpenAIResponsesWire.reasoning(ReasoningOptions(summary: false), summaryByDefault: true) == nil)
        #expect(OpenAIResponsesWire.reasoning(.off, summaryByDefault: true)?["summary"] == nil)
    }

    @Test func reasoningOffSendsEffortNoneAndGetsNoPart() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        let result = await collect(provider(fake).stream(ChatRequest(messages: [.user("Hi")], options: ChatOptions(reasoning: .off))))
        await fake.stop()
        #expect(result.error == nil && result.reasoningParts.isEmpty && result.usage?.reasoningTokens == 0)
        let body = try #require(fake.requests.first?.json)
        #expect((body["reasoning"] as? [String: Any])?["effort"] as? String == "none" && body["include"] == nil)
    }

    @Test func structuredOutputIsTextFormat() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        let schema = JSONSchemaFormat(name: "city", schema: #"{"type":"object","properties":{"name":{"type":"string"},"rank":{"type":"integer"}}}"#)
        let options = ChatOptions(responseFormat: .jsonSchema(schema))
        let result = await collect(provider(fake, model: "gpt-4.1-test").stream(ChatRequest(messages: [.user("A city")], options: options)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any])
        #expect(answer["name"] as? String == "Hangzhou 杭州" && answer["rank"] as? Int == 3)
        let format = try #require(((fake.requests.first?.json?["text"] as? [String: Any])?["format"]) as? [String: Any])
        #expect(format["type"] as? String == "json_schema" && format["name"] as? String == "city")
        #expect(fake.requests.first?.body.contains(#""schema":{"type":"object","properties":{"name""#) == true, "the schema keeps its key order")
        #expect(result.reasoningParts.isEmpty, "gpt-4.1 does not reason")
    }

    @Test func incompleteIsLengthAndFailedIsAnError() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        let cut = await collect(provider(fake, model: "gpt-4.1-test").stream(ChatRequest(messages: [.user("#length Hi")])))
        #expect(cut.error == nil && cut.finish == .length && !cut.text.isEmpty)
        let failed = await collect(provider(fake, model: "gpt-4.1-test").stream(ChatRequest(messages: [.user("#error Hi")])))
        #expect(failed.providerError?.code == .server(status: 500), "\(String(describing: failed.error))")
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
    }

    /// Events fed straight to the reader: summary parts are joined by a blank line, an item that
    /// streams both its summary and its content shows one of them, a whole function_call item
    /// with no argument deltas is one call, and an `error` event is a ``ProviderError``.
    @Test func eventsReadDirectly() async throws {
        let frames = [
            #"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
            #"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"First."}"#,
            #"{"type":"response.reasoning_text.delta","output_index":0,"content_index":0,"delta":"raw"}"#,
            #"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"Second."}"#,
            #"{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"e"}}"#,
            #"{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":""}}"#,
            #"{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}}"#,
            #"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}}}}"#,
        ]
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChatEvent.self, throwing: Error.self)
        let sink = EventSink(continuation)
        let failures = HTTPFailureMapper(provider: "p", redactor: Redactor([]), credentialHint: "")
        var state = OpenAIResponsesWire.ReplyState(provider: "p")
        for frame in frames {
            try state.handle(
                OpenAIResponsesWire.decoder.decode(OpenAIResponsesWire.Event.self, from: Data(frame.utf8)), sink: sink, failures: failures)
        }
        let result = await collect(stream)
        #expect(result.reasoningText == "First.\n\nSecond.")
        #expect(result.reasoningParts == [ReasoningPart(text: "First.\n\nSecond.", encryptedContent: "e", id: "rs_1", provider: "p")])
        #expect(result.toolCalls.map(\.id) == ["c1"] && result.toolCalls.first?.arguments == #"{"a":1}"#)
        #expect(result.finish == .toolCalls && result.usage?.reasoningTokens == 2 && result.reasoningComesFirst)

        var failing = OpenAIResponsesWire.ReplyState(provider: "p")
        let error = #"{"type":"error","code":"rate_limit_exceeded","message":"Slow down."}"#
        #expect(throws: ProviderError.self) {
            try failing.handle(
                OpenAIResponsesWire.decoder.decode(OpenAIResponsesWire.Event.self, from: Data(error.utf8)), sink: sink, failures: failures)
        }
    }

    @Test func whatTheAPICannotDoIsRefusedBeforeSending() async throws {
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        for options in [ChatOptions(stop: ["\n"]), ChatOptions(logitBias: [42: -100]), ChatOptions(responseFormat: .regex("a+"))] {
            let result = await collect(provider(fake).stream(ChatRequest(messages: [.user("Hi")], options: options)))
            guard case .unsupported? = result.providerError?.code else {
                Issue.record("not refused as unsupported: \(String(describing: result.error))")
                continue
            }
        }
        await fake.stop()
        #expect(fake.requests.isEmpty)
    }
}
