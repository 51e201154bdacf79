import HearthProviders
import Testing

/// The value types: convenience constructors, the continuation transcript, error texts, `complete`.
@Suite struct ProviderTypesTests {
    @Test func messageConstructors() {
        #expect(ChatMessage.system("s") == ChatMessage(role: .system, content: "s"))
        #expect(ChatMessage.user("u").role == .user)
        #expect(ChatMessage.assistant("a").role == .assistant)
    }

    @Test func continuedMessagesAppendsOrMergesTheAssistantPrefix() {
        var request = ChatRequest(messages: [.user("Count")])
        #expect(request.continuedMessages == [.user("Count")])
        request.continuation = ""
        #expect(request.continuedMessages == [.user("Count")])
        request.continuation = "1, 2,"
        #expect(request.continuedMessages == [.user("Count"), .assistant("1, 2,")])
        request.messages.append(.assistant("0,"))
        #expect(request.continuedMessages == [.user("Count"), .assistant("0,1, 2,")])
    }

    @Test func errorDescriptionsNameProviderCodeAndCounts() {
        let error = ProviderError(
            .contextLengthExceeded(tokens: 9000, limit: 8192), provider: "openai", message: "Shorten it.",
            underlying: CocoaLikeError())
        #expect(error.description.hasPrefix("openai: context length exceeded (9000 tokens, limit 8192): Shorten it."))
        #expect(error.description.contains("cause: CocoaLikeError"))
        #expect(ProviderError.Code.rateLimited(retryAfter: 2).description == "rate limited (retry after 2s)")
        #expect(ProviderError.Code.rateLimited(retryAfter: 0.5).description == "rate limited (retry after 0.5s)")
        #expect(ProviderError.Code.server(status: 503).description == "server error 503")
    }

    @Test func transientCodes() {
        func transient(_ code: ProviderError.Code) -> Bool { ProviderError(code, provider: "p", message: "").isTransient }
        #expect(transient(.network) && transient(.timeout) && transient(.server(status: 500)))
        #expect(transient(.rateLimited(retryAfter: nil)) && transient(.modelUnavailable))
        #expect(!transient(.unauthorized) && !transient(.invalidRequest) && !transient(.cancelled))
        #expect(!transient(.server(status: 400)) && !transient(.contextLengthExceeded(tokens: nil, limit: nil)))
    }

    @Test func wrappingKeepsProviderErrorsAndMapsCancellation() {
        let original = ProviderError(.network, provider: "a", message: "m")
        #expect(ProviderError.wrapping(original, provider: "b").provider == "a")
        #expect(ProviderError.wrapping(CancellationError(), provider: "b").code == .cancelled)
        #expect(ProviderError.wrapping(CocoaLikeError(), provider: "b").code == .modelUnavailable)
    }

    @Test func defaultCompleteCollectsTheStream() async throws {
        let provider = ScriptedProvider("p") { _ in [.text("a"), .text("b"), .finish(.length)] }
        let response = try await provider.complete(ChatRequest(messages: [.user("x")]))
        #expect(response.text == "ab")
        #expect(response.finishReason == .length)
        #expect(response.provider == "p")
        #expect(response.usage == nil)
        try await provider.prewarm(nil)  // the scripted provider counts it
    }

    @Test func defaultCompleteThrowsTheStreamsError() async {
        let provider = ScriptedProvider("p") { _ in [.text("a"), .fail(failure(.timeout, "p"))] }
        await #expect(throws: ProviderError.self) { try await provider.complete(ChatRequest(messages: [.user("x")])) }
    }
}
