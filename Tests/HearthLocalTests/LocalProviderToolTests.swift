import Foundation
import HearthConstraints
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// Tool calls from the local model: whatever the weights (a random-weight fixture), a forced
/// call parses and its arguments follow the tool's schema; `auto` never lets a call leak into
/// the text; `none` never calls; the streamed events reassemble into the whole reply's calls;
/// a schema the engine cannot enforce is refused naming the tool. (The real default model is
/// driven through `hearth serve` by scripts/check-tools.sh.)
@Suite struct LocalProviderToolTests {
    static let weather = ToolDefinition(
        name: "get_weather", description: "The current weather in a city.",
        parameters: #"{"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"], "additionalProperties": false}"#)
    static let time = ToolDefinition(
        name: "get_time", description: "The time in a time zone.",
        parameters: #"{"type": "object", "properties": {"zone": {"type": "string", "maxLength": 16}}, "required": ["zone"], "additionalProperties": false}"#)

    struct WeatherArguments: Decodable { var city: String; var unit: String }
    struct TimeArguments: Decodable { var zone: String }

    /// Decodes each call's arguments with the type of its tool (fails on any other tool name).
    static func checkArguments(_ calls: [ToolCall]) throws {
        for call in calls {
            switch call.name {
            case "get_weather":
                let arguments = try JSONDecoder().decode(WeatherArguments.self, from: Data(call.arguments.utf8))
                #expect(["celsius", "fahrenheit"].contains(arguments.unit) && arguments.city.count <= 20)
            case "get_time":
                _ = try JSONDecoder().decode(TimeArguments.self, from: Data(call.arguments.utf8))
            default:
                Issue.record("a call to an unknown tool \(call.name)")
            }
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func requiredCallsParseWhateverTheWeights(seed: Int) async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        let options = ChatOptions(
            temperature: 1.0, maxTokens: 300, seed: seed, tools: [Self.weather, Self.time], toolChoice: .required)
        let reply = try await provider.complete(ChatRequest(messages: [.user("Weather in Paris?")], options: options))
        #expect(!reply.toolCalls.isEmpty)
        #expect(reply.text.isEmpty)
        #expect(Set(reply.toolCalls.map(\.id)).count == reply.toolCalls.count)
        // Random weights may keep adding parallel calls until the token limit cuts the last
        // one; every call before it is whole.
        #expect(reply.finishReason == .toolCalls || reply.finishReason == .length)
        try Self.checkArguments(reply.finishReason == .length ? reply.toolCalls.dropLast() : reply.toolCalls)
    }

    @Test func namedChoiceCallsThatToolOnce() async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        for seed in 1...3 {
            let options = ChatOptions(
                temperature: 1.0, maxTokens: 300, seed: seed, tools: [Self.weather, Self.time], toolChoice: .named("get_time"))
            let reply = try await provider.complete(ChatRequest(messages: [.user("What time is it?")], options: options))
            #expect(reply.toolCalls.map(\.name) == ["get_time"])
            try Self.checkArguments(reply.toolCalls)
        }
    }

    @Test func parallelCallsOffGivesOneCall() async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        for seed in 1...4 {
            let options = ChatOptions(
                temperature: 1.0, maxTokens: 300, seed: seed, tools: [Self.weather, Self.time], toolChoice: .required,
                parallelToolCalls: false)
            let reply = try await provider.complete(ChatRequest(messages: [.user("Weather and time?")], options: options))
            #expect(reply.toolCalls.count == 1)
        }
    }

    @Test func streamedEventsReassembleIntoTheCalls() async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        let options = ChatOptions(
            temperature: 1.0, maxTokens: 300, seed: 7, tools: [Self.weather, Self.time], toolChoice: .required)
        var steps: [ToolCallEvent] = []
        var text = ""
        var finish: HearthProviders.FinishReason?
        for try await event in provider.stream(ChatRequest(messages: [.user("Weather?")], options: options)) {
            switch event {
            case .toolCall(let step): steps.append(step)
            case .textDelta(let delta): text += delta
            case .finished(let reason): finish = reason
            default: break
            }
        }
        #expect(text.isEmpty && finish == .toolCalls)
        // started, then fragments, then finished, for each index in turn.
        var collector = ToolCallCollector()
        var expected = 0
        var open = false
        for step in steps {
            switch step {
            case .started(let index, _, _):
                #expect(!open && index == expected)
                open = true
            case .arguments(let index, _): #expect(open && index == expected)
            case .finished(let index):
                #expect(open && index == expected)
                open = false
                expected += 1
            }
            collector.add(step)
        }
        #expect(!open && expected >= 1)
        try Self.checkArguments(collector.calls)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func autoNeverLeaksACallIntoText(seed: Int) async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        let options = ChatOptions(temperature: 1.0, maxTokens: 60, seed: seed, tools: [Self.weather], toolChoice: .auto)
        let reply = try await provider.complete(ChatRequest(messages: [.user("Weather?")], options: options))
        #expect(!reply.text.hasPrefix("<tool_call>") && !reply.text.contains("</tool_call>"))
        if reply.toolCalls.isEmpty {
            #expect(reply.finishReason != .toolCalls)
        } else {
            #expect(reply.text.isEmpty)
            if reply.finishReason == .toolCalls { try Self.checkArguments(reply.toolCalls) }
        }
    }

    @Test func noneNeverCalls() async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        for seed in 1...4 {
            let options = ChatOptions(temperature: 1.0, maxTokens: 30, seed: seed, tools: [Self.weather], toolChoice: .disabled)
            let reply = try await provider.complete(ChatRequest(messages: [.user("Weather?")], options: options))
            #expect(reply.toolCalls.isEmpty && reply.finishReason != .toolCalls)
            #expect(!reply.text.hasPrefix("<tool_call>"))
        }
    }

    @Test func anUnenforceableSchemaIsRefusedNamingTheTool() async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        let bad = ToolDefinition(name: "bad", parameters: #"{"type": "object", "properties": {"x": {"type": "string", "format": "no-such-format"}}}"#)
        let options = ChatOptions(tools: [Self.weather, bad], toolChoice: .required)
        do {
            _ = try await provider.complete(ChatRequest(messages: [.user("hi")], options: options))
            Issue.record("an unenforceable schema was accepted")
        } catch let error as ProviderError {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("tools[1].parameters"))
        }
        // The provider still serves.
        let reply = try await provider.complete(
            ChatRequest(messages: [.user("hi")], options: ChatOptions(maxTokens: 300, tools: [Self.weather], toolChoice: .required)))
        #expect(reply.toolCalls.count >= 1)
    }

    @Test func invalidToolRequestsAreRefusedBeforeGenerating() async throws {
        let provider = try LocalProviderTests.provider(context: 1024)
        let cases: [(ChatOptions, [ChatMessage], String)] = [
            (ChatOptions(tools: [Self.weather, Self.weather]), [.user("x")], "tools[1].name"),
            (ChatOptions(tools: [Self.weather], toolChoice: .named("nope")), [.user("x")], "tool_choice"),
            (ChatOptions(tools: [ToolDefinition(name: "a b")]), [.user("x")], "tools[0].name"),
            (ChatOptions(tools: [ToolDefinition(name: "a", parameters: "[1]")]), [.user("x")], "tools[0].parameters"),
        ]
        for (options, messages, field) in cases {
            do {
                _ = try await provider.complete(ChatRequest(messages: messages, options: options))
                Issue.record("accepted a request with a bad \(field)")
            } catch let error as ProviderError {
                #expect(error.code == .invalidRequest && error.message.contains(field), "\(error)")
            }
        }
    }
}
