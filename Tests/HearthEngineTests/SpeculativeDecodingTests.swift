import Foundation
import HearthKernels
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// Speculative decoding (prompt lookup): drafts are verified by the sampler itself, so the
/// tokens are plain decoding's — greedy output equals plain greedy output up to the first
/// near-tie, sampled output keeps its distribution (and, seed for seed, its draws), and a
/// speculative step cancelled between layers, cut short by the context or crossing LongRoPE's
/// original context leaves the sequence exactly where plain decoding would.
@Suite struct SpeculativeDecodingTests {
    // MARK: - The n-gram index against a search written from the definition

    /// The latest earlier occurrence of the longest suffix of 4 … 2 tokens, found by scanning.
    static func referenceDrafts(_ history: [Int32], limit: Int) -> [Int32] {
        let count = history.count
        for n in stride(from: 4, through: 2, by: -1) where count > n {
            let suffix = Array(history[(count - n)...])
            for f in stride(from: count - 1, through: n, by: -1) where Array(history[(f - n)..<f]) == suffix {
                return Array(history[f..<min(count, f + limit)])
            }
        }
        return []
    }

    /// On random sequences over small alphabets (many repeats), grown token by token, the
    /// incremental index proposes exactly what a scan from the definition finds.
    @Test func lookupMatchesAScanOfTheHistory() {
        var rng = SpeculationTestRandom(seed: 7)
        var proposals = 0
        for alphabet in [2, 3, 5, 40] {
            var lookup = PromptLookup()
            var history: [Int32] = []
            for _ in 0..<400 {
                history.append(Int32(rng.next() % UInt64(alphabet)))
                let limit = Int(rng.next() % 9) + 1
                let got = lookup.drafts(history, limit: limit)
                #expect(got == Self.referenceDrafts(history, limit: limit), "alphabet \(alphabet) at \(history.count)")
                proposals += got.isEmpty ? 0 : 1
            }
        }
        #expect(proposals > 500)
    }

