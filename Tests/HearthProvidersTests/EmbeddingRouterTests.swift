import HearthProviders
import Synchronization
import Testing

/// A chat provider that also embeds, by script: a fixed vector per input, or a failure.
final class ScriptedEmbedder: LanguageModelProvider, EmbeddingProvider {
    let id: String
    let state: ProviderAvailability
    let outcome: @Sendable (EmbeddingRequest) throws -> [[Float]]
    let asked = Mutex(0)

    init(
        _ id: String, availability: ProviderAvailability = .available,
        outcome: @escaping @Sendable (EmbeddingRequest) throws -> [[Float]]
    ) {
        self.id = id
        self.state = availability
        self.outcome = outcome
    }

    /// Answers `[value, 0]` for every input.
    convenience init(_ id: String, value: Float, availability: ProviderAvailability = .available) {
        self.init(id, availability: availability) { request in request.inputs.map { _ in [value, 0] } }
    }

    var availability: ProviderAvailability { get async { state } }
    var askedCount: Int { asked.withLock { $0 } }

    func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        AsyncThrowingStream { $0.finish() }
    }

    func embed(_ request: EmbeddingRequest) async throws -> EmbeddingResponse {
        asked.withLock { $0 += 1 }
        try request.validate(provider: id)
        return EmbeddingResponse(vectors: try outcome(request), promptTokens: 3 * request.inputs.count, provider: id)
    }
}

/// `FallbackRouter.embed`: order, failover on the chat rules, providers that do not embed.
@Suite struct EmbeddingRouterTests {
    let request = EmbeddingRequest(texts: ["a lamp", "a hearth"])

    @Test func firstEmbeddingProviderServes() async throws {
        let cloud = ScriptedEmbedder("cloud", value: 1)
        let local = ScriptedEmbedder("local", value: 2)
        let response = try await FallbackRouter(providers: [cloud, local]).embed(request)
        #expect(response.provider == "cloud" && response.vectors == [[1, 0], [1, 0]] && response.promptTokens == 6)
        #expect(response.dimensions == 2)
        #expect(local.askedCount == 0)
        let reversed = try await FallbackRouter(providers: [cloud, local], policy: .localFirst).embed(request)
        #expect(reversed.provider == "local")
    }

    @Test func chatOnlyProvidersAreSkipped() async throws {
        let chat = ScriptedProvider("chat-only", answers: "hi")
        let local = ScriptedEmbedder("local", value: 2)
        let router = FallbackRouter(providers: [chat, local])
        #expect(router.embeddingProviders.map(\.id) == ["local"])
        #expect(try await router.embed(request).provider == "local")
        #expect(chat.askedCount == 0)
    }

    @Test(arguments: [
        ProviderError.Code.network, .timeout, .server(status: 503), .rateLimited(retryAfter: 30), .modelUnavailable, .decoding,
    ])
    func failsOverOnTheChatRules(_ code: ProviderError.Code) async throws {
        let cloud = ScriptedEmbedder("cloud") { _ in throw failure(code, "cloud") }
        let local = ScriptedEmbedder("local", value: 2)
        let response = try await FallbackRouter(providers: [cloud, local]).embed(request)
        #expect(response.provider == "local")
        #expect(cloud.askedCount == 1 && local.askedCount == 1)
    }

    @Test(arguments: [
        ProviderError.Code.unauthorized, .invalidRequest, .contextLengthExceeded(tokens: 9000, limit: 8192), .cancelled,
    ])
    func doesNotFailOverOnTheOthers(_ code: ProviderError.Code) async throws {
        let cloud = ScriptedEmbedder("cloud") { _ in throw failure(code, "cloud") }
        let local = ScriptedEmbedder("local", value: 2)
        let error = await #expect(throws: ProviderError.self) { try await FallbackRouter(providers: [cloud, local]).embed(request) }
        #expect(error?.code == code && error?.provider == "cloud")
        #expect(local.askedCount == 0)
    }

    @Test func aForeignErrorIsWrappedAndFailsOver() async throws {
        let cloud = ScriptedEmbedder("cloud") { _ in throw CocoaLikeError() }
        let local = ScriptedEmbedder("local", value: 2)
        #expect(try await FallbackRouter(providers: [cloud, local]).embed(request).provider == "local")
    }

    @Test func theLastFailureIsThrown() async throws {
        let cloud = ScriptedEmbedder("cloud") { _ in throw failure(.network, "cloud") }
        let local = ScriptedEmbedder("local") { _ in throw failure(.server(status: 500), "local") }
        let error = await #expect(throws: ProviderError.self) { try await FallbackRouter(providers: [cloud, local]).embed(request) }
        #expect(error?.provider == "local" && error?.code == .server(status: 500))
    }

    @Test func unavailableProvidersAreSkippedAndNoneLeftIsModelUnavailable() async throws {
        let cloud = ScriptedEmbedder("cloud", value: 1, availability: .unavailable(.offline))
        let local = ScriptedEmbedder("local", value: 2)
        #expect(try await FallbackRouter(providers: [cloud, local]).embed(request).provider == "local")
        #expect(cloud.askedCount == 0)

        let none = FallbackRouter(id: "router", providers: [cloud])
        let error = await #expect(throws: ProviderError.self) { try await none.embed(request) }
        #expect(error?.code == .modelUnavailable && error?.provider == "router")
        #expect(error?.message.contains("cloud: offline") == true)

        let chatOnly = FallbackRouter(providers: [ScriptedProvider("chat-only", answers: "hi")])
        let refused = await #expect(throws: ProviderError.self) { try await chatOnly.embed(request) }
        #expect(refused?.code == .modelUnavailable && refused?.message.contains("EmbeddingProvider") == true)
    }

    @Test func requestsAreValidated() throws {
        func code(_ request: EmbeddingRequest) -> ProviderError.Code? {
            do {
                try request.validate(provider: "p")
                return nil
            } catch {
                return (error as? ProviderError)?.code
            }
        }
        #expect(code(EmbeddingRequest(inputs: [])) == .invalidRequest)
        #expect(code(EmbeddingRequest(texts: ["x", ""])) == .invalidRequest)
        #expect(code(EmbeddingRequest(inputs: [.tokens([])])) == .invalidRequest)
        #expect(code(EmbeddingRequest(texts: ["x"], dimensions: 0)) == .invalidRequest)
        #expect(code(EmbeddingRequest(inputs: [.text("x"), .tokens([1, 2])], dimensions: 8)) == nil)
        do {
            try EmbeddingRequest(texts: ["x"], dimensions: -3).validate(provider: "p")
            Issue.record("a negative dimensions was accepted")
        } catch let error as ProviderError {
            #expect(error.message.contains("dimensions"))
        }
    }
}
