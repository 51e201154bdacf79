import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The prompt cache under memory pressure, through the generator: a budget that holds about one
/// and a half conversations, three conversations taking turns on one slot. The bytes held never
/// pass the budget after any request; the oldest conversation's blocks go first, and its next
/// turn, restored from what is left (or from nothing), continues as a fresh prefill does; the
/// newest is found whole. (`PromptCacheTests.evictionKeepsWithinTheBudget` checks the order of
/// eviction on a hand-filled cache; this checks that requests still get the right rows when
/// chains have been cut by it.)
@Suite struct PromptCachePressureTests {
    @Test func evictedConversationsAreRecomputedRight() throws {
        let model = try PromptCacheTests.tiny.get()
        let vocab = model.options.vocabSize
        // The layout, from a generator with room to spare.
        let probe = try Generator(
            model: model, context: 1024, threads: 2, batch: 64, sequences: 1,
            promptCache: PromptCacheOptions(bytes: 64 << 20, blockTokens: 16))
        let layout = try #require(probe.promptCache?.layout)
        // A 300-token conversation plus 2 generated tokens: 18 whole blocks, each with its window
        // rows (the tiny model's window buffer holds all 302 positions).
        let perBlock = layout.fullBytes + layout.windowBytes + 16 * 4
        let budget = 27 * perBlock
        let generator = try Generator(
            model: model, context: 1024, threads: 2, batch: 64, sequences: 1,
            promptCache: PromptCacheOptions(bytes: budget, blockTokens: 16))

        var firsts: [[Int32]] = []
        var turns: [[Int32]] = []
        for c in 0..<3 {
            let prompt = PromptCacheTests.prompt(40 + c, length: 300, vocab: vocab)
            let outcome = try PromptCacheTests.run(generator, prompt, maxTokens: 2)
            firsts.append(prompt)
            turns.append(outcome.tokens)
            let statistics = try #require(generator.promptCacheStatistics)
            #expect(statistics.bytes <= budget, "after conversation \(c): \(statistics.bytes) > \(budget)")
        }
        let pressed = try #require(generator.promptCacheStatistics)
        #expect(pressed.evictions > 0, "three conversations do not fit: \(pressed)")

        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, sequences: 1)
        // A short request takes the slot, so what follows comes from the cache, not the slot.
        _ = try PromptCacheTests.run(generator, PromptCacheTests.prompt(60, length: 12, vocab: vocab), maxTokens: 1)
        // The newest conversation is found whole (it was stored last).
        let newest = firsts[2] + turns[2] + PromptCacheTests.prompt(51, length: 20, vocab: vocab)
        let found = try PromptCacheTests.run(generator, newest, maxTokens: 2)
        #expect(found.summary?.cachedPromptTokens == 288, "the newest chain whole")
        PromptCacheTests.expectAgreement(found, try PromptCacheTests.run(plain, newest, maxTokens: 2), tolerance: 2e-3, "newest")
        #expect(try #require(generator.promptCacheStatistics).bytes <= budget)

        // The oldest conversation's next turn: most or all of it was evicted.
        let oldest = firsts[0] + turns[0] + PromptCacheTests.prompt(50, length: 20, vocab: vocab)
        let again = try PromptCacheTests.run(generator, oldest, maxTokens: 2)
        #expect((again.summary?.cachedPromptTokens ?? 0) < 288, "the oldest chain was cut")
        PromptCacheTests.expectAgreement(again, try PromptCacheTests.run(plain, oldest, maxTokens: 2), tolerance: 2e-3, "after eviction")
        #expect(try #require(generator.promptCacheStatistics).bytes <= budget)
    }
}
