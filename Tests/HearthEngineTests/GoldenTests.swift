import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// The forward pass against HF transformers' logits and greedy continuations
/// (Tests/Fixtures, made by scripts/make_reference_fixtures.py).
@Suite struct GoldenTests {
    /// Tolerance on the f32 path (weights in F32/F16/BF16 are upcast exactly).
    static let tolerance: Float = 1e-4

    @Test(arguments: Fixtures.allCheckpoints)
    func logitsMatchTransformers(_ name: String) throws {
        let model = try LanguageModel(path: Fixtures.checkpoint(name).path)
        let reference = try Fixtures.reference(name)
        for batch in [1, 7, 64] {
            let generator = try Generator(model: model, context: 128, threads: 2, batch: batch, kvType: .f32)
            for prompt in reference.prompts {
                if !prompt.text.isEmpty {
                    #expect(try model.tokenizer.encode(prompt.text, addSpecialTokens: true) == prompt.input_ids)
                }
                let logits = try generator.logits(for: prompt.input_ids)
                let vocab = model.options.vocabSize
                var worst: Float = 0
                for (position, expected) in prompt.logits.enumerated() {
                    #expect(expected.count == vocab)
                    for (i, value) in expected.enumerated() {
                        worst = max(worst, abs(logits[position * vocab + i] - value))
                    }
                }
                #expect(worst <= Self.tolerance, "\(name)/\(prompt.name) batch \(batch): max |Δlogit| \(worst)")
            }
        }
    }

    /// The default f16 KV cache stays close to the reference (keys/values rounded to 11 bits).
    @Test(arguments: Fixtures.phi3Checkpoints)
    func f16CacheStaysClose(_ name: String) throws {
        let model = try LanguageModel(path: Fixtures.checkpoint(name).path)
        let generator = try Generator(model: model, context: 128, threads: 2, kvType: .f16)
        for prompt in try Fixtures.reference(name).prompts {
            let logits = try generator.logits(for: prompt.input_ids)
            var worst: Float = 0
            for (position, expected) in prompt.logits.enumerated() {
                for (i, value) in expected.enumerated() {
                    worst = max(worst, abs(logits[position * model.options.vocabSize + i] - value))
                }
            }
            #expect(worst <= 0.05, "\(name)/\(prompt.name): max |Δlogit| \(worst)")
        }
    }

    @Test(arguments: Fixtures.allCheckpoints)
    func greedyMatchesTransformers(_ name: String) throws {
        let model = try LanguageModel(path: Fixtures.checkpoint(name).path)
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 8, kvType: .f32)
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 16
        for prompt in try Fixtures.reference(name).prompts {
            var ids: [Int32] = []
            let summary = try generator.run(prompt: prompt.input_ids, parameters: parameters) { ids.append($0.id) }
            #expect(ids == prompt.greedy, "\(name)/\(prompt.name)")
            #expect((summary.finishReason == .stop) == prompt.greedy_stopped_on_eos)
        }
    }

    @Test func eosSetIsTheUnionOfAllConfigs() throws {
        let model = try LanguageModel(path: Fixtures.checkpoint("phi3-mha").path)
        // config.json: 1000; generation_config.json: 1000, 1007; tokenizer_config.json: <|endoftext|>.
        #expect(model.eosIDs == [1000, 1007])
    }

    @Test func kvReuseGivesTheSameTokens() throws {
        let model = try LanguageModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 1)
        let prompt = try Fixtures.reference("phi3-mha").prompts[0]
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 8
        var first: [Int32] = []
        _ = try generator.run(prompt: prompt.input_ids, parameters: parameters) { first.append($0.id) }
        // Second request extends the first: only the new tokens are computed.
        var second: [Int32] = []
        let summary = try generator.run(prompt: prompt.input_ids + first, parameters: parameters) { second.append($0.id) }
        #expect(summary.cachedPromptTokens == prompt.input_ids.count + first.count - 1)
        #expect(Array(first + second).starts(with: prompt.greedy.prefix(16)))
    }

    @Test func seededSamplingIsReproducible() throws {
        let model = try LanguageModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 2)
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 1.0
        parameters.sampling.seed = 42
        parameters.maxTokens = 12
        let prompt = try Fixtures.reference("phi3-mha").prompts[1].input_ids
        var a: [Int32] = [], b: [Int32] = []
        _ = try generator.run(prompt: prompt, parameters: parameters) { a.append($0.id) }
        generator.reset()
        _ = try generator.run(prompt: prompt, parameters: parameters) { b.append($0.id) }
        #expect(a == b)
        parameters.sampling.seed = 43
        var c: [Int32] = []
        _ = try generator.run(prompt: prompt, parameters: parameters) { c.append($0.id) }
        #expect(a != c)
    }

    @Test func stopStringsEndGeneration() throws {
        let model = try LanguageModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 1)
        let prompt = try Fixtures.reference("phi3-mha").prompts[0]
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 16
        var full = ""
        _ = try generator.run(prompt: prompt.input_ids, parameters: parameters) { full += $0.text }
        // Stop on a piece of text from the middle of the greedy continuation.
        let chars = Array(full)
        let stop = String(chars[(chars.count / 2)..<(chars.count / 2 + 3)])
        parameters.stop = [stop]
        var text = ""
        let summary = try generator.run(prompt: prompt.input_ids, parameters: parameters) { text += $0.text }
        #expect(summary.finishReason == .stop)
        #expect(!text.contains(stop))
        #expect(full.hasPrefix(text))
        #expect(full.range(of: stop)?.lowerBound == full.index(full.startIndex, offsetBy: text.count))
    }

    @Test func streamDeliversTokensAndSummary() async throws {
        let model = try LanguageModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 2)
        let prompt = try Fixtures.reference("phi3-mha").prompts[0]
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 16
        var ids: [Int32] = []
        var summary: GenerationSummary?
        for try await event in generator.generate(prompt: prompt.input_ids, parameters: parameters) {
            switch event {
            case .token(let token): ids.append(token.id)
            case .done(let s): summary = s
            }
        }
        #expect(ids == prompt.greedy)
        #expect(summary?.completionTokens == 16)
    }
}
