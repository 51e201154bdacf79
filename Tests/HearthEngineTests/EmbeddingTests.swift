import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Embeddings: pooled final hidden states against HF transformers (Tests/Fixtures/embeddings.json,
/// made by scripts/make_embedding_fixtures.py), independent of the batch, unit length, and
/// computed beside running generations without disturbing them.
@Suite struct EmbeddingTests {
    /// The reference file.
    struct ReferenceFile: Decodable {
        struct Input: Decodable {
            let name: String
            let text: String
            let input_ids: [Int32]
            let mean: [Float]
            let last: [Float]
        }
        let checkpoints: [String: [Input]]
    }

    static func reference() throws -> ReferenceFile {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("embeddings.json"))
        return try JSONDecoder().decode(ReferenceFile.self, from: data)
    }

    /// The f32 path's bound on 1 − cosine against transformers.
    static let referenceDistance: Double = 1e-4
    /// A vector alone and in a batch: cosine at least this.
    static let batchCosine: Double = 0.99999


    static func norm(_ v: [Float]) -> Double { v.reduce(0) { $0 + Double($1) * Double($1) }.squareRoot() }

    static func tokens(_ seed: Int, length: Int, vocab: Int) -> [Int32] {
        (0..<length).map { Int32((seed * 7919 + $0 * 104_729 + 13) % (vocab - 10) + 5) }
    }

    /// Mean and last-token vectors equal transformers' `last_hidden_state` pooled and
    /// normalised, with all inputs in one call; with `batch` 8 the longer inputs run in chunks
    /// (gemma3-tiny's sliding window of 8 then spans passes).
    @Test(arguments: ["phi3-mha", "llama-tiny", "gemma3-tiny"], [64, 8])
    func matchesTransformers(_ name: String, batch: Int) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let inputs = try #require(try Self.reference().checkpoints[name])
        for input in inputs where !input.text.isEmpty {
            #expect(try model.tokenizer.encode(input.text, addSpecialTokens: true) == input.input_ids, "\(input.name)")
        }
        let generator = try Generator(model: model, context: 128, threads: 2, batch: batch, kvType: .f32)
        for pooling in EmbeddingPooling.allCases {
            let vectors = try generator.embeddings(for: inputs.map(\.input_ids), pooling: pooling)
            #expect(vectors.count == inputs.count)
            for (vector, input) in zip(vectors, inputs) {
                let expected = pooling == .mean ? input.mean : input.last
                #expect(vector.count == model.options.hiddenSize)
                let distance = 1 - cosineSimilarity(vector, expected)
                #expect(distance <= Self.referenceDistance, "\(name)/\(input.name) \(pooling) batch \(batch): 1 − cos \(distance)")
            }
        }
    }

    /// A vector does not depend on what else is in the call: each input alone, and inside a
    /// call with other inputs of many lengths (several per pass, and longer than a pass).
    @Test(arguments: [("phi3-mha", nil), ("gemma3-tiny", nil), ("phi3-mha", DType.q4_0)] as [(String, DType?)])
    func vectorsDoNotDependOnTheBatch(_ name: String, _ quantize: DType?) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path, quantize: quantize)
        let vocab = model.options.vocabSize
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 16)
        let lengths = [1, 5, 12, 3, 40, 16, 7, 2, 29]
        let inputs = lengths.enumerated().map { Self.tokens($0.offset, length: $0.element, vocab: vocab) }
        for pooling in EmbeddingPooling.allCases {
            let together = try generator.embeddings(for: inputs, pooling: pooling)
            let reversed = try generator.embeddings(for: Array(inputs.reversed()), pooling: pooling)
            for (i, input) in inputs.enumerated() {
                let alone = try #require(try generator.embeddings(for: [input], pooling: pooling).first)
                let c = cosineSimilarity(alone, together[i])
                #expect(c >= Self.batchCosine, "\(name) input \(i) (\(input.count) tokens) \(pooling): cos \(c)")
                let r = cosineSimilarity(alone, reversed[inputs.count - 1 - i])
                #expect(r >= Self.batchCosine, "\(name) input \(i) reversed \(pooling): cos \(r)")
            }
        }
    }

    @Test func vectorsHaveUnitLengthAndPoolingsDiffer() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 32)
        let inputs = (0..<4).map { Self.tokens($0, length: 6 + 5 * $0, vocab: model.options.vocabSize) }
        let mean = try generator.embeddings(for: inputs, pooling: .mean)
        let last = try generator.embeddings(for: inputs, pooling: .last)
        #expect(generator.embeddingDimensions == model.options.hiddenSize)
        for (m, l) in zip(mean, last) {
            #expect(abs(Self.norm(m) - 1) < 1e-5 && abs(Self.norm(l) - 1) < 1e-5)
            #expect(cosineSimilarity(m, l) < 0.99, "mean and last pooling gave (almost) the same vector")
        }
        // Different inputs give different vectors.
        #expect(cosineSimilarity(mean[0], mean[1]) < 0.999)
    }

    /// Embeddings use a scratch cache: the conversation cached in the generator's slot is
    /// still there afterwards (a repeat of its prompt reuses it), and its logits are unchanged.
    @Test func leavesCachedConversationsAlone() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 16, kvType: .f32)
        let prompt = Self.tokens(3, length: 20, vocab: model.options.vocabSize)
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 4
        var first: [Int32] = []
        _ = try generator.run(prompt: prompt, parameters: parameters) { first.append($0.id) }
        let cached = generator.decoder.cache.counts
        _ = try generator.embeddings(for: [prompt, Array(prompt.prefix(7)), Self.tokens(9, length: 50, vocab: 1000)])
        #expect(generator.decoder.cache.counts == cached)
        var again: [Int32] = []
        let summary = try generator.run(prompt: prompt, parameters: parameters) { again.append($0.id) }
        #expect(again == first)
        #expect(summary.cachedPromptTokens == prompt.count - 1, "the slot's cached prompt was reused")
    }

    /// Embeddings computed while a generation runs on the same generator take turns with its
    /// decode steps and never touch its slot: the generation gives exactly what it gives
    /// alone (same steps, same kernels), and the vectors are those of a quiet generator.
    @Test func runsBesideAGeneration() async throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 16)
        let vocab = model.options.vocabSize
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 40
        parameters.topLogprobs = 1
        // Plain decoding: speculative steps verify as many rows as their timed cost says pays, so
        // two runs can take different step widths, whose kernels sum in different orders (the
        // log-probabilities then differ in the sixth digit; the tokens still agree).
        parameters.speculative = .off
        let prompt = Self.tokens(21, length: 9, vocab: vocab)
        let inputs = (0..<12).map { Self.tokens($0, length: 4 + 3 * $0, vocab: vocab) }
        var alone: [(Int32, Float)] = []
        _ = try generator.run(prompt: prompt, parameters: parameters) { alone.append(($0.id, $0.logprob)) }
        let aloneVectors = try generator.embeddings(for: inputs)
        generator.reset()

        let p = parameters
        @Sendable func generate() async throws -> [(Int32, Float)] {
            var tokens: [(Int32, Float)] = []
            for try await event in generator.generate(prompt: prompt, parameters: p) {
                if case .token(let token) = event { tokens.append((token.id, token.logprob)) }
            }
            return tokens
        }
        @Sendable func embedThrice() async throws -> [[[Float]]] {
            try await withThrowingTaskGroup(of: [[Float]].self) { group in
                for _ in 0..<3 {
                    group.addTask { try await Self.onThread { try generator.embeddings(for: inputs) } }
                }
                var all: [[[Float]]] = []
                for try await v in group { all.append(v) }
                return all
            }
        }
        async let generated = generate()
        async let vectors = embedThrice()
        let together = try await generated
        #expect(together.map(\.0) == alone.map(\.0))
        #expect(zip(together, alone).allSatisfy { pair in abs(pair.0.1 - pair.1.1) <= 1e-6 })
        let calls = try await vectors
        #expect(calls.count == 3)
        for call in calls {
            for (v, expected) in zip(call, aloneVectors) { #expect(cosineSimilarity(v, expected) >= Self.batchCosine) }
        }
    }

    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    @Test func refusesBadInput() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 32, threads: 2, batch: 8)
        func code(_ inputs: [[Int32]]) -> EngineError.Code? {
            do {
                _ = try generator.embeddings(for: inputs)
                return nil
            } catch {
                return (error as? EngineError)?.code
            }
        }
        #expect(code([]) == .invalidOption)
        #expect(code([[5, 6], []]) == .invalidOption)
        #expect(code([[5, 6], [Int32](repeating: 7, count: 33)]) == .contextLengthExceeded)
        #expect(code([[5, Int32(model.options.vocabSize)]]) == .invalidToken)
        #expect(code([[5, -1]]) == .invalidToken)
        // Exactly the context fits.
        #expect(code([[Int32](repeating: 7, count: 32)]) == nil)
        // Cancelled before the first pass.
        #expect(throws: EngineError.self) { _ = try generator.embeddings(for: [[5, 6]], isCancelled: { true }) }
    }

    /// The plan: short inputs whole, shortest first, several per pass within the token budget
    /// and the scratch bound; long inputs alone in chunks at multiples of the batch.
    @Test func planCutsEveryInputTheSameWay() {
        let lengths = [3, 70, 1, 16, 9, 16, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 14]
        let plan = EmbeddingPlan(lengths: lengths, maxBatch: 16)
        var covered = [[Int]](repeating: [], count: lengths.count)
        for pass in plan.passes {
            #expect(pass.runs.reduce(0) { $0 + $1.end - $1.start } <= 16)
            #expect(pass.runs.count * pass.capacity <= 2 * 16 || pass.runs.count == 1)
            for run in pass.runs {
                if lengths[run.sequence] <= 16 {
                    #expect(run.start == 0 && run.end == lengths[run.sequence], "short inputs run whole")
                } else {
                    #expect(pass.runs.count == 1 && run.start % 16 == 0, "long inputs run alone, cut at the batch")
                }
                covered[run.sequence] += Array(run.start..<run.end)
            }
        }
        for (i, positions) in covered.enumerated() { #expect(positions == Array(0..<lengths[i])) }
        // The twelve 1-token inputs share one pass (the 3-token one would make the scratch
        // 13 × 3 > 32 positions); then 3+9, 14, 16, 16, and the 70 in five chunks.
        #expect(plan.passes.first?.runs.count == 12)
        #expect(plan.passes.map(\.runs.count) == [12, 2, 1, 1, 1, 1, 1, 1, 1, 1])
    }
}
