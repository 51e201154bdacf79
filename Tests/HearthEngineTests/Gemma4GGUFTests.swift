import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// Gemma 4 GGUF files made by llama.cpp's own converter and quantizer from gemma4-tiny's weights
/// (Tests/Fixtures/gemma4-gguf, scripts/make_gemma4_gguf.py: F16, Q8_0, Q4_K_M — the last with
/// llama.cpp's per-tensor fallbacks and the per-layer embedding table in Q6_K): the `gemma4`
/// metadata gives the options gemma4-tiny's config.json gives, Hearth's logits agree with the
/// exact math (transformers in f32, gemma4-tiny's reference.json) at least as well as llama.cpp's
/// on the same file, its greedy tokens are llama.cpp's where llama.cpp's margin is clear, and the
/// `gemma4` vocabulary tokenizes the multilingual cases as llama.cpp does.
@Suite struct Gemma4GGUFTests {
    struct LlamaCpp: Decodable {
        struct Prompt: Decodable {
            let name: String
            let input_ids: [Int32]
            let greedy: [Int32]
            let margins: [Float]
            let max_abs_diff_vs_transformers: Float
        }
        struct Tokenized: Decodable {
            let text: String
            let ids: [Int32]
        }
        struct File: Decodable {
            let fixture: String
            let max_abs_diff_vs_transformers: Float
            let mean_abs_diff_vs_transformers: Float
            let clear_positions: Int
            let clear_top1_equal: Int
            let prompts: [Prompt]
            let tokenize: [Tokenized]
            let tokenize_with_bos: Tokenized
        }
        let files: [String: File]
    }

    static let directory = Fixtures.directory.appendingPathComponent("gemma4-gguf")
    static let files = ["gemma4-tiny-f16.gguf", "gemma4-tiny-q8_0.gguf", "gemma4-tiny-q4_k_m.gguf"]

    static func llamaCpp(_ name: String) throws -> LlamaCpp.File {
        let data = try Data(contentsOf: directory.appendingPathComponent("llama-cpp.json"))
        return try #require(try JSONDecoder().decode(LlamaCpp.self, from: data).files[name])
    }

    static func model(_ name: String) throws -> TransformerModel {
        try TransformerModel(path: directory.appendingPathComponent(name).path, threads: 2, repackCache: .disabled)
    }

    /// The `gemma4` metadata (per-layer FFN widths, the sliding pattern, two head sizes, shared
    /// KV layers, per-layer input width, RoPE per kind with the `rope_freqs` divisors, soft-cap)
    /// gives exactly the options of the checkpoint it was converted from.
    @Test(arguments: files)
    func metadataGivesTheCheckpointsOptions(_ name: String) throws {
        let model = try Self.model(name)
        let checkpoint = try TransformerModel(path: Fixtures.checkpoint("gemma4-tiny").path)
        #expect(model.options == checkpoint.options)
        #expect(model.options.kvSourceLayers == [0, 1, 2, 1, 2] && model.options.layerFFNSizes == [128, 128, 128, 256, 256])
        #expect(model.weights.layers[3].kNorm == nil && model.weights.perLayerInputs != nil)
    }

