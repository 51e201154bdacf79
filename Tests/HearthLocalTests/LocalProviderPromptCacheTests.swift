import Foundation
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// LocalProvider with the prompt cache: an app with more conversations than slots. A
/// conversation whose slot another took finds its earlier turns in the cache, and the usage
/// reports them as cached prompt tokens (what the server's `cached_tokens` fields carry).
@Suite struct LocalProviderPromptCacheTests {
    static func provider(_ promptCache: PromptCacheOptions) throws -> LocalProvider {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        return try LocalProvider(model: model, context: 512, threads: 2, batch: 32, parallel: 1, promptCache: promptCache)
    }

    static let greedy = ChatOptions(temperature: 0, maxTokens: 6)

    static func reply(_ provider: LocalProvider, _ messages: [ChatMessage]) async throws -> (text: String, usage: Usage) {
        let result = try await LocalProviderTests.collect(provider, ChatRequest(messages: messages, options: greedy))
        let usage = try #require(result.usage)
        return (result.text, usage)
    }

    /// Conversation A, then B in the only slot, then A's second turn: with the cache, A's second
    /// turn takes at least the whole blocks of its first turn's prompt from it (usage says so,
    /// and the statistics count the hit); without it, A starts over (all but the template's first
    /// tokens, which B's slot shares, computed again).
    @Test func aConversationThatLostItsSlotIsFoundAgain() async throws {
        let system = ChatMessage.system(String(repeating: "You answer questions about the weather, briefly and politely. ", count: 6))
        func play(_ provider: LocalProvider) async throws -> (first: Usage, second: Usage) {
            var a: [ChatMessage] = [system, .user("Will it rain tomorrow?")]
            let first = try await Self.reply(provider, a)
            _ = try await Self.reply(provider, [.system("You are terse."), .user("Name a colour.")])
            a += [.assistant(first.text), .user("And the day after?")]
            return (first.usage, try await Self.reply(provider, a).usage)
        }
        let cached = try Self.provider(PromptCacheOptions(bytes: 16 << 20, blockTokens: 16))
        let with = try await play(cached)
        #expect((with.second.cachedPromptTokens ?? 0) >= with.first.promptTokens / 16 * 16 - 16)
        #expect((with.second.cachedPromptTokens ?? 0) > 0)
        let statistics = try #require(cached.promptCacheStatistics)
        #expect(statistics.hits == 1 && statistics.hitTokens == with.second.cachedPromptTokens)
        #expect(statistics.bytes > 0 && statistics.bytes <= statistics.budget)

        // Without it, A shares with B's slot only the chat template's first tokens.
        let without = try await play(try Self.provider(.disabled))
        #expect((without.second.cachedPromptTokens ?? 0) < 16)
        #expect(try Self.provider(.disabled).promptCacheStatistics == nil)
    }
}
