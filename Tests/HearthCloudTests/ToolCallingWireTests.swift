import Foundation
import HearthFakeServers
import HearthProviders
import Testing

@testable import HearthCloud

/// Tools on every cloud provider's wire, against the fakes in HearthFakeServers (whose tool
/// replies and request checks scripts/check-dashscope-fakes.sh proves against the official SDKs).
@Suite struct ToolCallingWireTests {
    static let key = "sk-tools-test-2b7e6d5a"
    /// Key order matters: the model writes the arguments in the schema's order.
    static let weatherSchema = #"{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}"#
    static let weather = ToolDefinition(name: "weather", description: "The forecast for a city.", parameters: weatherSchema)
    static let now = ToolDefinition(name: "now", description: "The current time.")
    static let weatherArguments = #"{"city":"Hangzhou 杭州","days":3}"#

    func request(_ choice: ToolChoice? = nil, parallel: Bool? = nil, tools: [ToolDefinition] = [weather, now]) -> ChatRequest {
        ChatRequest(
            messages: [.system("Use the tools."), .user("Weather in Hangzhou, and the time?")],
            options: ChatOptions(tools: tools, toolChoice: choice, parallelToolCalls: parallel))
    }

    /// A conversation that made two calls and has both results, then a user remark.
    static let afterResults = [
        ChatMessage.user("Weather in Hangzhou, and the time?"),
        .assistant("Let me look.", toolCalls: [
            ToolCall(id: "call_a", name: "weather", arguments: weatherArguments), ToolCall(id: "call_b", name: "now", arguments: ""),
        ]),
        .tool("晴 25°C", callID: "call_a"), .tool("10:00", callID: "call_b"),
    ]

    /// Every call's events are started → arguments… → finished, one call after the other.
    func expectWellFormed(_ steps: [ToolCallEvent], calls: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        var expected = 0
        var open: Int?
        for step in steps {
            switch step {
            case .started(let index, _, _):
                #expect(open == nil && index == expected, "call \(index) started while \(String(describing: open)) was open", sourceLocation: sourceLocation)
                open = index
            case .arguments(let index, _):
                #expect(open == index, sourceLocation: sourceLocation)
            case .finished(let index):
                #expect(open == index, sourceLocation: sourceLocation)
                open = nil
                expected += 1
            }
        }
        #expect(open == nil && expected == calls, sourceLocation: sourceLocation)
    }

