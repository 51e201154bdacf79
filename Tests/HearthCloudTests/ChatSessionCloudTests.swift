import Foundation
import HearthFakeServers
import HearthProviders
import HearthTestSupport
import Synchronization
import Testing

@testable import HearthCloud

/// `ChatSession` over a cloud provider, against the fake OpenAI chat API (which checks every
/// message, call id and tool result on the wire as the API does): the session runs the tool the
/// model calls and sends its result back, keeps the turn, continues the transcript on the next
/// prompt, and saves and restores it (no snapshot: a cloud provider keeps no state).
@Suite struct ChatSessionCloudTests {
    static let key = "sk-session-test-4c1f"

    final class Weather: FunctionTool {
        struct Arguments: Decodable, Sendable { var city: String }
        let name = "weather"
        let description = "The forecast for a city."
        let parameters = #"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#
        let asked = Mutex<[String]>([])
        func call(arguments: Arguments) async throws -> String {
            asked.withLock { $0.append(arguments.city) }
            return "18 C in \(arguments.city)"
        }
    }

    func openAI(_ fake: FakeOpenAIChat) -> OpenAICompatibleProvider {
        OpenAICompatibleProvider(
            .init(id: "openai", baseURL: fake.baseURL, apiKey: CloudSecret(Self.key), requiresAPIKey: true, model: "gpt-test", timeouts: testTimeouts, retry: .none))
    }

    @Test func aSessionOverACloudProviderRunsToolsAndContinuesItsTranscript() async throws {
        let fake = try await FakeOpenAIChat.start(apiKey: Self.key)
        try await withCleanup({ await fake.stop() }) {
            let weather = Weather()
            let session = ChatSession(provider: openAI(fake), instructions: "Use the tools.", tools: [weather])
            var ran: [ChatSession.ToolCallRecord] = []
            var text = ""
            var completed: ChatSession.Response?
            for try await update in session.streamResponse(to: "Weather in Hangzhou?") {
                switch update {
                case .textDelta(let delta): text += delta
                case .toolCalled(let record): ran.append(record)
                case .completed(let response): completed = response
                default: break
                }
            }
            #expect(fake.violations.isEmpty, "\(fake.violations)")
            #expect(weather.asked.withLock { $0 } == ["Hangzhou 杭州"])
            #expect(ran.map(\.call.id) == ["call_fake0"] && ran.first?.result == "18 C in Hangzhou 杭州")
            #expect(text == "根据工具结果（18 C in Hangzhou 杭州），杭州今天晴 ☀️。" && completed?.text == text)
            #expect(completed?.reply.provider == "openai")
            #expect(session.transcript.messages.map(\.role) == [.user, .assistant, .tool, .assistant])

            // Saved and restored into a new session on a new provider: the history goes on the wire.
            let saved = try await session.savedState()
            #expect(saved.snapshot == nil && saved.provider == "openai")
            let restored = await ChatSession.restore(
                try JSONDecoder().decode(ChatSession.SavedState.self, from: try JSONEncoder().encode(saved)), provider: openAI(fake),
                tools: [weather])
            #expect(!restored.restoredSnapshot && restored.snapshotProblem == nil)
            let second = try await restored.respond(to: "And in Paris?")
            #expect(fake.violations.isEmpty, "\(fake.violations)")
            #expect(second.toolCalls.count == 1 && second.text.hasPrefix("根据工具结果"))
            // The fake numbers its calls per reply (call_fake0 again): the session gives the
            // repeated id a fresh one, so the conversation's ids stay unique on the wire.
            let id = try #require(second.toolCalls.first?.call.id)
            #expect(id != "call_fake0" && id.hasPrefix("call_"))
            let sent = try #require(fake.requests.last?.json?["messages"] as? [[String: Any]])
            #expect(sent.map { $0["role"] as? String } == ["system", "user", "assistant", "tool", "assistant", "user", "assistant", "tool"])
            #expect(sent.first?["content"] as? String == "Use the tools.")
            #expect(restored.transcript.messages.count == 8)
        }
    }
}
