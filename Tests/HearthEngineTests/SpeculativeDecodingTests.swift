import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Speculative decoding (prompt lookup): drafts are verified by the sampler itself, so the
/// tokens are plain decoding's. Here: the n-gram index, the draft-length choice, several logits
/// rows per sequence, and a speculative step cancelled between layers, cut short by the context
/// or crossing LongRoPE's original context, on tiny checkpoints. The default model (greedy
/// before the first near-tie, seeded sampling and its distribution) is checked through the
/// release binary in HearthCLITests/SpeculativeRealModelTests.swift.
@Suite struct SpeculativeDecodingTests {
    // MARK: - The n-gram index against a search written from the definition

    /// From the definition, by scanning: the earlier occurrences of the last token, latest first
    /// (the first `PromptLookup.occurrencesSearched` of them); for each, how many tokens before
    /// it match the sequence's own (up to `PromptLookup.longest`); the first with the most, if
    /// that is at least `PromptLookup.shortest`.
    static func referenceDrafts(_ history: [Int32], limit: Int) -> [Int32] {
        let count = history.count
        guard count > 1 else { return [] }
        let occurrences = (0..<(count - 1)).reversed().filter { history[$0] == history[count - 1] }
            .prefix(PromptLookup.occurrencesSearched)
        var best = (length: 0, follow: -1)
        for p in occurrences {
            var length = 0
            for n in 1...PromptLookup.longest where p - n + 1 >= 0 {
                let before: [Int32] = Array(history[(p - n + 1)...p])
                let suffix: [Int32] = Array(history[(count - n)...])
                if before == suffix { length = n }
            }
            if length > best.length { best = (length, p + 1) }
        }
        guard best.follow >= 0, best.length >= PromptLookup.shortest else { return [] }
        return Array(history[best.follow..<min(count, best.follow + limit)])
    }

    /// On random sequences over small alphabets (many repeats), grown token by token, the
    /// incremental index proposes exactly what a scan from the definition finds.
    @Test func lookupMatchesAScanOfTheHistory() {
        var rng = SeededGenerator(seed: 7)
        var proposals = 0
        // Random tokens over small alphabets (many short repeats, many occurrences of each
        // token), and copies of the text 7 or 45 tokens back with one token in ten changed
        // (matches longer than `PromptLookup.longest`).
        for (alphabet, period) in [(2, 0), (3, 0), (5, 0), (40, 0), (40, 7), (40, 45)] {
            var lookup = PromptLookup()
            var history: [Int32] = []
            for _ in 0..<400 {
                let copies = period > 0 && history.count >= period && rng.next() % 10 != 0
                history.append(copies ? history[history.count - period] : Int32(rng.next() % UInt64(alphabet)))
                let limit = Int(rng.next() % 9) + 1
                let got = lookup.match(history, limit: limit).drafts
                #expect(got == Self.referenceDrafts(history, limit: limit), "alphabet \(alphabet), period \(period), at \(history.count)")
                proposals += got.isEmpty ? 0 : 1
            }
        }
        #expect(proposals > 500)
        // The length of the suffix matched comes with the drafts (the generator keeps each
        // length's acceptance apart): the longest that repeats, 0 when none does.
        var lookup = PromptLookup()
        #expect(lookup.match([1, 2, 3, 4, 9, 1, 2, 3, 4], limit: 3) == ([9, 1, 2], 4))
        var shorter = PromptLookup()
        #expect(shorter.match([5, 2, 3, 7, 8, 2, 3], limit: 2) == ([7, 8], 2))
        var none = PromptLookup()
        #expect(none.match([1, 2, 3, 4, 5], limit: 4).length == 0)
    }

    /// The draft length maximises expected tokens per second: long drafts when they are accepted
    /// and rows are cheap, none (and a pause) when rows are dear and drafts are rejected.
    /// Step costs fitted to 20 steps of each of two widths: `rows` rows took `seconds`.
    static func costs(_ a: (rows: Int, seconds: Double), _ b: (rows: Int, seconds: Double)) -> StepCosts {
        var costs = StepCosts()
        for _ in 0..<20 {
            costs.record(rows: a.rows, seconds: a.seconds)
            costs.record(rows: b.rows, seconds: b.seconds)
        }
        return costs
    }