    /// The fakes' answer to ``request(_:parallel:tools:)`` when parallel calls are allowed:
    /// `weather` and `now` (`{}`), well formed, finishing `.toolCalls`.
    func expectTheTwoCalls(_ result: Collected, idPrefix: String, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.error == nil, sourceLocation: sourceLocation)
        #expect(
            result.toolCalls == [
                ToolCall(id: "\(idPrefix)fake0", name: "weather", arguments: Self.weatherArguments),
                ToolCall(id: "\(idPrefix)fake1", name: "now", arguments: "{}"),
            ], comment, sourceLocation: sourceLocation)
        expectWellFormed(result.toolSteps, calls: 2, sourceLocation: sourceLocation)
        #expect(result.finish == .toolCalls && result.text.isEmpty, sourceLocation: sourceLocation)
    }

    // MARK: OpenAI-compatible

    func openAI(_ fake: FakeOpenAIChat, support: ToolCallingSupport = .openAI) -> OpenAICompatibleProvider {
        OpenAICompatibleProvider(
            .init(
                id: "openai", baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), requiresAPIKey: true, model: "gpt-test",
                timeouts: testTimeouts, retry: .none, toolCalling: support))
    }

    @Test func openAIStreamsTwoParallelCallsInPieces() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let result = await collect(openAI(fake).stream(request(.required, parallel: true)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        expectTheTwoCalls(result, idPrefix: "call_")
        #expect(result.toolSteps.filter { if case .arguments(0, _) = $0 { true } else { false } }.count > 2, "split argument pieces")
        #expect(result.usage?.promptTokens == 31)

        let sent = try #require(fake.requests.first)
        let body = try #require(sent.json)
        #expect(body["tool_choice"] as? String == "required")
        #expect(body["parallel_tool_calls"] as? Bool == true)
        let tools = try #require(body["tools"] as? [[String: Any]])
        #expect(tools.count == 2 && tools.allSatisfy { $0["type"] as? String == "function" })
        let function = try #require(tools[0]["function"] as? [String: Any])
        #expect(function["name"] as? String == "weather" && function["description"] as? String == "The forecast for a city.")
        #expect(sent.body.contains(#""parameters":\#(Self.weatherSchema)"#), "the schema keeps its key order")
    }

    @Test func openAISendsCallsAndResultsAndGetsTheAnswer() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        var followUp = request(.auto)
        followUp.messages = Self.afterResults
        let result = await collect(openAI(fake).stream(followUp))
        await fake.stop()
        #expect(result.error == nil && fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.text == "根据工具结果（10:00），杭州今天晴 ☀️。" && result.toolSteps.isEmpty && result.finish == .stop)
        let messages = try #require(fake.requests.first?.json?["messages"] as? [[String: Any]])
        #expect(messages.count == 4)
        #expect(messages[1]["content"] as? String == "Let me look.")
        let calls = try #require(messages[1]["tool_calls"] as? [[String: Any]])
        #expect(calls.map { $0["id"] as? String } == ["call_a", "call_b"])
        #expect((calls[1]["function"] as? [String: Any])?["arguments"] as? String == "")
        #expect(messages[2]["role"] as? String == "tool" && messages[2]["tool_call_id"] as? String == "call_a")
        #expect(messages[3]["tool_call_id"] as? String == "call_b" && messages[3]["content"] as? String == "10:00")
        #expect(fake.requests.first?.json?["tool_choice"] as? String == "auto")
    }

    @Test func openAINamedChoiceAndDisabledChoice() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let named = await collect(openAI(fake).stream(request(.named("now"))))
        let disabled = await collect(openAI(fake).stream(request(.disabled)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(named.toolCalls == [ToolCall(id: "call_fake0", name: "now", arguments: "{}")])
        let choice = try #require(fake.requests.first?.json?["tool_choice"] as? [String: Any])
        #expect(choice["type"] as? String == "function" && (choice["function"] as? [String: Any])?["name"] as? String == "now")
        #expect(disabled.toolSteps.isEmpty && !disabled.text.isEmpty && disabled.finish == .stop)
        #expect(fake.requests.last?.json?["tool_choice"] as? String == "none")
        #expect(fake.requests.last?.json?["tools"] != nil, "none still shows the model its tools")
    }

    @Test func openAIWholeReplyWithCalls() async throws {
        // A server that ignores `stream: true` answers with one chat.completion.
        let server = try await TestHTTPServer.start { _, _, out in
            let body = #"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"now","arguments":""}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":6}}"#
            try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: body)
            return .close
        }
        let provider = OpenAICompatibleProvider(
            .init(baseURL: server.baseURL, model: "m", timeouts: testTimeouts, retry: .none))
        let response = try await provider.complete(request())
        await server.stop()
        #expect(
            response.toolCalls == [
                ToolCall(id: "call_1", name: "weather", arguments: #"{"city":"Paris"}"#), ToolCall(id: "call_2", name: "now", arguments: "{}"),
            ])
        #expect(response.finishReason == .toolCalls)
    }

    @Test func openAIEndpointsRefuseWhatTheyCannotHonourBeforeSending() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let deepSeekLike: ToolCallingSupport = [.tools, .noneChoice, .requiredChoice, .namedChoice]
        let serial = await collect(openAI(fake, support: deepSeekLike).stream(request(parallel: false)))
        let ollamaRequired = await collect(openAI(fake, support: .tools).stream(request(.required)))
        let noTools = await collect(openAI(fake, support: .none).stream(request()))
        var history = request(.disabled)
        history.messages = Self.afterResults
        let noToolMessages = await collect(openAI(fake, support: .none).stream(history))
        #expect(fake.requests.isEmpty, "nothing may be sent")
        #expect(serial.providerError?.code == .unsupported(feature: "parallel_tool_calls false"))
        #expect(ollamaRequired.providerError?.code == .unsupported(feature: "tool_choice required"))
        #expect(noTools.providerError?.code == .unsupported(feature: "tools"))
        #expect(noToolMessages.providerError?.code == .unsupported(feature: "tool messages"))
        #expect(FallbackRouter.defaultFailover(try #require(serial.providerError)), "an unsupported feature fails over to the local model")

        // What they can honour another way: `none` without a `none` leaves the tools out;
        // `required` with one tool becomes that tool by name (Qwen documents no `required`).
        _ = await collect(openAI(fake, support: .tools).stream(request(.disabled)))
        _ = await collect(openAI(fake, support: .qwen).stream(request(.required, tools: [Self.weather])))
        let qwenMany = await collect(openAI(fake, support: .qwen).stream(request(.required)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(fake.requests.count == 2)
        #expect(fake.requests.first?.json?["tools"] == nil && fake.requests.first?.json?["tool_choice"] == nil)
        let named = try #require(fake.requests.last?.json?["tool_choice"] as? [String: Any])
        #expect((named["function"] as? [String: Any])?["name"] as? String == "weather")
        #expect(qwenMany.providerError?.code == .unsupported(feature: "tool_choice required"))
    }

    @Test func malformedToolsAndCallsAreInvalidRequests() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        let twice = await collect(openAI(fake).stream(request(tools: [Self.weather, Self.weather])))
        var orphan = request()
        orphan.messages.append(.tool("?", callID: "call_unknown"))
        let unanswered = await collect(openAI(fake).stream(orphan))
        await fake.stop()
        #expect(fake.requests.isEmpty)
        #expect(twice.providerError?.code == .invalidRequest && twice.providerError?.message.contains("tools[1].name") == true)
        #expect(unanswered.providerError?.code == .invalidRequest)
    }

    @Test func streamedDeltaEdgeCases() throws {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChatEvent.self, throwing: Error.self)
        _ = stream
        let sink = EventSink(continuation)
        var calls = StreamedToolCalls()
        // A name in two pieces, no id (one is made), arguments that never come ({}).
        try calls.add(wireIndex: 3, id: nil, name: "wea", arguments: nil, sink: sink, provider: "p")
        try calls.add(wireIndex: 3, id: nil, name: "ther", arguments: "", sink: sink, provider: "p")
        try calls.add(wireIndex: 7, id: "call_2", name: "now", arguments: "{}", sink: sink, provider: "p")
        #expect(throws: ProviderError.self) {
            try calls.add(wireIndex: 3, id: nil, name: nil, arguments: "x", sink: sink, provider: "p")  // interleaved
        }
        var unnamed = StreamedToolCalls()
        #expect(throws: ProviderError.self) {
            try unnamed.add(wireIndex: 0, id: "c", name: nil, arguments: "{", sink: sink, provider: "p")
        }
        try calls.finish(sink: sink, provider: "p")
        continuation.finish()
        #expect(calls.count == 2)
    }

    // MARK: Anthropic

    func anthropic(_ fake: FakeAnthropicMessages) -> AnthropicProvider {
        AnthropicProvider(
            .init(baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), model: "claude-test", timeouts: testTimeouts, retry: .none))
    }

    @Test func anthropicStreamsToolUseBlocks() async throws {
        let fake = try await FakeAnthropicMessages.start(apiKey: Self.key)
        let result = await collect(anthropic(fake).stream(request(.required)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        expectTheTwoCalls(result, idPrefix: "toolu_", "an empty input is {}")
        let sent = try #require(fake.requests.first)
        let body = try #require(sent.json)
        #expect((body["tool_choice"] as? [String: Any])?["type"] as? String == "any")
        let tools = try #require(body["tools"] as? [[String: Any]])
        #expect(tools.map { $0["name"] as? String } == ["weather", "now"])
        #expect(sent.body.contains(#""input_schema":\#(Self.weatherSchema)"#), "the schema keeps its key order")
        #expect(body["system"] as? String == "Use the tools.")
    }

    @Test func anthropicSendsToolUseAndMergedToolResults() async throws {
        let fake = try await FakeAnthropicMessages.start(apiKey: Self.key)
        var followUp = request(.auto)
        followUp.messages = Self.afterResults + [.user("Thanks!")]
        let result = await collect(anthropic(fake).stream(followUp))
        await fake.stop()
        #expect(result.error == nil && fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.text == "根据工具结果（晴 25°C），杭州今天晴 ☀️。" && result.finish == .stop)
        let messages = try #require(fake.requests.first?.json?["messages"] as? [[String: Any]])
        #expect(messages.map { $0["role"] as? String } == ["user", "assistant", "user"], "results merge into one user turn")
        let assistant = try #require(messages[1]["content"] as? [[String: Any]])
        #expect(assistant.map { $0["type"] as? String } == ["text", "tool_use", "tool_use"])
        #expect(assistant[1]["input"] as? [String: Any] != nil && (assistant[2]["input"] as? [String: Any])?.isEmpty == true)
        let results = try #require(messages[2]["content"] as? [[String: Any]])
        #expect(results.map { $0["type"] as? String } == ["tool_result", "tool_result", "text"])
        #expect(results.map { $0["tool_use_id"] as? String } == ["call_a", "call_b", nil])
        #expect(try #require(fake.requests.first).body.contains(#""input":\#(Self.weatherArguments)"#), "arguments keep their order")
    }

    @Test func anthropicNamedSerialAndNoneChoices() async throws {
        let fake = try await FakeAnthropicMessages.start(apiKey: Self.key)
        let named = await collect(anthropic(fake).stream(request(.named("weather"), parallel: false)))
        let serial = await collect(anthropic(fake).stream(request(.auto, parallel: false)))
        let none = await collect(anthropic(fake).stream(request(.disabled, parallel: false)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(named.toolCalls.map(\.name) == ["weather"] && serial.toolCalls.count == 1)
        #expect(none.toolSteps.isEmpty && !none.text.isEmpty)
        let choices = fake.requests.compactMap { $0.json?["tool_choice"] as? [String: Any] }
        #expect(choices[0]["type"] as? String == "tool" && choices[0]["name"] as? String == "weather")
        #expect(choices[0]["disable_parallel_tool_use"] as? Bool == true && choices[1]["disable_parallel_tool_use"] as? Bool == true)
        #expect(choices[2]["type"] as? String == "none" && choices[2]["disable_parallel_tool_use"] == nil)
    }

    // MARK: DashScope native

    func dashScope(_ fake: FakeDashScopeGeneration, incremental: Bool) -> DashScopeProvider {
        DashScopeProvider(
            .init(
                baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), model: "qwen-plus", incrementalOutput: incremental,
                timeouts: testTimeouts, retry: .none))
    }

    @Test(arguments: [true, false])
    func dashScopeStreamsCallsAsIncrements(configuredIncremental: Bool) async throws {
        let fake = try await FakeDashScopeGeneration.start(.init(apiKey: Self.key))
        let result = await collect(dashScope(fake, incremental: configuredIncremental).stream(request(.auto, parallel: true)))
        await fake.stop()
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        expectTheTwoCalls(result, idPrefix: "call_", "ids from the first piece (later pieces carry \"\")")
        let parameters = try #require(fake.requests.first?.json?["parameters"] as? [String: Any])
        #expect(parameters["incremental_output"] as? Bool == true, "tools always stream increments, as the SDK does")
        #expect(parameters["tool_choice"] as? String == "auto" && parameters["parallel_tool_calls"] as? Bool == true)
        #expect(try #require(fake.requests.first).body.contains(#""parameters":\#(Self.weatherSchema)"#))
    }

    @Test func dashScopeSendsCallsAndResults() async throws {
        let fake = try await FakeDashScopeGeneration.start(.init(apiKey: Self.key))
        var followUp = request(.named("weather"))
        followUp.messages = Self.afterResults
        let result = await collect(dashScope(fake, incremental: true).stream(followUp))
        let forcedMany = await collect(dashScope(fake, incremental: true).stream(request(.required)))
        await fake.stop()
        #expect(result.error == nil && fake.violations.isEmpty, "\(fake.violations)")
        #expect(result.text == "根据工具结果（10:00），杭州今天晴 ☀️。")
        let messages = try #require((fake.requests.first?.json?["input"] as? [String: Any])?["messages"] as? [[String: Any]])
        #expect((messages[1]["tool_calls"] as? [[String: Any]])?.count == 2)
        #expect(messages[2]["role"] as? String == "tool" && messages[2]["tool_call_id"] as? String == "call_a")
        #expect(messages[2]["name"] as? String == "weather")
        let parameters = try #require(fake.requests.first?.json?["parameters"] as? [String: Any])
        #expect(((parameters["tool_choice"] as? [String: Any])?["function"] as? [String: Any])?["name"] as? String == "weather")
        #expect(forcedMany.providerError?.code == .unsupported(feature: "tool_choice required"))
        #expect(fake.requests.count == 1)
    }

    @Test func dashScopeWholeReplyWithCalls() async throws {
        // A reply that is one JSON document (not an event stream) is read too.
        let server = try await TestHTTPServer.start { _, _, out in
            let body = #"{"output":{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"now","arguments":"{}"}}]},"finish_reason":"tool_calls"}]},"usage":{"input_tokens":3,"output_tokens":4},"request_id":"r"}"#
            try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: body)
            return .close
        }
        let provider = DashScopeProvider(
            .init(baseURL: server.baseURL, apiKey: CloudSecret(Self.key), timeouts: testTimeouts, retry: .none))
        let response = try await provider.complete(request())
        await server.stop()
        #expect(response.toolCalls == [ToolCall(id: "call_9", name: "now", arguments: "{}")] && response.finishReason == .toolCalls)
    }

    // MARK: APIs without tools

    @Test func sparkAndBailianRefuseToolsButHonourNone() async throws {
        let spark = SparkProvider(
            .init(appID: "app", apiKey: CloudSecret("k"), apiSecret: CloudSecret("s"), timeouts: testTimeouts, retry: .none))
        let bailian = BailianDialogProvider(
            .init(url: "ws://127.0.0.1:9/ws", apiKey: CloudSecret("k"), appID: "app", timeouts: testTimeouts, retry: .none))
        for provider in [spark, bailian] as [any LanguageModelProvider] {
            let refused = await collect(provider.stream(request(.auto)))
            #expect(refused.providerError?.code == .unsupported(feature: "tools"), "\(provider.id)")
            var history = request(.disabled)
            history.messages = Self.afterResults
            let messages = await collect(provider.stream(history))
            #expect(messages.providerError?.code == .unsupported(feature: "tool messages"), "\(provider.id)")
        }
        var configuration = SparkProvider.Configuration(appID: "app", apiKey: CloudSecret("k"), apiSecret: CloudSecret("s"))
        configuration.uid = "u"
        let body = try SparkWire.requestBody(request(.disabled), configuration: configuration, appID: "app")
        #expect(!String(decoding: body, as: UTF8.self).contains("weather"), "none: the tools are not sent")
    }
}

/// The failover-mid-call test with a real cloud stream: the OpenAI fake cuts the connection in
/// the middle of a call's arguments, and the router restarts the call on the next provider.
@Suite struct ToolCallFailoverTests {
    /// A stand-in for the on-device model that answers with one whole call.
    struct LocalToolModel: LanguageModelProvider {
        let id = "local"
        var availability: ProviderAvailability { get async { .available } }

        func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
            AsyncThrowingStream { continuation in
                continuation.yield(.servedBy(id))
                continuation.yield(.toolCall(.started(index: 0, id: "call_local", name: "weather")))
                continuation.yield(.toolCall(.arguments(index: 0, fragment: #"{"city":"#)))
                continuation.yield(.toolCall(.arguments(index: 0, fragment: #""Rome"}"#)))
                continuation.yield(.toolCall(.finished(index: 0)))
                continuation.yield(.finished(.toolCalls))
                continuation.finish()
            }
        }
    }

    @Test func cloudStreamCutMidCallRestartsItOnTheFallback() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: ToolCallingWireTests.key)
        let cloud = OpenAICompatibleProvider(
            .init(
                id: "openai", baseURL: fake.baseURL, apiKey: CloudSecret(ToolCallingWireTests.key), requiresAPIKey: true,
                model: "gpt-test", timeouts: testTimeouts, retry: .none))
        let request = ChatRequest(
            messages: [.user("Weather in Rome? #drop-mid-call")],
            options: ChatOptions(tools: [ToolCallingWireTests.weather], toolChoice: .required))

        let alone = await collect(cloud.stream(request))
        #expect(alone.providerError?.code == .network, "the fake cuts the stream")
        #expect(alone.toolSteps.contains(.started(index: 0, id: "call_fake0", name: "weather")), "the cut comes mid-call")
        #expect(!alone.toolSteps.contains(.finished(index: 0)))

        let result = await collect(FallbackRouter(providers: [cloud, LocalToolModel()]).stream(request))
        await fake.stop()
        #expect(result.error == nil)
        #expect(result.switches.map { "\($0.from)>\($0.to)" } == ["openai>local"])
        #expect(!result.toolSteps.contains { if case .started(_, "call_fake0", _) = $0 { true } else { false } }, "half a call leaked")
        #expect(result.toolCalls == [ToolCall(id: "call_local", name: "weather", arguments: #"{"city":"Rome"}"#)])
        #expect(result.finish == .toolCalls)
    }
}
