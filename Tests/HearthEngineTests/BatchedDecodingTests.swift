import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Many sequences over one model: a mixed batch gives each sequence what it gets alone, the
/// scheduler keeps sequences apart (cancellation, queueing, shared prefixes), per family
/// (multi-head, sliding windows, LongRoPE) and on quantized weights (the small-batch kernels).
@Suite struct BatchedDecodingTests {
    /// Fixtures covering the pass's options: plain MHA, Gemma 3's sliding windows and
    /// sandwich norms, Phi-3's LongRoPE with grouped-query attention; the first also quantized.
    static let cases: [(String, DType?)] = [
        ("phi3-mha", nil), ("phi3-mha", .q4_0), ("gemma3-tiny", nil), ("phi3-gqa-longrope", .q8_0),
    ]

    static func model(_ name: String, _ quantize: DType?) throws -> TransformerModel {
        try TransformerModel(path: Fixtures.checkpoint(name).path, quantize: quantize)
    }

    static func prompt(_ seed: Int, length: Int, vocab: Int) -> [Int32] {
        (0..<length).map { Int32((seed * 7919 + $0 * 104_729 + 13) % (vocab - 10) + 5) }
    }

    /// The decoder directly: one step holding a prompt chunk of one sequence and decode tokens
    /// of two others gives each the logits it gets when run alone (to rounding: the batch and
    /// single-token kernels sum in different orders).
    @Test(arguments: cases)
    func mixedBatchMatchesSeparateRuns(_ name: String, _ quantize: DType?) throws {
        let model = try Self.model(name, quantize)
        let vocab = model.options.vocabSize
        let pool = WorkerPool(threads: 2)
        let prompts = (0..<3).map { Self.prompt($0, length: 5 + 4 * $0, vocab: vocab) }
        let next: [Int32] = [7, 11, 13]

        // Alone: each sequence in its own single-slot decoder: prompt, then one more token.
        var alone: [[Float]] = []
        for (s, prompt) in prompts.enumerated() {
            let d = try Decoder(weights: model.weights, options: model.options, context: 64, maxBatch: 16, pool: pool)
            if s == 0 {
                alone.append(Array(try d.forward(prompt + [next[s]], from: 0)))
            } else {
                _ = try d.forward(prompt, from: 0)
                alone.append(Array(try d.forward([next[s]], from: prompt.count)))
            }
        }
        // Together: sequences 1 and 2 prefilled first; then one step with one decode token each
        // for sequences 1 and 2 (generated rows: 16-bit under the default `.mixed`, as when alone)
        // and sequence 0's whole prompt (plus its next token).
        let d = try Decoder(
            weights: model.weights, options: model.options, context: 64, maxBatch: 16, sequences: 3, pool: pool)
        for s in 1...2 { _ = try d.forward(prompts[s], from: 0, sequence: s) }
        var items: [Decoder.BatchItem] = []
        items.append(.init(sequence: 1, position: prompts[1].count, token: next[1]))
        items.append(.init(sequence: 2, position: prompts[2].count, token: next[2]))
        for (i, token) in (prompts[0] + [next[0]]).enumerated() { items.append(.init(sequence: 0, position: i, token: token)) }
        let rows = [0, 1, items.count - 1]  // sequence 1, 2, 0
        let logits = Array(try d.forward(batch: items, logitsFor: rows, generatedRows: 2))
        for (row, s) in [1, 2, 0].enumerated() {
            let got = logits[(row * vocab)..<((row + 1) * vocab)]
            let scale = alone[s].map(abs).max() ?? 1
            let worst = zip(got, alone[s]).map { abs($0 - $1) }.max() ?? 0
            #expect(worst <= 2e-3 * max(1, scale), "\(name) \(String(describing: quantize)) sequence \(s): \(worst)")
        }
        #expect(d.cache.counts == [prompts[0].count + 1, prompts[1].count + 1, prompts[2].count + 1])
    }