    @Test func draftLengthFollowsAcceptanceAndCost() {
        let cheap = Self.costs((1, 0.010), (9, 0.0108))
        let dear = Self.costs((1, 0.010), (9, 0.050))
        var good = DraftControl()
        for _ in 0..<10 { good.record(drafted: 8, accepted: 8) }
        #expect(good.acceptance > 0.9)
        #expect(good.length(limit: 16, others: 0, costs: cheap) == 16)
        var bad = DraftControl()
        for _ in 0..<10 { bad.record(drafted: 4, accepted: 0) }
        #expect(bad.length(limit: 16, others: 0, costs: dear) == 0)
        // Paused: the next steps draft nothing whatever the costs, then it probes again.
        #expect(bad.length(limit: 16, others: 0, costs: cheap) == 0)
        // Expected tokens: 1 + α + α² … (α = 0.5, k = 3: 1.875).
        #expect(abs(DraftControl.expectedTokens(3, acceptance: 0.5) - 1.875) < 1e-12)
    }

    /// A step's cost is a staircase in its rows (the batched kernels multiply two, four or eight
    /// rows per pass over the weights): each timed width keeps its own cost, so a draft that
    /// fills a pass is chosen and one that starts a new pass is not. With the widths measured on
    /// the default model (1–8 rows: 10.4, 10.1, 14.6, 15.3, 22.6, 22.6, 27.6 ms) and an
    /// acceptance of about 0.66, one draft (2 rows, free) pays best; a line through the same
    /// costs would price 2 rows at 12 ms and 3 at 15 and pick two drafts.
    @Test func stepCostsFollowTheStaircase() {
        var costs = StepCosts()
        let measured: [(Int, Double)] = [(1, 0.0104), (2, 0.0101), (3, 0.0146), (4, 0.0153), (5, 0.0226), (6, 0.0226), (8, 0.0276)]
        for _ in 0..<10 { for (rows, seconds) in measured { costs.record(rows: rows, seconds: seconds) } }
        #expect(abs(costs.seconds(rows: 3) - 0.0146) < 0.0006)
        #expect(abs(costs.seconds(rows: 2) - 0.0101) < 0.0006)
        // Never above a wider width's measured cost (2 rows measured cheaper than 1).
        #expect(costs.seconds(rows: 1) <= costs.seconds(rows: 2) + 1e-12)
        // 7 rows were never timed: the line, but no more than 8 rows cost.
        #expect(costs.seconds(rows: 7) <= 0.0276 + 1e-12)
        var control = DraftControl()
        for _ in 0..<20 { control.record(drafted: 5, accepted: 2) }
        #expect(abs(control.acceptance - 0.66) < 0.02)
        #expect(control.length(limit: 16, others: 0, costs: costs) == 1)
        // The same acceptance on linear costs through those points drafts two.
        var line = StepCosts()
        for _ in 0..<10 {
            for rows in 1...8 { line.record(rows: rows, seconds: 0.00712 + 0.00258 * Double(rows)) }
        }
        var same = DraftControl()
        for _ in 0..<20 { same.record(drafted: 5, accepted: 2) }
        #expect(same.length(limit: 16, others: 0, costs: line) == 2)
    }

    /// A width priced out by a few slow steps (a page fault, another process) is not priced out
    /// for good: its evidence fades while other widths are timed, and it returns to the line
    /// through the widths measured since, so it gets drafted (and re-measured) again.
    @Test func aSlowWidthIsForgiven() {
        var costs = StepCosts()
        for _ in 0..<3 { costs.record(rows: 6, seconds: 0.1) }
        #expect(costs.seconds(rows: 6) > 0.05)
        for _ in 0..<500 {
            costs.record(rows: 1, seconds: 0.010)
            costs.record(rows: 2, seconds: 0.011)
        }
        #expect(costs.seconds(rows: 6) < 0.03, "\(costs.seconds(rows: 6))")
        // The widest width kept, and beyond it (a server decoding many sequences): the line.
        costs.record(rows: StepCosts.widths, seconds: 0.05)
        #expect(costs.seconds(rows: StepCosts.widths) > 0 && costs.seconds(rows: StepCosts.widths + 8) > 0)
    }

    // MARK: - The decoder: several rows of logits per sequence

