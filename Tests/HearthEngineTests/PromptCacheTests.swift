import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The prompt cache (``PromptCache``): KV blocks kept beyond the slots, found again by a
/// prompt's hashed block chain. On the tiny fixtures: a conversation that has left the slots
/// (more conversations than slots) is restored from the cache and continues with the logits a
/// fresh prefill gives, for every KV type and with Gemma 3's sliding-window layers compacted;
/// LongRoPE rows never cross between short and long prompts; concurrent requests share a cached
/// prefix; a request cancelled while its prefix is copied leaves nothing half-written; on a
/// hand-filled cache, rows round-trip exactly, window rows are kept only where the slot held
/// them, and eviction keeps within the budget and never leaves a block without its parent.
@Suite struct PromptCacheTests {
    static let tiny = Result { try TransformerModel(path: Fixtures.checkpoint("gemma3-tiny").path) }

    /// Deterministic pseudo-random tokens (away from the special ids at the start).
    static func prompt(_ seed: Int, length: Int, vocab: Int) -> [Int32] {
        (0..<length).map { Int32((seed * 7919 + $0 * 104_729 + 13 + ($0 * $0 * (seed + 3)) % 97) % (vocab - 10) + 5) }
    }

    /// What a greedy run gave: its tokens, the first token's top log-probabilities, its summary.
    struct Outcome {
        var tokens: [Int32] = []
        var first: [(id: Int32, logprob: Float)] = []
        var summary: GenerationSummary?
    }

    static func greedy(_ maxTokens: Int) -> GenerationParameters {
        var p = GenerationParameters()
        p.maxTokens = maxTokens
        p.sampling.temperature = 0
        p.topLogprobs = 8
        p.speculative = .off
        return p
    }

    static func run(
        _ generator: Generator, _ prompt: [Int32], maxTokens: Int, isCancelled: @escaping () -> Bool = { false }
    ) throws -> Outcome {
        let collected = Collected()
        let summary = try generator.run(prompt: prompt, parameters: greedy(maxTokens), isCancelled: isCancelled) { token in
            collected.add(token)
        }
        var outcome = collected.outcome
        outcome.summary = summary
        return outcome
    }

    /// The first token's log-probabilities agree within `tolerance` (each of the fresh run's top
    /// 4 is among the cached run's top 8), and the pick is the same where the fresh run's top
    /// two are further apart than twice the tolerance.
    static func expectAgreement(_ cached: Outcome, _ fresh: Outcome, tolerance: Float, _ what: String) {
        #expect(!fresh.first.isEmpty && !cached.first.isEmpty, "\(what): no log-probabilities")
        var worst: Float = 0
        for entry in fresh.first.prefix(4) {
            guard let other = cached.first.first(where: { $0.id == entry.id }) else {
                Issue.record("\(what): token \(entry.id) of the fresh top 4 is not in the cached top 8")
                continue
            }
            worst = max(worst, abs(other.logprob - entry.logprob))
        }
        print("prompt cache agreement \(what): worst \(worst)")
        #expect(worst <= tolerance, "\(what): log-probabilities differ by \(worst)")
        if fresh.first.count > 1, fresh.first[0].logprob - fresh.first[1].logprob > 2 * tolerance {
            #expect(cached.tokens.first == fresh.tokens.first, "\(what): a clear first pick differs")
        }
    }

    // MARK: - Restored conversations continue as a fresh prefill does