    /// A batch longer than ``Decoder/ffnRows`` runs its MLP in chunks of rows (each chunk's
    /// gate | up rows in one buffer): 140 prompt tokens in one batch (two chunks, the second
    /// partial) give every position the logits it gets in two batches of 70 (one chunk each;
    /// prompt rows both ways, so the same activation precision).
    @Test(arguments: cases)
    func mlpInChunksMatchesShorterBatches(_ name: String, _ quantize: DType?) throws {
        let model = try Self.model(name, quantize)
        let vocab = model.options.vocabSize
        let pool = WorkerPool(threads: 2)
        let tokens = Self.prompt(3, length: 140, vocab: vocab)
        let whole = try Decoder(weights: model.weights, options: model.options, context: 160, maxBatch: 160, pool: pool)
        #expect(whole.ffnRows < tokens.count)
        let batched = Array(try whole.forwardAll(tokens, from: 0))
        let single = try Decoder(weights: model.weights, options: model.options, context: 160, maxBatch: 70, pool: pool)
        #expect(single.ffnRows >= 70)
        let stepped = Array(try single.forwardAll(tokens, from: 0))
        #expect(batched.count == tokens.count * vocab && stepped.count == batched.count)
        for t in [0, 1, 69, 70, 127, 128, 139] {
            let got = batched[(t * vocab)..<((t + 1) * vocab)], want = stepped[(t * vocab)..<((t + 1) * vocab)]
            let scale = want.map(abs).max() ?? 1
            let worst = zip(got, want).map { abs($0 - $1) }.max() ?? 0
            #expect(worst <= 2e-3 * max(1, scale), "\(name) \(String(describing: quantize)) position \(t): \(worst)")
        }
    }