    /// A step that asks for the logits of every fed token of a sequence (what verification
    /// needs) gets the rows `forwardAll` computes for the same tokens.
    @Test func severalRowsPerSequenceMatchForwardAll() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-gqa-longrope").path)
        let pool = WorkerPool(threads: 2)
        let vocab = model.options.vocabSize
        let prompt: [Int32] = [5, 9, 14, 3, 22, 9, 14]
        let more: [Int32] = [3, 22, 9, 40]
        let reference = try Decoder(weights: model.weights, options: model.options, context: 32, sequences: 1, pool: pool)
        let all = try reference.forwardAll(prompt + more, from: 0)
        let d = try Decoder(weights: model.weights, options: model.options, context: 32, sequences: 2, pool: pool)
        _ = try d.forward(prompt, from: 0, sequence: 1)
        let items = more.enumerated().map { Decoder.BatchItem(sequence: 1, position: prompt.count + $0.offset, token: $0.element) }
        let rows = Array(try d.forward(batch: items, logitsFor: Array(items.indices), lengths: [1: 11]))
        #expect(rows.count == more.count * vocab)
        for r in 0..<more.count {
            let got = rows[(r * vocab)..<((r + 1) * vocab)]
            let want = all[((prompt.count + r) * vocab)..<((prompt.count + r + 1) * vocab)]
            let worst = zip(got, want).map { abs($0 - $1) }.max() ?? 0
            #expect(worst < 1e-3, "row \(r): \(worst)")
        }
        #expect((try? d.forward(batch: items, logitsFor: [0, 0])) == nil)  // one row asked twice
    }

    // MARK: - Tiny checkpoints: exact agreement at the edges of a step

    static func generate(
        _ generator: Generator, _ prompt: [Int32], mode: SpeculativeMode, maxTokens: Int, temperature: Double = 0,
        seed: Int? = nil, topLogprobs: Int = 0, isCancelled: @escaping () -> Bool = { false }, onToken: @escaping (GeneratedToken) -> Void = { _ in }
    ) throws -> (tokens: [Int32], summary: GenerationSummary) {
        var parameters = GenerationParameters()
        parameters.maxTokens = maxTokens
        var sampling = SamplingOptions()
        sampling.temperature = Float(temperature)
        sampling.seed = seed.map { UInt64($0) }
        parameters.sampling = sampling
        parameters.speculative = mode
        parameters.topLogprobs = topLogprobs
        var tokens: [Int32] = []
        let summary = try generator.run(prompt: prompt, parameters: parameters, isCancelled: isCancelled) {
            tokens.append($0.id)
            onToken($0)
        }
        return (tokens, summary)
    }

    /// A looping greedy continuation on random tiny weights: drafts are accepted, and the
    /// context ends the reply mid-draft at the same token as plain decoding; on the LongRoPE
    /// checkpoint (original context 16) drafts never cross into the long factors, so the
    /// switch recomputes the sequence exactly as plain decoding does.
    @Test(arguments: ["phi3-gqa-longrope", "gemma3-tiny", "phi3-mha"])
    func contextEndAndLongRoPEMatchPlainDecoding(_ name: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let prompt: [Int32] = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6]
        for context in [24, 40] {
            let plain = try Self.generate(Generator(model: model, context: context, threads: 2), prompt, mode: .off, maxTokens: 1000)
            let fast = try Self.generate(Generator(model: model, context: context, threads: 2), prompt, mode: .lookup, maxTokens: 1000)
            #expect(plain.summary.finishReason == fast.summary.finishReason)
            #expect(plain.tokens == fast.tokens, "\(name) at context \(context)")
            #expect(fast.tokens.count + prompt.count <= context)
            #expect(plain.summary.draftedTokens == 0)
        }
    }

    /// A request cancelled while its speculative steps run ends `cancelled`, its slot holding
    /// exactly the tokens it kept, so the same prompt afterwards (reusing the slot's prefix)
    /// generates what a fresh generator generates.
    /// With a draft model (the model itself, drafting forced: DraftModelTests) the step may also
    /// stop inside the draft model's steps; both models' slots resume from what they kept.
    @Test(arguments: [SpeculativeMode.lookup, .draft])
    func cancelledSpeculativeStepLeavesTheSlotConsistent(_ mode: SpeculativeMode) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("gemma3-tiny").path)
        let prompt: [Int32] = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7]
        let generator = try Generator(model: model, context: 96, threads: 2, draftModel: mode == .draft ? model : nil)
        if mode == .draft { generator.forcedDraftLength = 4 }
        var count = 0, checks = 0
        let first = try Self.generate(
            generator, prompt, mode: mode, maxTokens: 60,
            isCancelled: {
                // Past the 12th token: let the step start, then stop it between its layers.
                guard count >= 12 else { return false }
                checks += 1
                return checks >= 3
            }, onToken: { _ in count += 1 })
        #expect(first.summary.finishReason == .cancelled)
        #expect(generator.slots[0].tokens.count == generator.decoder.cache.counts[0])
        #expect(Array(generator.slots[0].tokens.prefix(prompt.count)) == prompt)
        let again = try Self.generate(generator, prompt, mode: mode, maxTokens: 40)
        let fresh = try Self.generate(Generator(model: model, context: 96, threads: 2), prompt, mode: .off, maxTokens: 40)
        #expect(again.tokens == fresh.tokens)
    }
}
