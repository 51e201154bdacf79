import Foundation
import HearthFakeServers
import HearthEngine
import HearthLocal
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthCloud

/// The issue's end-to-end case: the cloud provider (real HTTP against a fake server) dies in
/// the middle of an answer, and Hearth's own engine (LocalProvider on a fixture model) finishes it.
@Suite struct LocalFallbackTests {
    @Test func cloudDiesMidAnswerAndTheLocalModelFinishesIt() async throws {
        let partial = "The capital of France"
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(#"data: {"choices":[{"index":0,"delta":{"content":"The capital"}}]}"# + "\n\n")
            try await out.chunk(#"data: {"choices":[{"index":0,"delta":{"content":" of France"}}]}"# + "\n\n")
            return .close  // the connection drops: no finish_reason, no [DONE]
        }
        let cloud = OpenAICompatibleProvider(
            .init(
                id: "openai", baseURL: server.baseURL, apiKey: CloudSecret("sk-e2e-test-key"), requiresAPIKey: true,
                model: "gpt-test", timeouts: testTimeouts, retry: quickRetry))
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let local = try LocalProvider(model: model, context: 256, threads: 2, batch: 8)
        let request = ChatRequest(
            messages: [.system("Be brief."), .user("What is the capital of France?")],
            options: ChatOptions(temperature: 0, maxTokens: 6))

        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(request))
        await server.stop()

        #expect(result.error == nil)
        #expect(result.servedBy == ["openai", "local"])
        #expect(result.switches.map { "\($0.from)>\($0.to)" } == ["openai>local"])
        #expect(result.switches.first?.reason.code == .network)
        #expect(result.finish != nil)
        // What the consumer got is the cloud's partial text followed by exactly what the local
        // model produces when asked to continue that partial text (greedy, so reproducible).
        // The client may see the connection drop before the second delta (the server sends
        // it and closes at once), so the cloud's part is whatever arrived before the switch.
        var cloudPart = ""
        for event in result.events {
            if case .switchedProvider = event { break }
            if case .textDelta(let delta) = event { cloudPart += delta }
        }
        #expect(!cloudPart.isEmpty && partial.hasPrefix(cloudPart))
        var continued = request
        continued.continuation = cloudPart
        let localPart = try await local.complete(continued).text
        #expect(!localPart.isEmpty)
        #expect(result.text == cloudPart + localPart)
    }
}