    /// Malformed batches are typed errors and leave the decoder usable.
    @Test func malformedBatchesAreRefused() throws {
        let model = try Self.model("phi3-mha", nil)
        let d = try Decoder(
            weights: model.weights, options: model.options, context: 8, maxBatch: 4, sequences: 2,
            pool: WorkerPool(threads: 1))
        func refused(_ items: [Decoder.BatchItem], _ rows: [Int] = []) -> Bool {
            (try? d.forward(batch: items, logitsFor: rows)) == nil
        }
        #expect(refused([]))
        #expect(refused([.init(sequence: 2, position: 0, token: 1)]))  // no such slot
        #expect(refused([.init(sequence: 0, position: 3, token: 1)]))  // a gap
        #expect(refused([.init(sequence: 0, position: 0, token: -1)]))
        #expect(refused((0..<5).map { .init(sequence: 0, position: $0, token: 1) }))  // over maxBatch
        #expect(refused([.init(sequence: 0, position: 0, token: 1), .init(sequence: 1, position: 0, token: 1),
                         .init(sequence: 0, position: 1, token: 1)]))  // not adjacent
        #expect(refused([.init(sequence: 0, position: 0, token: 1), .init(sequence: 0, position: 1, token: 1)], [1, 1]))
        #expect(refused([.init(sequence: 0, position: 0, token: 1)], [3]))
        _ = try d.forward([1, 2, 3, 4], from: 0, sequence: 1)
        _ = try d.forward([1, 2, 3, 4], from: 4, sequence: 1)
        #expect(refused([.init(sequence: 1, position: 8, token: 1)]))  // past the context
        #expect((try? d.forward(batch: [.init(sequence: 0, position: 0, token: 1)], logitsFor: [0])) != nil)
    }

    /// Greedy continuations, each run alone and then all at once through the scheduler,
    /// compared up to (not including) the first step where the alone run's two best tokens are
    /// within `nearTie` nats (there summation order may decide, and everything after depends on it).
    static let nearTie: Float = 1e-2

    func greedy(_ maxTokens: Int, seed: UInt64? = nil) -> GenerationParameters {
        var p = GenerationParameters()
        p.maxTokens = maxTokens
        p.sampling.temperature = 0
        p.topLogprobs = 2
        return p
    }

    /// Tokens and the margin between the two best log-probabilities at each step.
    func collect(_ stream: AsyncThrowingStream<GenerationEvent, Error>) async throws -> (ids: [Int32], margins: [Float], summary: GenerationSummary?) {
        var ids: [Int32] = [], margins: [Float] = []
        var summary: GenerationSummary?
        for try await event in stream {
            switch event {
            case .token(let t):
                ids.append(t.id)
                margins.append(t.topLogprobs.count == 2 ? t.topLogprobs[0].logprob - t.topLogprobs[1].logprob : .infinity)
            case .done(let s): summary = s
            }
        }
        return (ids, margins, summary)
    }

    /// How many leading tokens must agree: those before the first near-tie.
    func comparable(_ margins: [Float]) -> Int {
        margins.firstIndex { $0 < Self.nearTie } ?? margins.count
    }

    @Test(arguments: cases)
    func batchGivesEachSequenceItsOwnTokens(_ name: String, _ quantize: DType?) async throws {
        let model = try Self.model(name, quantize)
        let prompts = (0..<5).map { Self.prompt($0 + 1, length: 3 + 5 * $0, vocab: model.options.vocabSize) }
        var alone: [(ids: [Int32], margins: [Float], summary: GenerationSummary?)] = []
        let single = try Generator(model: model, context: 96, threads: 2, batch: 16)
        for prompt in prompts {
            single.reset()
            alone.append(try await collect(single.generate(prompt: prompt, parameters: greedy(20))))
        }
        // Four slots for five requests: the fifth waits, then joins while the others decode.
        let batched = try Generator(model: model, context: 96, threads: 2, batch: 16, sequences: 4)
        batched.interleavedPrefillTokens = 4
        let together = try await withThrowingTaskGroup(of: (Int, [Int32]).self) { group in
            for (i, prompt) in prompts.enumerated() {
                let stream = batched.generate(prompt: prompt, parameters: greedy(20))
                group.addTask { (i, try await collect(stream).ids) }
            }
            var result = [[Int32]](repeating: [], count: prompts.count)
            for try await (i, ids) in group { result[i] = ids }
            return result
        }
        var compared = 0
        for i in prompts.indices {
            let n = comparable(alone[i].margins)
            compared += n
            #expect(Array(together[i].prefix(n)) == Array(alone[i].ids.prefix(n)), "\(name) sequence \(i)")
            #expect(together[i].count == alone[i].ids.count || n < alone[i].ids.count, "\(name) sequence \(i) length")
        }
        #expect(compared >= prompts.count * 5, "too few clear steps to compare (\(compared))")
        #expect(batched.load.running == 0 && batched.load.waiting == 0)
    }

    /// A seeded sampled request gives the same text alone or in a batch. (The batch's logits
    /// differ from the lone run's by rounding, ~1e-6 relative; a draw lands that close to a
    /// boundary between two tokens' probability ranges about once in a million steps.)
    @Test func seededSamplingIsTheSameInABatch() async throws {
        let model = try Self.model("phi3-mha", nil)
        var p = GenerationParameters()
        p.maxTokens = 12
        p.sampling.temperature = 0.9
        p.sampling.seed = 42
        let prompt = Self.prompt(9, length: 6, vocab: model.options.vocabSize)
        let alone = try await collect(try Generator(model: model, context: 64, threads: 2).generate(prompt: prompt, parameters: p)).ids
        let batched = try Generator(model: model, context: 64, threads: 2, batch: 16, sequences: 3)
        var other = p
        other.sampling.seed = 7
        let ids = try await withThrowingTaskGroup(of: [Int32].self) { group in
            let mine = batched.generate(prompt: prompt, parameters: p)
            let a = batched.generate(prompt: Self.prompt(3, length: 9, vocab: model.options.vocabSize), parameters: other)
            let b = batched.generate(prompt: prompt, parameters: other)
            group.addTask { try await collect(a).ids }
            group.addTask { try await collect(b).ids }
            let result = try await collect(mine).ids
            for try await _ in group {}
            return result
        }
        #expect(ids == alone)
    }

    /// Cancelling one sequence mid-batch ends it `cancelled` within a step and frees its slot;
    /// the others finish with the tokens they get alone.
    @Test func cancellingOneSequenceLeavesTheOthers() async throws {
        let model = try Self.model("phi3-mha", nil)
        let prompts = (0..<3).map { Self.prompt($0 + 20, length: 6, vocab: model.options.vocabSize) }
        let single = try Generator(model: model, context: 96, threads: 2, batch: 16)
        var alone: [[Int32]] = [], margins: [[Float]] = []
        for prompt in prompts {
            single.reset()
            let r = try await collect(single.generate(prompt: prompt, parameters: greedy(30)))
            alone.append(r.ids)
            margins.append(r.margins)
        }
        let batched = try Generator(model: model, context: 96, threads: 2, batch: 16, sequences: 3)
        let cancelledFlag = CancellationFlag()
        let results = try await withThrowingTaskGroup(of: (Int, [Int32], FinishReason?).self) { group in
            for (i, prompt) in prompts.enumerated() {
                if i == 1 {
                    // Stops after three tokens through `run`'s cancellation check.
                    group.addTask {
                        var ids: [Int32] = []
                        let summary = try batched.run(
                            prompt: prompt, parameters: greedy(30), isCancelled: { cancelledFlag.isSet },
                            onToken: { token in
                                ids.append(token.id)
                                if ids.count == 3 { cancelledFlag.set() }
                            })
                        return (i, ids, summary.finishReason)
                    }
                } else {
                    let stream = batched.generate(prompt: prompt, parameters: greedy(30))
                    group.addTask {
                        let r = try await collect(stream)
                        return (i, r.ids, r.summary?.finishReason)
                    }
                }
            }
            var out: [(Int, [Int32], FinishReason?)] = []
            for try await r in group { out.append(r) }
            return out.sorted { $0.0 < $1.0 }
        }
        #expect(results[1].2 == .cancelled)
        #expect(results[1].1.count <= 4, "cancellation took more than one step: \(results[1].1.count) tokens")
        for i in [0, 2] {
            #expect(results[i].2 != .cancelled)
            let n = comparable(margins[i])
            #expect(Array(results[i].1.prefix(n)) == Array(alone[i].prefix(n)))
        }
        #expect(batched.load.running == 0)
        // The freed slot serves the next request.
        let again = try await collect(batched.generate(prompt: prompts[1], parameters: greedy(5)))
        #expect(again.ids == Array(alone[1].prefix(5)))
    }

    /// A full context is a typed refusal or a `length` finish, never an overwrite; more
    /// requests than slots queue and all complete.
    @Test func fullCacheAndQueueing() async throws {
        let model = try Self.model("phi3-mha", nil)
        let generator = try Generator(model: model, context: 16, threads: 2, batch: 8, sequences: 2)
        let tooLong = Self.prompt(1, length: 16, vocab: model.options.vocabSize)
        await #expect(throws: EngineError.self) { _ = try await collect(generator.generate(prompt: tooLong, parameters: greedy(4))) }
        // Runs into the end of its slot: stops with `length` at the context.
        let long = try await collect(generator.generate(prompt: Array(tooLong.prefix(12)), parameters: greedy(50)))
        #expect(long.ids.count <= 4)
        #expect(long.summary?.finishReason == .length || (long.summary?.finishReason == .stop && long.ids.count < 4))
        // Six requests on two slots.
        let prompts = (0..<6).map { Self.prompt($0 + 30, length: 5, vocab: model.options.vocabSize) }
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for prompt in prompts {
                let stream = generator.generate(prompt: prompt, parameters: greedy(6))
                group.addTask { try await collect(stream).ids.count }
            }
            var all: [Int] = []
            for try await c in group { all.append(c) }
            return all
        }
        #expect(counts.count == 6 && counts.allSatisfy { (1...6).contains($0) })
        #expect(generator.sequences == 2)
        #expect(generator.cacheBytes == 2 * (try KVCache(layers: model.options.layerCount, capacity: 16,
            width: model.options.kvHeadCount * model.options.headDim)).byteCount)
        #expect(throws: EngineError.self) { _ = try Generator(model: model, context: 16, batch: 4, sequences: 5) }
    }

    /// A prompt prefix held by another (busy) slot is copied, not recomputed, and gives the
    /// same tokens as computing it.
    @Test func sharedPrefixIsCopiedAcrossSlots() async throws {
        let model = try Self.model("phi3-mha", nil)
        let vocab = model.options.vocabSize
        let system = Self.prompt(5, length: 24, vocab: vocab)
        let first = system + Self.prompt(6, length: 4, vocab: vocab)
        let second = system + Self.prompt(7, length: 3, vocab: vocab)
        let single = try Generator(model: model, context: 96, threads: 2, batch: 16)
        let expected = try await collect(single.generate(prompt: second, parameters: greedy(8)))

        let generator = try Generator(model: model, context: 96, threads: 2, batch: 16, sequences: 2)
        // The first conversation keeps its slot busy while the second arrives.
        let slow = generator.generate(prompt: first, parameters: greedy(40))
        var iterator = slow.makeAsyncIterator()
        _ = try await iterator.next()
        let got = try await collect(generator.generate(prompt: second, parameters: greedy(8)))
        while try await iterator.next() != nil {}
        #expect(got.summary?.cachedPromptTokens == system.count)
        let n = comparable(expected.margins)
        #expect(Array(got.ids.prefix(n)) == Array(expected.ids.prefix(n)))
    }
}
