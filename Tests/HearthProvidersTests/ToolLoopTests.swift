import HearthProviders
import Synchronization
import Testing

/// `respond(to:tools:)`: runs the calls a reply makes with typed arguments, sends their results
/// back, and stops at the first reply without calls; a forced choice applies to the first
/// round only; arguments that do not decode go back to the model as an error; a tool that
/// throws, or a model that never stops calling, ends the loop with `ToolCallError`.
@Suite struct ToolLoopTests {
    /// A provider that answers each round from a closure over the request (tool-call events or text).
    final class RoundProvider: LanguageModelProvider {
        let id = "rounds"
        let requests = Mutex<[ChatRequest]>([])
        let answer: @Sendable (ChatRequest, Int) -> [ChatEvent]
        init(answer: @escaping @Sendable (ChatRequest, Int) -> [ChatEvent]) { self.answer = answer }
        var availability: ProviderAvailability { get async { .available } }

        func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
            let round = requests.withLock { $0.append(request); return $0.count - 1 }
            let events = answer(request, round)
            return AsyncThrowingStream { continuation in
                for event in events { continuation.yield(event) }
                continuation.finish()
            }
        }
    }

    static func call(_ index: Int, _ id: String, _ name: String, _ arguments: String) -> [ChatEvent] {
        [.toolCall(.started(index: index, id: id, name: name)), .toolCall(.arguments(index: index, fragment: String(arguments.prefix(3)))),
         .toolCall(.arguments(index: index, fragment: String(arguments.dropFirst(3)))), .toolCall(.finished(index: index))]
    }

    final class Weather: FunctionTool {
        struct Arguments: Decodable, Sendable { var city: String }
        let name = "get_weather"
        let description = "The weather in a city."
        let parameters = #"{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}"#
        let seen = Mutex<[String]>([])
        func call(arguments: Arguments) async throws -> String {
            seen.withLock { $0.append(arguments.city) }
            return "18 C in \(arguments.city)"
        }
    }

    struct Broken: FunctionTool {
        struct Arguments: Decodable, Sendable {}
        struct Failure: Error {}
        let name = "broken"
        let description = "Always fails."
        let parameters = ToolDefinition.noParameters
        func call(arguments: Arguments) async throws -> JSONText.Value { throw Failure() }
    }

    @Test func runsTheCallsThenReturnsTheAnswer() async throws {
        let provider = RoundProvider { request, round in
            if round == 0 {
                return Self.call(0, "c1", "get_weather", #"{"city": "Paris"}"#) + Self.call(1, "c2", "get_weather", #"{"city": "Rome"}"#)
                    + [.finished(.toolCalls)]
            }
            let results = request.messages.filter { $0.role == .tool }.map(\.content).joined(separator: "; ")
            return [.textDelta("It is: " + results), .finished(.stop)]
        }
        let weather = Weather()
        let conversation = try await provider.respond(
            to: [.user("Weather in Paris and Rome?")], tools: [weather], options: ChatOptions(toolChoice: .required))
        #expect(weather.seen.withLock { $0 } == ["Paris", "Rome"])
        #expect(conversation.response.text == "It is: 18 C in Paris; 18 C in Rome")
        #expect(conversation.calls.map(\.call.id) == ["c1", "c2"])
        #expect(conversation.messages.map(\.role) == [.user, .assistant, .tool, .tool, .assistant])
        #expect(conversation.messages[2].toolCallID == "c1" && conversation.messages[3].toolCallID == "c2")
        let requests = provider.requests.withLock { $0 }
        #expect(requests.count == 2)
        #expect(requests[0].options.tools.map(\.name) == ["get_weather"])
        #expect(requests[0].options.toolChoice == .required && requests[1].options.toolChoice == .auto)
        #expect(requests[1].messages[1].toolCalls.map(\.arguments) == [#"{"city": "Paris"}"#, #"{"city": "Rome"}"#])
    }

    @Test func argumentsThatDoNotDecodeGoBackToTheModel() async throws {
        let provider = RoundProvider { request, round in
            round == 0
                ? Self.call(0, "c1", "get_weather", #"{"town": "Paris"}"#) + [.finished(.toolCalls)]
                : [.textDelta(request.messages.last?.content ?? ""), .finished(.stop)]
        }
        let conversation = try await provider.respond(to: [.user("Weather?")], tools: [Weather()])
        #expect(conversation.response.text.hasPrefix("Error: the arguments do not fit"))
    }

    @Test func aFailingToolOrEndlessCallsEndTheLoop() async throws {
        let failing = RoundProvider { _, _ in Self.call(0, "c1", "broken", "{}") + [.finished(.toolCalls)] }
        await #expect { try await failing.respond(to: [.user("x")], tools: [Broken()]) } throws: { error in
            (error as? ToolCallError)?.kind == .toolFailed && (error as? ToolCallError)?.tool == "broken"
        }
        let endless = RoundProvider { _, round in Self.call(0, "c\(round)", "get_weather", #"{"city": "X"}"#) + [.finished(.toolCalls)] }
        await #expect { try await endless.respond(to: [.user("x")], tools: [Weather()], maxRounds: 3) } throws: { error in
            (error as? ToolCallError)?.kind == .tooManyRounds
        }
        #expect(endless.requests.withLock { $0.count } == 3)
    }

    @Test func duplicateToolNamesAreRefusedBeforeAnyRound() async throws {
        let provider = RoundProvider { _, _ in [.finished(.stop)] }
        await #expect { try await provider.respond(to: [.user("x")], tools: [Weather(), Weather()]) } throws: { error in
            (error as? ProviderError)?.code == .invalidRequest
        }
        #expect(provider.requests.withLock { $0.isEmpty })
    }
}
