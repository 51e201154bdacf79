import Foundation
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// The Swift API for several choices: `complete(_:choices:)` gives one reply per choice, choice
/// `i` sampled with `seed + i`, the prompt processed once.
@Suite struct LocalProviderChoicesTests {
    @Test func choicesAreTheirSeedsRepliesAndShareThePrompt() async throws {
        let provider = try LocalProviderTests.provider(context: 128, batch: 16, parallel: 3)
        var options = ChatOptions(temperature: 1, maxTokens: 10)
        options.seed = 20
        let request = ChatRequest(messages: [.user("Tell me about bread.")], options: options)
        let replies = try await provider.complete(request, choices: 3)
        #expect(replies.count == 3)
        #expect(Set(replies.map(\.text)).count > 1, "three choices, one text")
        for (i, reply) in replies.enumerated() {
            var alone = options
            alone.seed = 20 + i
            let single = try await provider.complete(ChatRequest(messages: request.messages, options: alone))
            #expect(reply.text == single.text, "choice \(i)")
            #expect(reply.usage?.completionTokens == single.usage?.completionTokens)
            #expect(reply.provider == "local")
        }
        // The other choices reused the prompt the first one processed.
        #expect(replies[1].usage?.cachedPromptTokens == replies[1].usage?.promptTokens)
        await #expect(throws: ProviderError.self) { _ = try await provider.complete(request, choices: 0) }
        await #expect(throws: ProviderError.self) {
            _ = try await provider.complete(request, choices: LocalProvider.maxChoices + 1)
        }
    }
}
