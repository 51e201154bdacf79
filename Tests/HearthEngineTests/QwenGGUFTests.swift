import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// Qwen2 and Qwen3 GGUF files made by llama.cpp's own converter and quantizer from the same
/// weights as qwen2-tiny and qwen3-tiny (Tests/Fixtures/qwen-gguf, scripts/make_qwen_gguf_fixtures.py):
/// Hearth's logits agree with the exact math (transformers in f32, the fixtures' reference.json)
/// about as well as llama.cpp's do, its greedy tokens are llama.cpp's where llama.cpp's margin is
/// clear, and the GGUF vocabulary tokenizes like llama.cpp and renders the file's template.
@Suite struct QwenGGUFTests {
    struct LlamaCpp: Decodable {
        struct Prompt: Decodable {
            let name: String
            let input_ids: [Int32]
            let greedy: [Int32]
            let margins: [Float]
        }
        struct Tokenized: Decodable {
            let text: String
            let ids: [Int32]
        }
        struct File: Decodable {
            let fixture: String
            let max_abs_diff_vs_transformers: Float
            let prompts: [Prompt]
            let tokenize: [Tokenized]
        }
        let files: [String: File]
    }

    static let directory = Fixtures.directory.appendingPathComponent("qwen-gguf")
    static let files = ["qwen3-tiny-f16.gguf", "qwen3-tiny-q8_0.gguf", "qwen3-tiny-q4_k_m.gguf", "qwen2-tiny-q8_0.gguf"]

    static func llamaCpp(_ name: String) throws -> LlamaCpp.File {
        let data = try Data(contentsOf: directory.appendingPathComponent("llama-cpp.json"))
        return try #require(try JSONDecoder().decode(LlamaCpp.self, from: data).files[name])
    }

    static func model(_ name: String) throws -> TransformerModel {
        try TransformerModel(path: directory.appendingPathComponent(name).path, threads: 2, repackCache: .disabled)
    }

    /// Hearth's largest |Δlogit| from transformers' f32 logits is within 1.5× llama.cpp's on the
    /// same file, plus 2e-3 (F16's rounding of the BF16 weights alone is ~1e-2 for both).
    @Test(arguments: files)
    func logitsAgreeWithTheExactMathAsWellAsLlamaCpp(_ name: String) throws {
        let reference = try Self.llamaCpp(name)
        let model = try Self.model(name)
        let exact = try Fixtures.reference(reference.fixture)
        let vocab = model.options.vocabSize
        let bound = 1.5 * reference.max_abs_diff_vs_transformers + 2e-3
        let generator = try Generator(model: model, context: 128, threads: 2, kvType: .f32)
        var worst: Float = 0
        for prompt in exact.prompts {
            let logits = try generator.logits(for: prompt.input_ids)
            for (position, row) in prompt.logits.enumerated() {
                for (i, value) in row.enumerated() { worst = max(worst, abs(logits[position * vocab + i] - value)) }
            }
        }
        #expect(worst > 0)
        #expect(worst <= bound, "\(name): Hearth max |Δlogit| \(worst), llama.cpp \(reference.max_abs_diff_vs_transformers)")
    }

    /// Greedy decoding with llama.cpp's arithmetic (8-bit activations, f16 KV cache) gives
    /// llama.cpp's tokens up to llama.cpp's first step whose top-1/top-2 margin is below
    /// min(0.1, twice llama.cpp's distance from the exact logits): there two engines may rank the
    /// best two either way (on these random-weight files Q8_0 moves logits by ~0.3; the same
    /// arithmetic in both engines still differs in summation order and attention rounding, which
    /// flipped a 0.08 margin).
    @Test(arguments: files)
    func greedyGivesLlamaCppsTokens(_ name: String) throws {
        let reference = try Self.llamaCpp(name)
        let model = try Self.model(name)
        // llama.cpp's arithmetic: 8-bit activations for the integer kernels, an f16 KV cache.
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 8, kvType: .f16)
        generator.activationPrecision = .narrow
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 16
        var asserted = 0
        for prompt in reference.prompts {
            var ids: [Int32] = []
            _ = try generator.run(prompt: prompt.input_ids, parameters: parameters) { ids.append($0.id) }
            let cut = min(0.1, 2 * reference.max_abs_diff_vs_transformers)
            let clear = prompt.margins.firstIndex { $0 < cut } ?? prompt.margins.count
            #expect(ids.prefix(clear) == prompt.greedy.prefix(clear), "\(name)/\(prompt.name): \(ids) vs \(prompt.greedy)")
            asserted += clear
        }
        #expect(asserted > 0, "\(name): no clear greedy step to compare")
    }

    /// The architecture, the options each family reads from GGUF metadata, the vocabulary's ids
    /// (llama.cpp's `tokenize(special: true)`) and the chat template the converter copied in.
    @Test(arguments: files)
    func loadsTokenizesAndRendersLikeItsCheckpoint(_ name: String) throws {
        let reference = try Self.llamaCpp(name)
        let model = try Self.model(name)
        let checkpoint = try TransformerModel(path: Fixtures.checkpoint(reference.fixture).path)
        #expect(model.options.headDim == checkpoint.options.headDim)
        #expect(model.options.qkNorm == checkpoint.options.qkNorm)
        #expect(model.options.tiedEmbeddings == checkpoint.options.tiedEmbeddings)
        #expect(model.options.rope == checkpoint.options.rope)
        #expect(model.options.norm == checkpoint.options.norm && model.options.kvHeadCount == checkpoint.options.kvHeadCount)
        #expect((model.weights.layers[0].qkvBias != nil) == (reference.fixture == "qwen2-tiny"))
        for t in reference.tokenize {
            // llama.cpp's tokenize(add_bos: false, special: true): control tokens in the text match.
            let got = try model.tokenizer.encode(t.text, addSpecialTokens: false)
            #expect(got == t.ids, "\(name): \(t.text.debugDescription): \(got) vs llama.cpp \(t.ids)")
        }
        for chat in try Fixtures.reference(reference.fixture).chat {
            let messages = chat.messages.map { ChatTurn(role: $0.role, content: $0.content) }
            #expect(try model.chatTemplate?.render(messages, addGenerationPrompt: true) == chat.text)
            #expect(try model.chatPrompt(messages) == chat.input_ids, "\(name)")
        }
        #expect(model.eosIDs.contains(642))  // <|im_end|>
    }
}
