import Foundation
import HearthFakeServers
import HearthProviders
import Testing

@testable import HearthCloud

/// The fallback router with the real HTTP providers against fake servers: the cloud is down,
/// rate-limited, or dies mid-answer, and the next provider takes over.
@Suite struct RouterIntegrationTests {
    let question = ChatRequest(messages: [.system("Be brief."), .user("What is the capital of France?")])

    func openAI(_ baseURL: String, retry: RetryPolicy = quickRetry) -> OpenAICompatibleProvider {
        OpenAICompatibleProvider(
            .init(
                id: "openai", baseURL: baseURL, apiKey: CloudSecret("sk-router-test-key"), requiresAPIKey: true,
                model: "gpt-test", timeouts: testTimeouts, retry: retry))
    }

    @Test func cloudDownLocalAnswers() async throws {
        let port = try await closedPort()
        let local = RecordingProvider { _ in "Paris." }
        let router = FallbackRouter(providers: [openAI("http://127.0.0.1:\(port)/v1"), local])
        let result = await collect(router.stream(question))
        #expect(result.error == nil)
        #expect(result.text == "Paris.")
        #expect(result.switches.map { "\($0.from)>\($0.to)" } == ["openai>local"])
        #expect(result.switches.first?.reason.code == .network)
        #expect(result.servedBy == ["openai", "local"])
        #expect(local.lastRequest?.continuation == nil)
    }

    @Test func rateLimitedCloudFailsOverWithoutWaiting() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(429, "Too Many Requests", headers: [("Retry-After", "300")], body: "{}")
            return .close
        }
        let local = RecordingProvider { _ in "Paris." }
        let clock = ContinuousClock()
        let start = clock.now
        let result = await collect(FallbackRouter(providers: [openAI(server.baseURL), local]).stream(question))
        await server.stop()
        #expect(result.text == "Paris.")
        #expect(result.switches.first?.reason.code == .rateLimited(retryAfter: 300))
        #expect(clock.now - start < .seconds(60), "no wait for the 300 s Retry-After")
    }

    @Test func cloudDiesMidAnswerAndLocalFinishesIt() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            let wire = openAIStream(["The capital", " of France", " is"])
            let cut = try #require(wire.range(of: " is\"")?.lowerBound)
            try await out.stream(split(String(wire[..<cut]), every: 40))
            return .close  // the connection drops in the middle of the third event
        }
        let local = RecordingProvider { request in
            request.continuation == "The capital of France" ? " is Paris." : "[wrong continuation: \(request.continuation ?? "nil")]"
        }
        let router = FallbackRouter(providers: [openAI(server.baseURL), local])
        let result = await collect(router.stream(question))
        await server.stop()

        #expect(result.error == nil)
        #expect(result.text == "The capital of France is Paris.")
        #expect(result.servedBy == ["openai", "local"])
        let switched = try #require(result.switches.first)
        #expect(switched.from == "openai" && switched.to == "local" && switched.reason.code == .network)
        #expect(local.lastRequest?.messages == question.messages)
        #expect(server.requests.count == 1)
    }

    @Test func openAIDiesMidAnswerAndAnthropicContinuesIt() async throws {
        let openAIServer = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(
                #"data: {"choices":[{"index":0,"delta":{"content":"The capital of France "}}]}"# + "\n\n")
            return .close
        }
        let anthropicServer = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(AnthropicProviderTests.events([" is Paris."]))
            try await out.end()
            return .close
        }
        let anthropic = AnthropicProvider(
            .init(
                baseURL: anthropicServer.baseURL, apiKey: CloudSecret("sk-ant-router-test"), model: "claude-test",
                timeouts: testTimeouts, retry: quickRetry))
        let router = FallbackRouter(providers: [openAI(openAIServer.baseURL), anthropic])
        let result = await collect(router.stream(question))
        await openAIServer.stop()
        await anthropicServer.stop()

        #expect(result.error == nil)
        #expect(result.text == "The capital of France is Paris.")
        #expect(result.switches.map { "\($0.from)>\($0.to)" } == ["openai>anthropic"])
        let messages = try #require(anthropicServer.requests.first?.json?["messages"] as? [[String: String]])
        #expect(
            messages == [
                ["role": "user", "content": "What is the capital of France?"],
                ["role": "assistant", "content": "The capital of France"],
            ])
    }

    @Test func unauthorizedCloudIsNotSilentlyReplaced() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(401, "Unauthorized", body: #"{"error":{"message":"bad key"}}"#)
            return .close
        }
        let local = RecordingProvider { _ in "unused" }
        let result = await collect(FallbackRouter(providers: [openAI(server.baseURL), local]).stream(question))
        await server.stop()
        #expect(result.providerError?.code == .unauthorized)
        #expect(local.lastRequest == nil)
    }
}
