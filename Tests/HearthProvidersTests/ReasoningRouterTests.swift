import HearthProviders
import Synchronization
import Testing

/// Reasoning across a failover: the failed provider's reasoning is never part of the answer
/// another provider serves, and its sealed parts (signatures, encrypted content, redacted data)
/// are never sent to another provider; the tool loop sends each reply's reasoning back.
@Suite struct ReasoningRouterTests {
    static let question = ChatRequest(messages: [.user("Why is the sky blue?")])
    static let partA = ReasoningPart(text: "A thinks.", signature: "sig-a", provider: "a")
    static let partB = ReasoningPart(text: "B thinks.", signature: "sig-b", provider: "b")

    /// A reasons (a sealed part), then fails before any text; B reasons and answers.
    static func failingA() -> ScriptedProvider {
        ScriptedProvider("a") { _ in [.reasoning("A thinks."), .reasoningEnd(partA), .fail(ProviderError(.network, provider: "a", message: "reset"))] }
    }
    static func answeringB() -> ScriptedProvider {
        ScriptedProvider("b") { _ in [.reasoning("B thinks."), .reasoningEnd(partB), .text("Rayleigh."), .finish(.stop)] }
    }

    @Test func completeHoldsOnlyTheServingProvidersReasoning() async throws {
        let response = try await FallbackRouter(providers: [Self.failingA(), Self.answeringB()]).complete(Self.question)
        #expect(response.provider == "b")
        #expect(response.reasoning == [Self.partB])
        #expect(response.text == "Rayleigh.")
        #expect(response.assistantMessage.reasoning == [Self.partB])
    }

    @Test func theStreamSaysWhereTheFailedProvidersReasoningEnds() async {
        let result = await collect(FallbackRouter(providers: [Self.failingA(), Self.answeringB()]).stream(Self.question))
        #expect(result.error == nil)
        // A's reasoning went out live; the switch comes before any of B's, so a consumer that
        // starts over at the switch (as `complete` and `hearth chat` do) never mixes them.
        let ended = result.events.compactMap { if case .reasoningEnded(let part) = $0 { part } else { nil } }
        #expect(ended == [Self.partA, Self.partB])
        let switchAt = result.events.firstIndex { if case .switchedProvider = $0 { true } else { false } }
        let bAt = result.events.firstIndex { if case .reasoningDelta("B thinks.") = $0 { true } else { false } }
        let aEnd = result.events.firstIndex { if case .reasoningEnded(Self.partA) = $0 { true } else { false } }
        #expect(switchAt != nil && aEnd != nil && bAt != nil)
        if let switchAt, let bAt, let aEnd { #expect(aEnd < switchAt && switchAt < bAt) }
    }

    @Test func aFailureAfterTextStillKeepsOnlyTheContinuingProvidersReasoning() async throws {
        let a = ScriptedProvider("a") { _ in
            [.reasoningEnd(Self.partA), .text("Ray"), .fail(ProviderError(.network, provider: "a", message: "reset"))]
        }
        let b = ScriptedProvider("b") { _ in [.reasoningEnd(Self.partB), .text("leigh."), .finish(.stop)] }
        let response = try await FallbackRouter(providers: [a, b]).complete(Self.question)
        #expect(response.text == "Rayleigh.")
        #expect(response.reasoning == [Self.partB])
    }

    @Test func sealedPartsGoOnlyToTheProviderThatMadeThem() async throws {
        let plain = ReasoningPart(text: "Plain local thinking.", provider: "local")
        let history = [
            ChatMessage.user("Hi"),
            ChatMessage(role: .assistant, content: "Hello.", reasoning: [Self.partA, Self.partB, plain]),
            ChatMessage.user("Why is the sky blue?"),
        ]
        let a = Self.failingA()
        let b = Self.answeringB()
        _ = try await FallbackRouter(providers: [a, b]).complete(ChatRequest(messages: history))
        #expect(a.lastRequest?.messages[1].reasoning == [Self.partA, plain])
        #expect(b.lastRequest?.messages[1].reasoning == [Self.partB, plain])
    }

    @Test func belongingKeepsUnsealedAndOwnParts() {
        let unsigned = ReasoningPart(text: "t", provider: "x")
        let redacted = ReasoningPart(text: "", redactedData: "d", provider: "anthropic")
        let encrypted = ReasoningPart(text: "", encryptedContent: "e", provider: "openai")
        let parts = [unsigned, redacted, encrypted]
        #expect(parts.belonging(to: "anthropic") == [unsigned, redacted])
        #expect(parts.belonging(to: "openai") == [unsigned, encrypted])
        #expect(ChatRequest(messages: [.user("x")]).keepingReasoning(for: "y").messages == [.user("x")])
    }

    @Test func theToolLoopSendsEachRepliesReasoningBack() async throws {
        let part = ReasoningPart(text: "I need the weather.", signature: "sig", provider: "rounds")
        let provider = ToolLoopTests.RoundProvider { _, round in
            round == 0
                ? [.reasoningDelta("I need the weather."), .reasoningEnded(part)]
                    + ToolLoopTests.call(0, "c1", "get_weather", #"{"city":"Hangzhou"}"#) + [.finished(.toolCalls)]
                : [.textDelta("Sunny."), .finished(.stop)]
        }
        let conversation = try await provider.respond(to: [.user("Weather?")], tools: [ToolLoopTests.Weather()])
        let second = try #require(provider.requests.withLock { $0.count == 2 ? $0[1] : nil })
        let assistant = try #require(second.messages.first { $0.role == .assistant })
        #expect(assistant.reasoning == [part])
        #expect(assistant.toolCalls.first?.id == "c1")
        #expect(conversation.response.text == "Sunny.")
    }
}
