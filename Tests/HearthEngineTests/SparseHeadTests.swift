import Foundation
import HearthConstraints
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The output head under a grammar (``Generator/sparseHead``): only the 16-token groups holding
/// an allowed token are computed, and the tokens generated are exactly those of the full head
/// (each computed logit is the full head's bit for bit; the sampler never reads the others). On
/// tiny fixtures and the default model's 262k vocabulary, where most steps compute a small part.
@Suite(.serialized) struct SparseHeadTests {
    static let schema = """
        {"type": "object", "properties": {
          "name": {"type": "string", "maxLength": 12},
          "age": {"type": "integer", "minimum": 0, "maximum": 120},
          "scores": {"type": "array", "items": {"type": "number", "multipleOf": 0.5, "minimum": -10, "maximum": 10}, "maxItems": 6},
          "kind": {"enum": ["cat", "dog", "bird"]},
          "ok": {"type": "boolean"}},
         "required": ["name", "age", "scores", "kind", "ok"], "additionalProperties": false}
        """

    /// The ids of a seeded generation under the schema, and the generator's step figures.
    static func generate(
        _ model: TransformerModel, sparse: Bool, seed: UInt64, logprobs: Bool = false
    ) throws -> ([Int32], StepStatistics) {
        let generator = try Generator(model: model, context: 512, threads: 2, sequences: 1)
        generator.sparseHead = sparse
        let prompt = try model.tokenizer.encode("Describe a pet owner as JSON: ", addSpecialTokens: true)
        var parameters = GenerationParameters()
        parameters.maxTokens = 160
        parameters.sampling.temperature = 1.0
        parameters.sampling.seed = seed
        parameters.logprobs = logprobs  // as the server sets it: only when a client asks
        parameters.speculative = .off  // a step with drafts computes the whole head
        parameters.constraint = try model.compileConstraint(try JSONSchema.grammar(schema))
        var ids: [Int32] = []
        _ = try generator.run(prompt: prompt, parameters: parameters) { ids.append($0.id) }
        return (ids, generator.stepStatistics)
    }

    static func compare(_ model: TransformerModel, seeds: ClosedRange<UInt64>) throws {
        let groups = (model.options.vocabSize + 15) / 16
        for seed in seeds {
            let (full, plain) = try generate(model, sparse: false, seed: seed)
            let (sparse, figures) = try generate(model, sparse: true, seed: seed)
            #expect(sparse == full, "seed \(seed): the sparse head chose other tokens")
            #expect(plain.sparseHeadSteps == 0)
            // Most steps of this schema (keys, numbers, enums, booleans) need few groups.
            #expect(figures.sparseHeadSteps >= full.count / 2, "seed \(seed): \(figures.sparseHeadSteps) of \(full.count) steps sparse")
            #expect(figures.sparseHeadGroups < figures.sparseHeadSteps * groups, "seed \(seed)")
        }
        // Log-probabilities read every logit: the head stays whole.
        let (withLogprobs, figures) = try generate(model, sparse: true, seed: 1, logprobs: true)
        #expect(figures.sparseHeadSteps == 0 && !withLogprobs.isEmpty)
    }

    @Test(arguments: ["gemma3-tiny", "phi3-mha"])
    func fixturesChooseTheSameTokens(_ fixture: String) throws {
        try Self.compare(try TransformerModel(path: Fixtures.checkpoint(fixture).path), seeds: 1...4)
    }

    @Test func theDefaultModelChoosesTheSameTokens() throws {
        let path = Fixtures.root.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path
        try Self.compare(try TransformerModel(path: path, threads: 2), seeds: 1...2)
    }

    /// Logits outside the computed groups are −∞, inside they are the full head's.
    @Test func logitsOutsideTheGroupsAreMinusInfinity() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let decoder = try Decoder(weights: model.weights, options: model.options, context: 64, maxBatch: 4, pool: WorkerPool(threads: 2))
        let vocab = model.options.vocabSize
        var mask = [UInt64](repeating: 0, count: (vocab + 63) / 64)
        for id in [5, 200, 201, vocab - 1] { mask[id >> 6] |= 1 << UInt64(id & 63) }
        let tokens: [Int32] = [1, 15, 27, 300]
        let items = tokens.enumerated().map { Decoder.BatchItem(sequence: 0, position: $0.offset, token: $0.element) }
        let full = Array(try decoder.forward(batch: items, logitsFor: [3]))
        let part = Array(try decoder.forward(batch: items, logitsFor: [3], headMask: mask))
        #expect(decoder.lastHeadGroups == 3)
        let computed = Set([0, 12, (vocab - 1) / 16])
        for id in 0..<vocab {
            if computed.contains(id / 16) {
                #expect(part[id].bitPattern == full[id].bitPattern, "id \(id)")
            } else {
                #expect(part[id] == -.infinity, "id \(id)")
            }
        }
    }
}