    /// One slot, two conversations: A (600 tokens, past Gemma's window buffer of 391 positions,
    /// so its window layers compact), then B, which takes the only slot; A's next turn finds
    /// A's blocks in the cache (window rows of the last blocks included) and computes only the
    /// rest. Its first token's log-probabilities match a fresh prefill of the whole prompt on a
    /// generator without a cache, for every KV type.
    @Test(arguments: [DType.f16, .f32, .q8_0, .q4_0])
    func restoredConversationMatchesFreshPrefill(kvType: DType) throws {
        let model = try Self.tiny.get()
        let vocab = model.options.vocabSize
        let options = PromptCacheOptions(bytes: 64 << 20, blockTokens: 16)
        let generator = try Generator(
            model: model, context: 1024, threads: 2, batch: 64, kvType: kvType, sequences: 1, promptCache: options)
        let a = Self.prompt(1, length: 600, vocab: vocab)
        let first = try Self.run(generator, a, maxTokens: 3)
        #expect(generator.decoder.cache.windowStarts[0] > 0, "the window layers compacted")
        _ = try Self.run(generator, Self.prompt(2, length: 300, vocab: vocab), maxTokens: 3)
        // The next turn: A, what was generated, and more.
        let next = a + first.tokens + Self.prompt(3, length: 40, vocab: vocab)
        let cached = try Self.run(generator, next, maxTokens: 2)
        // The slot held A and the two generated tokens it fed: 602 positions, 37 whole blocks.
        #expect(cached.summary?.cachedPromptTokens == 592)
        let statistics = try #require(generator.promptCacheStatistics)
        #expect(statistics.hits == 1 && statistics.hitTokens == 592)
        #expect(statistics.misses >= 1, "B looked and found nothing")

        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, kvType: kvType, sequences: 1)
        let fresh = try Self.run(plain, next, maxTokens: 2)
        #expect(fresh.summary?.cachedPromptTokens == 0)
        // Rows restored raw are the rows the slot computed; the prompt's remaining chunks run at
        // other offsets than a fresh prefill's, so the sums may round differently: measured at
        // most 1.4e-5 (f16), 2e-6 (f32, q8_0, q4_0); 4e-4 in the other tests here. Restoring the
        // blocks without their window rows moved them by 0.09 or more.
        Self.expectAgreement(cached, fresh, tolerance: 2e-3, "kv \(kvType.rawValue)")
    }

    /// More conversations than slots, the reason the cache exists: five conversations take turns
    /// on two slots. From its second turn on, every turn finds all of what its conversation's
    /// slot held in whole blocks (from a slot or the cache); without the cache, a conversation
    /// whose slot was taken starts over.
    @Test func moreConversationsThanSlots() throws {
        let model = try Self.tiny.get()
        let vocab = model.options.vocabSize
        func play(_ options: PromptCacheOptions) throws -> (cached: [Int], expected: [Int], last: Outcome, lastPrompt: [Int32]) {
            let generator = try Generator(
                model: model, context: 1024, threads: 2, batch: 64, sequences: 2, promptCache: options)
            var histories = (0..<5).map { Self.prompt(10 + $0, length: 50 + 10 * $0, vocab: vocab) }
            var cached: [Int] = [], expected: [Int] = []
            var last = Outcome(), lastPrompt: [Int32] = []
            for turn in 0..<3 {
                for c in histories.indices {
                    let prompt = histories[c]
                    let outcome = try Self.run(generator, prompt, maxTokens: 4)
                    if turn > 0 {
                        cached.append(outcome.summary?.cachedPromptTokens ?? -1)
                        expected.append(prompt.count)
                    }
                    // The slot holds the prompt and the generated tokens but the last.
                    histories[c] = prompt + outcome.tokens + Self.prompt(20 + c + 5 * turn, length: 20, vocab: vocab)
                    last = outcome
                    lastPrompt = prompt
                }
            }
            return (cached, expected, last, lastPrompt)
        }
        let with = try play(PromptCacheOptions(bytes: 64 << 20, blockTokens: 16))
        #expect(with.cached.count == 10)
        for (turn, (cached, length)) in zip(with.cached, with.expected).enumerated() {
            // The previous turn's slot held length − 20 + 3 tokens; whole blocks of it at least.
            let held = length - 20 - 1
            #expect(cached >= held / 16 * 16, "turn \(turn): \(cached) of \(length) cached")
        }
        let without = try play(.disabled)
        #expect(without.cached.contains(0), "without the cache some conversation starts over")
        // The last turn of the cached play continues as a fresh prefill of its prompt does.
        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, sequences: 1)
        Self.expectAgreement(with.last, try Self.run(plain, with.lastPrompt, maxTokens: 4), tolerance: 2e-3, "last turn")
    }

    /// LongRoPE (the Phi-3 fixture's original context is 16): keys computed for a sequence
    /// longer than that use the long factors, so a 30-token conversation's blocks must never
    /// serve a 14-token prompt with the same start (the short factors apply there). The prompt
    /// finds nothing and matches a fresh prefill; a prompt as long as the first finds its blocks.
    @Test func longRoPEChainsStayApart() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-gqa-longrope").path)
        let vocab = model.options.vocabSize
        let options = PromptCacheOptions(bytes: 16 << 20, blockTokens: 4)
        let generator = try Generator(model: model, context: 64, threads: 2, batch: 16, sequences: 1, promptCache: options)
        let long = Self.prompt(30, length: 30, vocab: vocab)
        _ = try Self.run(generator, long, maxTokens: 2)
        _ = try Self.run(generator, Self.prompt(31, length: 9, vocab: vocab), maxTokens: 1)  // takes the slot
        let short = Array(long.prefix(12)) + Self.prompt(32, length: 2, vocab: vocab)
        let cached = try Self.run(generator, short, maxTokens: 1)
        #expect(cached.summary?.cachedPromptTokens == 0, "long-factor rows were reused for a short prompt")
        let plain = try Generator(model: model, context: 64, threads: 2, batch: 16, sequences: 1)
        Self.expectAgreement(cached, try Self.run(plain, short, maxTokens: 1), tolerance: 2e-3, "short prompt")
        // The same start, long again: its blocks are found (the slot holds only the short prompt).
        let again = long + Self.prompt(33, length: 3, vocab: vocab)
        let hit = try Self.run(generator, again, maxTokens: 1)
        #expect((hit.summary?.cachedPromptTokens ?? 0) >= 28)
        Self.expectAgreement(hit, try Self.run(plain, again, maxTokens: 1), tolerance: 2e-3, "long prompt")
    }

    // MARK: - Concurrency and cancellation

    /// Four requests sharing a 200-token prefix, submitted at once to two slots after a first
    /// request left the prefix in the cache: each takes at least the prefix's whole blocks
    /// without computing them (from the cache or from a slot), and each continues as a fresh
    /// prefill of its prompt does.
    @Test func concurrentRequestsShareACachedPrefix() async throws {
        let model = try Self.tiny.get()
        let vocab = model.options.vocabSize
        let generator = try Generator(
            model: model, context: 512, threads: 2, batch: 64, sequences: 2,
            promptCache: PromptCacheOptions(bytes: 64 << 20, blockTokens: 16))
        let system = Self.prompt(40, length: 200, vocab: vocab)
        _ = try Self.run(generator, system + Self.prompt(41, length: 10, vocab: vocab), maxTokens: 2)
        // Another conversation in each slot, so the prefix is only in the cache.
        for c in 0..<2 { _ = try Self.run(generator, Self.prompt(50 + c, length: 30, vocab: vocab), maxTokens: 1) }
        let prompts = (0..<4).map { system + Self.prompt(60 + $0, length: 12 + $0, vocab: vocab) }
        let outcomes = try await withThrowingTaskGroup(of: (Int, Outcome).self) { group in
            for (i, prompt) in prompts.enumerated() {
                group.addTask {
                    var outcome = Outcome()
                    for try await event in generator.generate(prompt: prompt, parameters: Self.greedy(2)) {
                        switch event {
                        case .token(let token):
                            if outcome.tokens.isEmpty { outcome.first = token.topLogprobs }
                            outcome.tokens.append(token.id)
                        case .done(let summary): outcome.summary = summary
                        }
                    }
                    return (i, outcome)
                }
            }
            var result = [Outcome](repeating: Outcome(), count: prompts.count)
            for try await (i, outcome) in group { result[i] = outcome }
            return result
        }
        let plain = try Generator(model: model, context: 512, threads: 2, batch: 64, sequences: 1)
        for (i, outcome) in outcomes.enumerated() {
            #expect((outcome.summary?.cachedPromptTokens ?? 0) >= 192, "request \(i)")
            Self.expectAgreement(outcome, try Self.run(plain, prompts[i], maxTokens: 2), tolerance: 2e-3, "request \(i)")
        }
        #expect((generator.promptCacheStatistics?.hits ?? 0) >= 1)
    }

    /// A request cancelled while its 37-block prefix is being copied out of the cache (the copy
    /// asks every 16 blocks): it ends cancelled with nothing generated, its slot holds nothing,
    /// and the same prompt asked again is restored whole and continues as a fresh prefill does.
    @Test func cancelledWhileCopyingAPrefix() throws {
        let model = try Self.tiny.get()
        let vocab = model.options.vocabSize
        let generator = try Generator(
            model: model, context: 1024, threads: 2, batch: 64, sequences: 1,
            promptCache: PromptCacheOptions(bytes: 64 << 20, blockTokens: 16))
        let a = Self.prompt(70, length: 600, vocab: vocab)
        _ = try Self.run(generator, a, maxTokens: 1)
        _ = try Self.run(generator, Self.prompt(71, length: 40, vocab: vocab), maxTokens: 1)
        let next = a + Self.prompt(72, length: 20, vocab: vocab)
        // Asked once as the request is admitted (false), then during the copy (true).
        let calls = Counter()
        let cancelled = try Self.run(generator, next, maxTokens: 4, isCancelled: { calls.next() >= 2 })
        #expect(cancelled.summary?.finishReason == .cancelled)
        #expect(cancelled.tokens.isEmpty)
        #expect(calls.value == 2, "cancelled during the copy, not in a step")
        #expect(generator.promptCacheStatistics?.hits == 1)
        #expect(generator.decoder.cache.counts[0] == 0 && generator.slots[0].tokens.isEmpty, "the slot holds nothing")

        let restored = try Self.run(generator, next, maxTokens: 2)
        #expect(restored.summary?.cachedPromptTokens == 592)
        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, sequences: 1)
        Self.expectAgreement(restored, try Self.run(plain, next, maxTokens: 2), tolerance: 2e-3, "after the cancellation")
    }

    // MARK: - Blocks, window rows and the budget, on a hand-filled cache

    /// A cache of three layers (0 and 2 sliding, window 8, buffer span 27; 1 full), f32 rows whose
    /// values name their layer, position and slot.
    static func handCache(sequences: Int = 2) throws -> KVCache {
        let window = KVCache.Window(size: 8, layers: [true, false, true], capacity: 256, maxBatch: 8, lookback: 4, minimumRoom: 8)
        return try KVCache(layers: 3, capacity: 256, width: 4, sequences: sequences, type: .f32, window: window)
    }

    static func value(_ layer: Int, _ position: Int, _ salt: Int) -> Float { Float(salt * 100_000 + position * 10 + layer) }

    /// Feeds positions 0..<count into `slot` in steps of 8, as a decoder would (compacting).
    static func fill(_ cache: KVCache, slot: Int, count: Int, salt: Int) throws {
        var p = 0
        while p < count {
            let n = min(8, count - p)
            try cache.makeRoom(sequence: slot, from: p, count: n)
            for t in p..<(p + n) {
                for layer in 0..<3 {
                    let x = value(layer, t, salt)
                    cache.store(layer: layer, position: t, sequence: slot, keys: [x, x, x, x], values: [-x, -x, -x, -x])
                }
            }
            cache.counts[slot] = p + n
            p += n
        }
    }

    static func row(_ cache: KVCache, _ layer: Int, _ position: Int, _ slot: Int) -> (Float, Float) {
        (cache.key(layer, position, sequence: slot).load(as: Float.self), cache.value(layer, position, sequence: slot).load(as: Float.self))
    }

    /// Stored from a slot whose window layers compacted, a chain keeps window rows only for the
    /// blocks the slot still held; restored into another slot, every full-layer row and the
    /// window rows from the restore's window start on are the stored ones, bit for bit, and
    /// the restore stops where the blocks' window rows would be missing.
    @Test func rowsRoundTripAndWindowRowsOnlyWhereHeld() throws {
        let cache = try Self.handCache()
        try Self.fill(cache, slot: 0, count: 100, salt: 1)
        let start = cache.windowStarts[0]
        #expect(start > 0)
        let prompt = (0..<100).map { Int32($0 + 5) }
        let pc = try #require(PromptCache(options: PromptCacheOptions(bytes: 1 << 20, blockTokens: 4), cache: cache))
        pc.store(prompt[...], cache: cache, sequence: 0, longFactors: false)
        let statistics = pc.currentStatistics
        #expect(statistics.blocks == 25)
        let windowed = (0..<25).filter { $0 * 4 >= start }.count
        #expect(statistics.bytes == 25 * (pc.layout.fullBytes + 16) + windowed * pc.layout.windowBytes)

        // Restore 96 positions (block-aligned, at most 99) into slot 1.
        let hit = try #require(pc.lookup(prompt + [7], limit: 100, beyond: 0, longFactors: false, accept: { _ in true }))
        #expect(hit.count == 100)
        #expect(pc.restore(hit, into: cache, sequence: 1, keeping: 0, isCancelled: { false }))
        #expect(cache.counts[1] == 100)
        let windowStart = cache.windowStarts[1]
        #expect(windowStart <= 100 - 7 && windowStart >= start)
        for t in 0..<100 { #expect(Self.row(cache, 1, t, 1) == (Self.value(1, t, 1), -Self.value(1, t, 1)), "full layer, \(t)") }
        for layer in [0, 2] {
            for t in windowStart..<100 {
                #expect(Self.row(cache, layer, t, 1) == (Self.value(layer, t, 1), -Self.value(layer, t, 1)), "layer \(layer), \(t)")
            }
        }
        #expect(cache.canResume(at: 100, sequence: 1))
        // A prompt that parts from the chain early: its restore would need window rows the slot
        // had already dropped when the chain was stored, so it takes nothing.
        let early = Array(prompt.prefix(13)) + [9, 9, 9, 9]
        #expect(pc.lookup(early, limit: 16, beyond: 0, longFactors: false, accept: { _ in true }) == nil)
        // The other factor family has no such chain.
        #expect(pc.lookup(prompt, limit: 99, beyond: 0, longFactors: true, accept: { _ in true }) == nil)
    }

    /// Under pressure the bytes held never pass the budget, the least recently used go first,
    /// a chain loses its tail before its head (no block is ever kept without its parent), and
    /// the chain used most recently is found whole.
    @Test func evictionKeepsWithinTheBudget() throws {
        let cache = try Self.handCache(sequences: 1)
        let probe = try #require(PromptCache(options: PromptCacheOptions(bytes: 1 << 20, blockTokens: 4), cache: cache))
        let fullBlock = probe.layout.fullBytes + 16
        // Room for 30 blocks' full rows (window rows come on top of a chain's last blocks).
        let budget = 30 * fullBlock + 6 * probe.layout.windowBytes
        let pc = try #require(PromptCache(options: PromptCacheOptions(bytes: budget, blockTokens: 4), cache: cache))
        var prompts: [[Int32]] = []
        for c in 0..<6 {
            let prompt = (0..<48).map { Int32(1000 * (c + 1) + $0) }
            prompts.append(prompt)
            cache.truncate(to: 0, sequence: 0)
            try Self.fill(cache, slot: 0, count: 48, salt: c + 1)
            pc.store(prompt[...], cache: cache, sequence: 0, longFactors: false)
            let statistics = pc.currentStatistics
            #expect(statistics.bytes <= budget, "after conversation \(c): \(statistics.bytes) > \(budget)")
            #expect(pc.heldLinksAreWhole, "after conversation \(c)")
        }
        let statistics = pc.currentStatistics
        #expect(statistics.evictions > 0)
        // The newest chain is whole; the oldest ones are gone.
        let newest = try #require(pc.lookup(prompts[5] + [1], limit: 48, beyond: 0, longFactors: false, accept: { _ in true }))
        #expect(newest.count == 48)
        #expect(pc.lookup(prompts[0] + [1], limit: 48, beyond: 0, longFactors: false, accept: { _ in true }) == nil)
        // A chain more than the whole budget keeps the head that fits (without the window rows a
        // restore there would need: the slot no longer held them), and nothing else.
        let long = (0..<200).map { Int32(50_000 + $0) }
        cache.truncate(to: 0, sequence: 0)
        try Self.fill(cache, slot: 0, count: 200, salt: 9)
        pc.store(long[...], cache: cache, sequence: 0, longFactors: false)
        let after = pc.currentStatistics
        #expect(after.bytes <= budget)
        #expect(after.blocks >= 25 && after.blocks < 50)
        #expect(pc.heldLinksAreWhole)
        #expect(pc.lookup(prompts[5] + [1], limit: 48, beyond: 0, longFactors: false, accept: { _ in true }) == nil)
    }

    /// The recency list: touch moves to the newest end; removal relinks.
    @Test func recencyOrder() {
        var list = RecencyList<Int>()
        for k in [1, 2, 3, 4] { list.touch(k) }
        list.touch(2)
        #expect(list.ordered == [1, 3, 4, 2])
        list.remove(3)
        list.remove(1)
        #expect(list.ordered == [4, 2] && list.oldest == 4)
        list.remove(2)
        list.remove(4)
        #expect(list.ordered.isEmpty && list.oldest == nil && list.count == 0)
    }
}

/// Tokens a run emitted (the callback runs on the scheduler's thread).
private final class Collected: @unchecked Sendable {
    // `@unchecked Sendable`: touched only under `lock`.
    private let lock = NSLock()
    private var value = PromptCacheTests.Outcome()

    func add(_ token: GeneratedToken) {
        lock.withLock {
            if value.tokens.isEmpty { value.first = token.topLogprobs }
            value.tokens.append(token.id)
        }
    }

    var outcome: PromptCacheTests.Outcome { lock.withLock { value } }
}

/// Counts calls (a cancellation callback that says yes from its n-th call on).
private final class Counter: @unchecked Sendable {
    // `@unchecked Sendable`: touched only under `lock`.
    private let lock = NSLock()
    private var count = 0

    func next() -> Int { lock.withLock { count += 1; return count } }
    var value: Int { lock.withLock { count } }
}