    /// The per-layer matrices (each layer's gate and projection, the per-layer embedding table
    /// and model projection) go through the kernels' repack like every other quantized matrix,
    /// in the type the file has (Q4_K_M: Q5_0, Q4_K, Q6_K and F16 as llama.cpp chose per tensor).
    @Test(arguments: files)
    func perLayerMatricesAreRepackedInTheirFileType(_ name: String) throws {
        let model = try Self.model(name)
        let gguf = try GGUFFile(path: Self.directory.appendingPathComponent(name).path)
        let ple = try #require(model.weights.perLayerInputs)
        var matrices: [(String, WeightMatrix)] = [
            ("per_layer_token_embd.weight", ple.embedding), ("per_layer_model_proj.weight", ple.modelProjection),
        ]
        for (l, layer) in model.weights.layers.enumerated() {
            matrices.append(("blk.\(l).inp_gate.weight", try #require(layer.perLayerGate)))
            matrices.append(("blk.\(l).proj.weight", try #require(layer.perLayerProjection)))
        }
        for (tensor, w) in matrices {
            let info = try #require(gguf.info(named: tensor))
            #expect(w.dtype == info.type.dtype, "\(name) \(tensor): \(w.dtype)")
            let repackable = w.dtype.hasKernelLayout && w.dtype.matrixBytes(rows: w.rows, cols: w.cols, layout: .interleaved16) != nil
            #expect(w.layout == (repackable ? .interleaved16 : .rows), "\(name) \(tensor): \(w.dtype) in \(w.layout)")
        }
    }

    /// The repack cache holds the per-layer matrices too: written on the first load, mapped on
    /// the second, and both give the logits of the in-memory repack.
    @Test func repackCacheRoundTripsThePerLayerMatrices() throws {
        let name = "gemma4-tiny-q4_k_m.gguf"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-repack-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = RepackCache(directory: directory, minimumBytes: 0)
        let path = Self.directory.appendingPathComponent(name).path
        let first = try TransformerModel(path: path, threads: 2, repackCache: cache)
        guard case .written = first.repackCacheOutcome else {
            Issue.record("first load: \(first.repackCacheOutcome)")
            return
        }
        RepackCache.waitForPendingWrites()
        let second = try TransformerModel(path: path, threads: 2, repackCache: cache)
        guard case .hit = second.repackCacheOutcome else {
            Issue.record("second load: \(second.repackCacheOutcome)")
            return
        }
        let inMemory = try Self.model(name)
        // All but the F16 model projection (no kernel layout) are rearranged.
        #expect(try Self.perLayerMatricesLayouts(second) == Self.perLayerMatricesLayouts(inMemory))
        #expect(try Self.perLayerMatricesLayouts(second).filter { $0 == .interleaved16 }.count == 11)
        let ids = try Fixtures.reference("gemma4-tiny").prompts[0].input_ids
        let expected = try Generator(model: inMemory, context: 64, threads: 2, kvType: .f32).logits(for: ids)
        #expect(try Generator(model: second, context: 64, threads: 2, kvType: .f32).logits(for: ids) == expected)
    }

    static func perLayerMatricesLayouts(_ model: TransformerModel) throws -> [WeightLayout] {
        let ple = try #require(model.weights.perLayerInputs)
        return [ple.embedding.layout, ple.modelProjection.layout]
            + model.weights.layers.flatMap { [$0.perLayerGate?.layout, $0.perLayerProjection?.layout].compactMap { $0 } }
    }

    /// Hearth's logits agree with transformers' f32 logits (the exact math) at least as well as
    /// llama.cpp's on the same file: at the positions whose exact top-1/top-2 margin is clear
    /// (≥ 4 × llama.cpp's mean |Δlogit| on the file) Hearth's top-1 is the exact one at least as
    /// often as llama.cpp's; its mean |Δlogit| is within 1.1× llama.cpp's (+ 1e-4), and per
    /// prompt its largest |Δlogit| within 1.25× llama.cpp's (+ 2e-3: summation order and rounding
    /// differ; BF16 → F16 is exact, so the F16 file holds the checkpoint's own weights).
    @Test(arguments: files)
    func logitsAgreeWithTheExactMathAsWellAsLlamaCpp(_ name: String) throws {
        let reference = try Self.llamaCpp(name)
        let model = try Self.model(name)
        let exact = try Fixtures.reference(reference.fixture)
        let vocab = model.options.vocabSize
        let generator = try Generator(model: model, context: 128, threads: 2, kvType: .f32)
        var worst: Float = 0, total: Double = 0, count = 0
        var clear = 0, clearEqual = 0
        let clearMargin = 4 * reference.mean_abs_diff_vs_transformers
        for prompt in exact.prompts {
            let theirs = try #require(reference.prompts.first { $0.name == prompt.name })
            let logits = try generator.logits(for: prompt.input_ids)
            var mine: Float = 0
            for (position, row) in prompt.logits.enumerated() {
                let ours = Array(logits[(position * vocab)..<((position + 1) * vocab)])
                for (i, value) in row.enumerated() {
                    let d = abs(ours[i] - value)
                    mine = max(mine, d)
                    total += Double(d)
                }
                count += row.count
                let ranked = row.sorted(by: >)
                if ranked[0] - ranked[1] >= clearMargin {
                    clear += 1
                    if Self.argmax(ours) == Self.argmax(row) { clearEqual += 1 }
                }
            }
            worst = max(worst, mine)
            #expect(
                mine <= theirs.max_abs_diff_vs_transformers * 1.25 + 2e-3,
                "\(name)/\(prompt.name): Hearth max |Δlogit| \(mine), llama.cpp \(theirs.max_abs_diff_vs_transformers)")
        }
        let mean = Float(total / Double(max(count, 1)))
        #expect(worst > 0)
        #expect(clear == reference.clear_positions)
        #expect(clearEqual >= reference.clear_top1_equal, "\(name): top-1 as exact at \(clearEqual) of \(clear), llama.cpp \(reference.clear_top1_equal)")
        #expect(mean <= reference.mean_abs_diff_vs_transformers * 1.1 + 1e-4, "\(name): mean |Δlogit| \(mean), llama.cpp \(reference.mean_abs_diff_vs_transformers)")
        print(
            "\(name): vs transformers f32 — Hearth max |Δlogit| \(worst), mean \(mean), clear top-1 \(clearEqual)/\(clear); "
                + "llama.cpp max \(reference.max_abs_diff_vs_transformers), mean \(reference.mean_abs_diff_vs_transformers), "
                + "clear top-1 \(reference.clear_top1_equal)/\(reference.clear_positions)")
    }

    static func argmax(_ row: [Float]) -> Int {
        var best = 0
        for i in row.indices where row[i] > row[best] { best = i }
        return best
    }

    /// Greedy decoding with llama.cpp's arithmetic (8-bit activations, f16 KV cache) gives
    /// llama.cpp's tokens up to llama.cpp's first step whose top-1/top-2 margin is below
    /// min(0.1, twice llama.cpp's distance from the exact logits on that file).
    @Test(arguments: files)
    func greedyGivesLlamaCppsTokens(_ name: String) throws {
        let reference = try Self.llamaCpp(name)
        let model = try Self.model(name)
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

    /// The `gemma4` vocabulary (BPE by merge rank over `▁`-escaped UTF-8, newline runs apart,
    /// `<0xNN>` byte fallback) gives llama.cpp's `tokenize(special: true)` ids on the
    /// multilingual cases, and adds BOS as llama.cpp does.
    @Test(arguments: files)
    func tokenizesLikeLlamaCpp(_ name: String) throws {
        let reference = try Self.llamaCpp(name)
        let model = try Self.model(name)
        let tokenizer = model.tokenizer
        #expect(reference.tokenize.count >= 80)
        for t in reference.tokenize {
            let got = try tokenizer.encode(t.text, addSpecialTokens: false)
            #expect(got == t.ids, "\(name): \(t.text.debugDescription): \(got) vs llama.cpp \(t.ids)")
        }
        let first = reference.tokenize_with_bos
        #expect(try tokenizer.encode(first.text, addSpecialTokens: true) == first.ids)
        // Decoding gives the text back where llama.cpp's ids are all ordinary pieces and bytes.
        #expect(tokenizer.decode(try tokenizer.encode("Hello world! naïve 你好", addSpecialTokens: false), skipSpecialTokens: false) == "Hello world! naïve 你好")
    }
}
