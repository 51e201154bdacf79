import HearthProviders
import Testing

/// Failover in the middle of a tool call: the consumer never receives half a call, nor a call twice.
@Suite struct FallbackRouterToolTests {
    let request = ChatRequest(
        messages: [.user("Weather in Paris and in Rome?")],
        options: ChatOptions(
            tools: [ToolDefinition(name: "weather", parameters: #"{"type":"object","properties":{"city":{"type":"string"}}}"#)]))

    /// A whole call as a provider streams it, arguments in two pieces.
    static func call(_ index: Int, id: String, city: String) -> [ScriptedProvider.Step] {
        [
            .tool(.started(index: index, id: id, name: "weather")), .tool(.arguments(index: index, fragment: #"{"city":"#)),
            .tool(.arguments(index: index, fragment: #""\#(city)"}"#)), .tool(.finished(index: index)),
        ]
    }

    /// The local model's answer: two calls.
    static func local() -> ScriptedProvider {
        ScriptedProvider("local") { _ in
            call(0, id: "call_local_0", city: "Paris") + call(1, id: "call_local_1", city: "Rome") + [.finish(.toolCalls)]
        }
    }

    func toolSteps(_ result: Collected) -> [String] {
        result.trace.filter { $0.hasPrefix("tool:") }
    }

    @Test func failureMidCallRestartsTheCallOnTheNextProvider() async throws {
        let cloud = ScriptedProvider("cloud") { _ in
            [.text("Let me check."), .tool(.started(index: 0, id: "call_cloud_0", name: "weather")),
             .tool(.arguments(index: 0, fragment: #"{"ci"#)), .fail(failure(.network, "cloud"))]
        }
        let local = Self.local()
        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(request))
        #expect(result.error == nil)
        #expect(!result.trace.contains { $0.contains("call_cloud_0") }, "half a call reached the consumer: \(result.trace)")
        #expect(result.trace.first == "served:cloud" && result.trace.contains("switch:cloud>local"))
        #expect(result.text == "Let me check.")
        #expect(local.lastRequest?.continuation == "Let me check.")
        #expect(local.lastRequest?.options.tools == request.options.tools, "the fallback gets the tools")
        var collector = ToolCallCollector()
        for case .toolCall(let step) in result.events { collector.add(step) }
        #expect(
            collector.calls == [
                ToolCall(id: "call_local_0", name: "weather", arguments: #"{"city":"Paris"}"#),
                ToolCall(id: "call_local_1", name: "weather", arguments: #"{"city":"Rome"}"#),
            ])
        #expect(collector.finished == [0, 1] && !collector.hasOpenCall)
        #expect(result.finish == .toolCalls)
        let response = try await FallbackRouter(providers: [cloud, Self.local()]).complete(request)
        #expect(response.toolCalls.map(\.id) == ["call_local_0", "call_local_1"] && response.finishReason == .toolCalls)
    }

    @Test func failureAfterAWholeCallDoesNotRepeatIt() async {
        // The cloud finished its first call and failed in its second: neither reaches the
        // consumer, so the fallback's two calls are the only ones (no call runs twice).
        let cloud = ScriptedProvider("cloud") { _ in
            Self.call(0, id: "call_cloud_0", city: "Paris")
                + [.tool(.started(index: 1, id: "call_cloud_1", name: "weather")), .fail(failure(.timeout, "cloud"))]
        }
        let local = Self.local()
        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(request))
        #expect(result.error == nil)
        #expect(!result.trace.contains { $0.contains("call_cloud") }, "\(result.trace)")
        #expect(toolSteps(result).count == 8)
        #expect(local.lastRequest?.continuation == nil, "no text was shown, so nothing is continued")
    }

    @Test func callsOfACompleteReplyArriveWholeAndBeforeUsageAndFinish() async {
        let usage = Usage(promptTokens: 10, completionTokens: 9)
        let cloud = ScriptedProvider("cloud") { _ in
            [.text("Checking.")] + Self.call(0, id: "call_a", city: "Paris") + [.usage(usage), .finish(.toolCalls)]
        }
        let result = await collect(FallbackRouter(providers: [cloud, Self.local()]).stream(request))
        #expect(result.error == nil)
        #expect(
            result.trace == [
                "served:cloud", "text:Checking.", #"tool:started(index: 0, id: "call_a", name: "weather")"#,
                #"tool:arguments(index: 0, fragment: "{\"city\":")"#, #"tool:arguments(index: 0, fragment: "\"Paris\"}")"#,
                "tool:finished(index: 0)", "usage", "finish:tool_calls",
            ])
    }

    @Test func aNonFailoverErrorMidCallIsThrownWithoutTheHalfCall() async {
        let cloud = ScriptedProvider("cloud") { _ in
            [.tool(.started(index: 0, id: "call_x", name: "weather")), .fail(failure(.invalidRequest, "cloud"))]
        }
        let result = await collect(FallbackRouter(providers: [cloud, Self.local()]).stream(request))
        #expect(result.providerError?.code == .invalidRequest)
        #expect(toolSteps(result).isEmpty)
    }
}
