import Foundation
import HearthProviders
import Synchronization
import Testing

/// `ChatSession`: a transcript over any provider, tools run by the session (streamed and whole),
/// a turn entering the transcript only when it completes, one prompt at a time, a transcript
/// that survives JSON, and a saved state whose snapshot goes back into a provider that keeps one.
@Suite struct ChatSessionTests {
    typealias RoundProvider = ToolLoopTests.RoundProvider

    /// A provider answering "Hello there." to anything, and echoing how many messages it got.
    static func echo() -> RoundProvider {
        RoundProvider { request, _ in
            [.servedBy("rounds"), .textDelta("Hello"), .textDelta(" there (\(request.messages.count))."), .finished(.stop)]
        }
    }

    @Test func streamsARunsToolsAndKeepsTheTurn() async throws {
        let weather = ToolLoopTests.Weather()
        let provider = RoundProvider { request, round in
            if round == 0 { return [.textDelta("Let me look. ")] + ToolLoopTests.call(0, "c1", "get_weather", #"{"city": "Paris"}"#) + [.finished(.toolCalls)] }
            let result = request.messages.last { $0.role == .tool }?.content ?? "none"
            return [.textDelta("It is "), .textDelta(result), .finished(.stop)]
        }
        let session = ChatSession(provider: provider, instructions: "Be brief.", tools: [weather])
        var deltas: [String] = []
        var ran: [ChatSession.ToolCallRecord] = []
        var completed: ChatSession.Response?
        for try await update in session.streamResponse(to: "Weather in Paris?") {
            #expect(completed == nil, "completed is the last update")
            switch update {
            case .textDelta(let text): deltas.append(text)
            case .toolCalled(let record): ran.append(record)
            case .completed(let response): completed = response
            default: break
            }
        }
        #expect(weather.seen.withLock { $0 } == ["Paris"])
        #expect(ran.map(\.call.name) == ["get_weather"] && ran.first?.result == "18 C in Paris")
        #expect(deltas == ["Let me look. ", "It is ", "18 C in Paris"])
        let response = try #require(completed)
        #expect(response.text == "It is 18 C in Paris" && response.toolCalls == ran)
        // The second request carried the instructions, the prompt, the call and its result.
        let second = try #require(provider.requests.withLock { $0.last })
        #expect(second.messages.map(\.role) == [.system, .user, .assistant, .tool])
        #expect(second.options.tools.map(\.name) == ["get_weather"])
        let transcript = session.transcript
        #expect(transcript.instructions == "Be brief.")
        #expect(transcript.messages.map(\.role) == [.user, .assistant, .tool, .assistant])
        #expect(transcript.messages.last?.content == "It is 18 C in Paris")
        #expect(response.messages == transcript.messages)
    }

    @Test func respondRunsTheSameLoopAndToolErrorsGoBackToTheModel() async throws {
        let provider = RoundProvider { request, round in
            switch round {
            case 0: return ToolLoopTests.call(0, "c1", "no_such_tool", "{}") + [.finished(.toolCalls)]
            case 1: return ToolLoopTests.call(0, "c2", "get_weather", #"{"town": 3}"#) + [.finished(.toolCalls)]
            default: return [.textDelta(request.messages.filter { $0.role == .tool }.map(\.content).joined(separator: " | ")), .finished(.stop)]
            }
        }
        let session = ChatSession(provider: provider, tools: [ToolLoopTests.Weather()])
        let response = try await session.respond(to: "Weather?")
        #expect(response.toolCalls.count == 2)
        #expect(response.text.contains("there is no tool named no_such_tool") && response.text.contains("Call get_weather again"))
    }

    @Test func repeatedOrMissingCallIDsGetFreshOnesSoTheConversationStaysValid() async throws {
        // A provider that numbers its calls per reply (the same id every turn) or sends none.
        let provider = RoundProvider { request, _ in
            guard request.messages.last?.role == .user else { return [.textDelta("Done."), .finished(.stop)] }
            return ToolLoopTests.call(0, "call_0", "get_weather", #"{"city": "Oslo"}"#) + ToolLoopTests.call(1, "", "get_weather", #"{"city": "Bergen"}"#)
                + [.finished(.toolCalls)]
        }
        let session = ChatSession(provider: provider, tools: [ToolLoopTests.Weather()])
        _ = try await session.respond(to: "one")
        let second = try await session.respond(to: "two")
        let ids = session.transcript.messages.flatMap { $0.toolCalls.map(\.id) }
        #expect(ids.count == 4 && Set(ids).count == 4 && !ids.contains(""), "\(ids)")
        #expect(ids.first == "call_0", "a first, unique id is kept")
        #expect(second.toolCalls.map(\.call.id) == Array(ids.suffix(2)))
        // Each result answers its own call, and the conversation validates as the APIs check it.
        let results = session.transcript.messages.filter { $0.role == .tool }.compactMap(\.toolCallID)
        #expect(results == ids)
        #expect(throws: Never.self) { try session.transcript.messages.validateToolResults() }
    }

    @Test func aModelThatNeverStopsCallingEndsTheTurnAndLeavesTheTranscript() async throws {
        let provider = RoundProvider { _, round in ToolLoopTests.call(0, "c\(round)", "get_weather", #"{"city": "Rome"}"#) + [.finished(.toolCalls)] }
        let session = ChatSession(provider: provider, tools: [ToolLoopTests.Weather()], maxToolRounds: 3)
        let error = await #expect(throws: ToolCallError.self) { try await session.respond(to: "Weather?") }
        #expect(error?.kind == .tooManyRounds && provider.requests.withLock { $0.count } == 3)
        #expect(session.transcript.messages.isEmpty && !session.isResponding)
    }

    @Test func aFailedOrCancelledTurnLeavesTheTranscriptAsItWas() async throws {
        let failing = ScriptedProvider("cloud") { request in
            request.messages.count > 2 ? [.text("Partial"), .fail(ProviderError(.network, provider: "cloud", message: "The connection was reset."))]
                : [.text("Hi."), .finish(.stop)]
        }
        let session = ChatSession(provider: failing)
        _ = try await session.respond(to: "one")
        let error = await #expect(throws: ProviderError.self) { try await session.respond(to: "two") }
        #expect(error?.code == .network)
        #expect(session.transcript.messages.map(\.content) == ["one", "Hi."])

        let hanging = ScriptedProvider("slow") { _ in [.text("Start"), .hang] }
        let slow = ChatSession(provider: hanging)
        var sawText = false
        for try await update in slow.streamResponse(to: "go") {
            if case .textDelta = update {
                sawText = true
                break  // dropping the stream cancels the turn
            }
        }
        #expect(sawText)
        for _ in 0..<200 where slow.isResponding { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!slow.isResponding && slow.transcript.messages.isEmpty)
    }

    @Test func onePromptAtATime() async throws {
        let hanging = ScriptedProvider("slow") { _ in [.text("Start"), .hang] }
        let session = ChatSession(provider: hanging)
        let first = Task { try await session.respond(to: "first") }
        for _ in 0..<200 where !session.isResponding { try await Task.sleep(for: .milliseconds(5)) }
        let error = await #expect(throws: ProviderError.self) { try await session.respond(to: "second") }
        #expect(error?.code == .invalidRequest && error?.localizedDescription.contains("already answering") == true)
        first.cancel()
        _ = await first.result
    }

    @Test func aTranscriptSurvivesJSONAndTheSessionContinuesIt() async throws {
        let provider = Self.echo()
        var options = ChatOptions()
        options.temperature = 0.2
        let session = ChatSession(provider: provider, instructions: "Be kind.", options: options)
        _ = try await session.respond(to: "Hi")
        let data = try JSONEncoder().encode(session.transcript)
        let decoded = try JSONDecoder().decode(ChatSession.Transcript.self, from: data)
        #expect(decoded == session.transcript)

        let resumed = ChatSession(provider: provider, transcript: decoded)
        let reply = try await resumed.respond(to: "And again?")
        #expect(reply.text == "Hello there (4).")  // system, user, assistant, user
        let sent = try #require(provider.requests.withLock { $0.last })
        #expect(sent.messages.map(\.content) == ["Be kind.", "Hi", "Hello there (2).", "And again?"])
        #expect(sent.options.temperature == 0.2)
        #expect(!resumed.restoredSnapshot && resumed.snapshotProblem == nil)
    }

    /// A provider that keeps conversation state, as the local model does.
    final class KeepingProvider: ConversationSnapshotting {
        let id = "keeper"
        let restored = Mutex<[Data]>([])
        let refuses: Bool
        init(refuses: Bool = false) { self.refuses = refuses }
        var availability: ProviderAvailability { get async { .available } }
        func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
            AsyncThrowingStream { continuation in
                continuation.yield(.textDelta("ok"))
                continuation.finish()
            }
        }
        func snapshot() async throws -> Data { Data("kv-of-the-conversation".utf8) }
        func restore(_ snapshot: Data) async throws {
            if refuses { throw ProviderError(.invalidRequest, provider: id, message: "The snapshot is of another model.") }
            restored.withLock { $0.append(snapshot) }
        }
    }

    @Test func savedStateCarriesTheSnapshotBackIntoTheProvider() async throws {
        let keeper = KeepingProvider()
        let session = ChatSession(provider: keeper, instructions: "Hi.")
        let empty = try await session.savedState()
        #expect(empty.snapshot == nil, "nothing to snapshot before a turn")
        _ = try await session.respond(to: "one")
        let saved = try await session.savedState()
        #expect(saved.snapshot == Data("kv-of-the-conversation".utf8) && saved.provider == "keeper")

        // Through JSON, as an app stores it.
        let stored = try JSONDecoder().decode(ChatSession.SavedState.self, from: try JSONEncoder().encode(saved))
        let other = KeepingProvider()
        let restored = await ChatSession.restore(stored, provider: other)
        #expect(restored.restoredSnapshot && restored.snapshotProblem == nil)
        #expect(other.restored.withLock { $0 } == [Data("kv-of-the-conversation".utf8)])
        #expect(restored.transcript == session.transcript)

        let refused = await ChatSession.restore(stored, provider: KeepingProvider(refuses: true))
        #expect(!refused.restoredSnapshot && refused.snapshotProblem == "The snapshot is of another model.")
        let cloud = await ChatSession.restore(stored, provider: Self.echo())
        #expect(!cloud.restoredSnapshot && cloud.snapshotProblem?.contains("keeps no conversation state") == true)
        #expect(try await cloud.respond(to: "two").text == "Hello there (4).")
    }

    @Test func theSameSessionRunsOverTheFallbackRouter() async throws {
        let cloud = ScriptedProvider("cloud") { _ in [.fail(ProviderError(.network, provider: "cloud", message: "The network is down."))] }
        let local = ScriptedProvider("local", answers: "Offline answer.")
        let session = ChatSession(provider: FallbackRouter(providers: [cloud, local]), instructions: "Be brief.")
        var served: [String] = []
        var completed: ChatSession.Response?
        for try await update in session.streamResponse(to: "Hi") {
            if case .servedBy(let id) = update { served.append(id) }
            if case .completed(let response) = update { completed = response }
        }
        #expect(completed?.text == "Offline answer." && completed?.reply.provider == "local")
        #expect(served.last == "local")
        #expect(session.transcript.messages.map(\.content) == ["Hi", "Offline answer."])
    }
}

/// `ProviderError` and the other errors apps meet render as sentences with a remedy in a
/// `LocalizedError` alert, never as "The operation couldn't be completed", and never with the
/// underlying error's text (which may quote a server's reply).
@Suite struct ProviderErrorLocalizationTests {
    static let codes: [ProviderError.Code] = [
        .unauthorized, .rateLimited(retryAfter: 2), .rateLimited(retryAfter: nil), .contextLengthExceeded(tokens: 5000, limit: 4096),
        .invalidRequest, .server(status: 503), .network, .timeout, .cancelled, .decoding, .modelUnavailable,
        .unsupported(feature: "response_format regex"),
    ]

    struct Leaky: Error, CustomStringConvertible { var description: String { "server said: key sk-live-SECRET1234 is invalid" } }

    @Test func everyCaseRendersAReadableSecretFreeMessage() {
        var suggestions: Set<String> = []
        for code in Self.codes {
            let error = ProviderError(code, provider: "openai", message: "The provider said no (\(code)).", underlying: Leaky())
            let shown = error.localizedDescription
            #expect(shown == "The provider said no (\(code)).")
            #expect(!shown.contains("couldn’t be completed") && !shown.contains("couldn't be completed") && !shown.contains("SECRET"))
            let suggestion = error.recoverySuggestion ?? ""
            #expect(suggestion.count > 20 && !suggestion.contains("SECRET"), "\(code)")
            suggestions.insert(suggestion)
            // Without a message, a sentence for the code.
            let bare = ProviderError(code, provider: "openai", message: " ", underlying: Leaky())
            #expect(bare.localizedDescription.count > 10 && !bare.localizedDescription.contains("SECRET") && bare.localizedDescription.hasSuffix("."))
            #expect(!bare.localizedDescription.contains("couldn"))
        }
        #expect(suggestions.count == Self.codes.count, "each case has its own remedy")
        #expect(ProviderError(.rateLimited(retryAfter: 2), provider: "p", message: "m").recoverySuggestion == "Wait 2 seconds and try again, or use another provider.")
    }

    @Test func toolAndOptionErrorsAreLocalized() {
        let tool = ToolCallError(.toolFailed, tool: "get_weather", message: "the service is down")
        #expect(tool.localizedDescription == "get_weather: toolFailed: the service is down" && tool.recoverySuggestion?.isEmpty == false)
        let option = InvalidGenerationOption(field: "temperature", message: "temperature must be between 0 and 2, got 5")
        #expect(option.localizedDescription == "temperature must be between 0 and 2, got 5")
        #expect(option.recoverySuggestion?.contains("temperature") == true)
    }
}
