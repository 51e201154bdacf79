import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// A prompt that shares only an early part of a longer one, on a sliding-window model: the
/// tiny Gemma 3 keeps a window-sized stretch of its window layers per slot, so a 600-token
/// prompt has dropped the window rows of its first positions by the time its request ends.
/// A second conversation that parts from it half a window after the slot's first window row
/// (another sub-agent after a shared system prompt) needs window rows from before that row to
/// start there: the cache keeps them from between the first prompt's chunks
/// (`Generator.keepWindowRows`). Before that, only
/// what the slot held at the end was stored, so every restore point up to the fork lacked
/// window rows it needs and the second prompt found nothing
/// (`cachedPromptTokens` 0). Its first token then matches a fresh prefill.
@Suite struct PromptCacheWindowTests {
    @Test func aPromptSharingAnEarlyPartIsRestoredThere() throws {
        let model = try PromptCacheTests.tiny.get()
        let vocab = model.options.vocabSize
        let generator = try Generator(
            model: model, context: 1024, threads: 2, batch: 64, sequences: 1,
            promptCache: PromptCacheOptions(bytes: 64 << 20, blockTokens: 16))
        let a = PromptCacheTests.prompt(70, length: 600, vocab: vocab)
        _ = try PromptCacheTests.run(generator, a, maxTokens: 2)
        // A block-aligned point whose window (its W − 1 positions before it) begins before the
        // slot's first window row: the slot cannot continue from there.
        let start = generator.decoder.cache.windowStarts[0]
        let window = try #require(generator.promptCache?.layout.windowSize)
        let fork = (start + window / 2) / 16 * 16
        #expect(start > 0 && fork < 600 && !generator.decoder.cache.canResume(at: fork, sequence: 0), "start \(start), fork \(fork)")

        let b = Array(a.prefix(fork)) + PromptCacheTests.prompt(71, length: 100, vocab: vocab)
        let forked = try PromptCacheTests.run(generator, b, maxTokens: 2)
        #expect(forked.summary?.cachedPromptTokens == fork, "the whole blocks the prompts share (start \(start))")
        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, sequences: 1)
        PromptCacheTests.expectAgreement(forked, try PromptCacheTests.run(plain, b, maxTokens: 2), tolerance: 2e-3, "forked at \(fork)")
    }
}