    /// The draft length maximises expected tokens per second: long drafts when they are accepted
    /// and rows are cheap, none (and a pause) when rows are dear and drafts are rejected.
    @Test func draftLengthFollowsAcceptanceAndCost() {
        var cheap = StepCosts()
        for _ in 0..<20 {
            cheap.record(rows: 1, seconds: 0.010)
            cheap.record(rows: 9, seconds: 0.0108)
        }
        var dear = StepCosts()
        for _ in 0..<20 {
            dear.record(rows: 1, seconds: 0.010)
            dear.record(rows: 9, seconds: 0.050)
        }
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

    // MARK: - The decoder: several rows of logits per sequence

    /// A step that asks for the logits of every fed token of a sequence (what verification
    /// needs) gets the rows `forwardAll` computes for the same tokens.
    @Test func severalRowsPerSequenceMatchForwardAll() throws {
        let model = try LanguageModel(path: Fixtures.checkpoint("phi3-gqa-longrope").path)
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
        let model = try LanguageModel(path: Fixtures.checkpoint(name).path)
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
    @Test func cancelledSpeculativeStepLeavesTheSlotConsistent() throws {
        let model = try LanguageModel(path: Fixtures.checkpoint("gemma3-tiny").path)
        let prompt: [Int32] = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7]
        let generator = try Generator(model: model, context: 96, threads: 2)
        var count = 0, checks = 0
        let first = try Self.generate(
            generator, prompt, mode: .lookup, maxTokens: 60,
            isCancelled: {
                // Past the 12th token: let the step start, then stop it between its layers.
                guard count >= 12 else { return false }
                checks += 1
                return checks >= 3
            }, onToken: { _ in count += 1 })
        #expect(first.summary.finishReason == .cancelled)
        #expect(generator.slots[0].tokens.count == generator.decoder.cache.counts[0])
        #expect(Array(generator.slots[0].tokens.prefix(prompt.count)) == prompt)
        let again = try Self.generate(generator, prompt, mode: .lookup, maxTokens: 40)
        let fresh = try Self.generate(Generator(model: model, context: 96, threads: 2), prompt, mode: .off, maxTokens: 40)
        #expect(again.tokens == fresh.tokens)
        #expect(again.summary.acceptedDraftTokens > 0)
    }

    // MARK: - The real model

    static let defaultModel = Fixtures.root.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path

    /// Input-grounded prompts (the reply repeats the prompt's text).
    static let groundedPrompts = [
        "Correct the spelling in this sentence and return it: The quick brown fox jumpd over the lazy dog and ran thru the forest to it's home.",
        "Repeat this list exactly, one item per line: apples, bread, cheese, dates, eggs, flour, grapes, honey.",
        "Rename the variable total to sum in this code and return the code:\nvar total = 0\nfor x in values { total += x }\nprint(total)",
    ]

    /// Greedy: the speculative reply equals plain greedy decoding up to the first step whose
    /// two best tokens are within 0.1 nats (there batch order may decide), drafts are accepted,
    /// and at least 60 steps are compared over the prompts.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: defaultModel), "the default model is not installed"))
    func greedyEqualsPlainGreedyBeforeTheFirstNearTie() throws {
        let model = try LanguageModel(path: Self.defaultModel)
        let generator = try Generator(model: model, context: 1024, threads: 2)
        var compared = 0, accepted = 0
        for text in Self.groundedPrompts {
            let prompt = try model.chatPrompt([ChatTurn(role: "user", content: text)])
            var margins: [Float] = []
            let plain = try Self.generate(
                generator, prompt, mode: .off, maxTokens: 48, topLogprobs: 2,
                onToken: { token in
                    let top = token.topLogprobs.map { $0.logprob }
                    margins.append(top.count == 2 ? top[0] - top[1] : .infinity)
                })
            let fast = try Self.generate(generator, prompt, mode: .lookup, maxTokens: 48)
            let clear = margins.firstIndex { $0 < 0.1 } ?? margins.count
            #expect(Array(fast.tokens.prefix(clear)) == Array(plain.tokens.prefix(clear)), "\(text)")
            compared += clear
            accepted += fast.summary.acceptedDraftTokens
        }
        #expect(compared >= 60)
        #expect(accepted >= 20)
    }

    /// Sampling: with a seed, each speculative run draws what the plain run draws (drafts are
    /// accepted only when the sampler picks them, one draw per token either way); and over
    /// independent seeds the generated tokens' frequencies agree with plain sampling's by a
    /// two-sample χ² test (p > 0.001), so drafting does not pull the output toward the drafts.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: defaultModel), "the default model is not installed"))
    func samplingKeepsItsDrawsAndItsDistribution() throws {
        let model = try LanguageModel(path: Self.defaultModel)
        let generator = try Generator(model: model, context: 512, threads: 2)
        let prompt = try model.chatPrompt([ChatTurn(role: "user", content: Self.groundedPrompts[1])])
        var same = 0, accepted = 0
        var counts: [[Int32: Int]] = [[:], [:]]
        let runs = 8, length = 16
        for seed in 0..<runs {
            let plain = try Self.generate(generator, prompt, mode: .off, maxTokens: length, temperature: 0.8, seed: seed)
            let fast = try Self.generate(generator, prompt, mode: .lookup, maxTokens: length, temperature: 0.8, seed: seed)
            if plain.tokens == fast.tokens { same += 1 }
            accepted += fast.summary.acceptedDraftTokens
            // Independent samples for the distribution test: plain on this seed, speculative on another.
            let other = try Self.generate(generator, prompt, mode: .lookup, maxTokens: length, temperature: 0.8, seed: 1000 + seed)
            for t in plain.tokens { counts[0][t, default: 0] += 1 }
            for t in other.tokens { counts[1][t, default: 0] += 1 }
        }
        // Float differences between a batched and a single-row step can move a draw that lands
        // within rounding of a boundary of the cumulative distribution: allow one such run.
        #expect(same >= runs - 1, "\(same) of \(runs) seeds drew the same tokens")
        #expect(accepted >= 10)
        let statistic = Self.chiSquared(counts[0], counts[1])
        #expect(statistic.p > 0.001, "χ² \(statistic.value) with \(statistic.df) degrees of freedom")
    }

    /// Two-sample χ² over the categories with at least 5 expected in both samples (the rest pooled).
    static func chiSquared(_ a: [Int32: Int], _ b: [Int32: Int]) -> (value: Double, df: Int, p: Double) {
        let na = Double(a.values.reduce(0, +)), nb = Double(b.values.reduce(0, +))
        var cells: [(Double, Double)] = []
        var rest = (0.0, 0.0)
        for key in Set(a.keys).union(b.keys) {
            let x = Double(a[key] ?? 0), y = Double(b[key] ?? 0)
            if (x + y) * min(na, nb) / (na + nb) >= 5 { cells.append((x, y)) } else { rest = (rest.0 + x, rest.1 + y) }
        }
        if rest.0 + rest.1 > 0 { cells.append(rest) }
        var value = 0.0
        for (x, y) in cells {
            let total = x + y
            let ea = total * na / (na + nb), eb = total * nb / (na + nb)
            value += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb
        }
        let df = max(1, cells.count - 1)
        return (value, df, chiSquaredSurvival(value, df))
    }

    /// P(χ²_df > x) by the Wilson–Hilferty normal approximation (ample for a 0.001 threshold).
    static func chiSquaredSurvival(_ x: Double, _ df: Int) -> Double {
        let k = Double(df)
        let z = (pow(x / k, 1.0 / 3) - (1 - 2 / (9 * k))) / (2 / (9 * k)).squareRoot()
        return 0.5 * erfc(z / 2.0.squareRoot())
    }
}

/// A small deterministic generator for test data.
struct SpeculationTestRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
