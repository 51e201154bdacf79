import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Gemma 4's text model (Tests/Fixtures/gemma4-tiny, made by scripts/make_gemma4_fixtures.py
/// from transformers 5.23 in float32): E2B's head sizes (256 sliding, 512 full), KV sharing,
/// per-layer embeddings, proportional RoPE, value norm, layer scalars and the logit soft-cap.
/// Its logits and greedy continuations are checked against transformers by `GoldenTests`
/// (it is one of `Fixtures.familyCheckpoints`); here: the options its config maps to, greedy
/// decoding in chunks smaller than the window and on an f16 cache, and what is refused.
@Suite struct Gemma4FamilyTests {
    static let name = "gemma4-tiny"

    @Test func configMapsToTheSharedPassOptions() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(Self.name).path)
        let o = model.options
        #expect(o.headDim == 256 && o.fullAttentionHeadDim == 512)
        #expect(o.headDim(forLayer: 0) == 256 && o.headDim(forLayer: 2) == 512 && o.headDim(forLayer: 4) == 512)
        #expect(o.kvSourceLayers == [0, 1, 2, 1, 2] && o.cacheLayerCount == 3)
        #expect(o.layerFFNSizes == [128, 128, 128, 256, 256])
        #expect(o.perLayerInputSize == 256 && o.layerScalars && o.valueNorm && o.finalLogitSoftcap == 30)
        #expect(o.attentionScale == 1 && o.slidingWindow == 8 && o.slidingLayers == [true, true, false, true, false])
        guard case .frequencyFactors(let factors) = o.rope.scaling else {
            Issue.record("full layers' proportional RoPE should be per-pair divisors, got \(o.rope.scaling)")
            return
        }
        // 0.25 of 512 dims turn: 64 of the 256 pairs.
        #expect(factors.count == 256 && factors.prefix(64).allSatisfy { $0 == 1 } && factors.dropFirst(64).allSatisfy { $0 == 1e30 })
        #expect(model.weights.layers[3].kNorm == nil)
    }

    @Test func greedyMatchesTransformers() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(Self.name).path)
        // Batch 4: prompts longer than the window are processed in several chunks.
        for kvType in [DType.f32, .f16] {
            let generator = try Generator(model: model, context: 128, threads: 2, batch: 4, kvType: kvType)
            var parameters = GenerationParameters()
            parameters.sampling.temperature = 0
            parameters.maxTokens = 16
            for prompt in try Fixtures.reference(Self.name).prompts {
                var ids: [Int32] = []
                _ = try generator.run(prompt: prompt.input_ids, parameters: parameters) { ids.append($0.id) }
                // f16 keys and values round to 11 bits: compare only the steps clear of that.
                let tolerance: Float = kvType == .f32 ? Fixtures.f32LogitTolerance : 0.05
                let clear = try Fixtures.clearGreedySteps(Self.name, prompt: prompt.name, tolerance: tolerance)
                #expect(ids.prefix(clear) == prompt.greedy.prefix(clear), "\(prompt.name) \(kvType)")
            }
        }
    }

    @Test func quantizedCacheIsRefusedForMixedHeadSizes() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(Self.name).path)
        #expect(throws: EngineError.self) { try Generator(model: model, context: 64, threads: 1, kvType: .q8_0) }
    }

    @Test func unsupportedVariantsAreRefusedNamingTheKey() throws {
        let source = try Data(contentsOf: Fixtures.checkpoint(Self.name).appendingPathComponent("config.json"))
        for (key, value) in [("attention_k_eq_v", true as Any), ("enable_moe_block", true), ("use_bidirectional_attention", "all")] {
            var json = try #require(JSONSerialization.jsonObject(with: source) as? [String: Any])
            json[key] = value
            let config = try HFConfig(json: try JSONSerialization.data(withJSONObject: json), path: "config.json")
            do {
                _ = try Gemma4Family.options(from: config)
                Issue.record("\(key) should be refused")
            } catch let error as FormatError {
                #expect(error.key == key, "\(error)")
            }
        }
    }
}

/// The released E2B/E4B checkpoints are `Gemma4ForConditionalGeneration`: the text config under
/// `text_config`, the decoder's tensors under `model.language_model.`, vision and audio towers
/// beside them. Built here from gemma4-tiny with transformers 5.23's layout (its top-level keys
/// and tensor names, as `save_pretrained` writes them), the text decoder must give gemma4-tiny's
/// logits and the towers must not be read.
@Suite struct Gemma4WrapperTests {
    /// A copy of gemma4-tiny laid out as `Gemma4ForConditionalGeneration` saves it.
    static func wrapperCheckpoint(textConfig: Bool = true) throws -> URL {
        let dir = try Fixtures.copyOfCheckpoint("gemma4-tiny")
        let configURL = dir.appendingPathComponent("config.json")
        var text = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: configURL)) as? [String: Any])
        text.removeValue(forKey: "architectures")
        var config: [String: Any] = [
            "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "tie_word_embeddings": true,
            "audio_token_id": 258881, "boa_token_id": 256000, "boi_token_id": 255999, "eoa_token_index": 258883,
            "eoi_token_id": 258882, "image_token_id": 258880, "video_token_id": 258884, "dtype": "bfloat16",
            "vision_config": ["model_type": "gemma4_vision", "hidden_size": 16, "num_hidden_layers": 1],
            "audio_config": ["model_type": "gemma4_audio", "hidden_size": 16, "num_hidden_layers": 1],
        ]
        if textConfig { config["text_config"] = text }
        try JSONSerialization.data(withJSONObject: config).write(to: configURL)

        // model.safetensors: every tensor renamed model.* → model.language_model.*, plus two tower tensors.
        let weightsURL = dir.appendingPathComponent("model.safetensors")
        let file = try Data(contentsOf: weightsURL)
        let headerLength = Int(file.prefix(8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self).littleEndian })
        let header = try #require(JSONSerialization.jsonObject(with: file.subdata(in: 8..<(8 + headerLength))) as? [String: Any])
        var data = file.subdata(in: (8 + headerLength)..<file.count)
        var renamed: [String: Any] = [:]
        for (name, entry) in header where name != "__metadata__" {
            renamed[name.hasPrefix("model.") ? "model.language_model." + name.dropFirst(6) : name] = entry
        }
        for tower in ["model.vision_tower.patch_embedder.input_proj.weight", "model.audio_tower.layers.0.self_attn.q_proj.linear.weight"] {
            renamed[tower] = ["dtype": "F32", "shape": [4, 4], "data_offsets": [data.count, data.count + 64]]
            data.append(Data(repeating: 0, count: 64))
        }
        var json = try JSONSerialization.data(withJSONObject: renamed)
        while json.count % 8 != 0 { json.append(UInt8(ascii: " ")) }
        var out = Data()
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { out.append(contentsOf: $0) }
        out.append(json)
        out.append(data)
        try out.write(to: weightsURL)
        return dir
    }

    @Test func theTextDecoderOfTheWrapperLoadsAndMatches() throws {
        let dir = try Self.wrapperCheckpoint()
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = try TransformerModel(path: dir.path)
        #expect(model.architecture == "Gemma4ForConditionalGeneration")
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 16, kvType: .f32)
        let vocab = model.options.vocabSize
        for prompt in try Fixtures.reference("gemma4-tiny").prompts {
            let logits = try generator.logits(for: prompt.input_ids)
            var worst: Float = 0
            for (position, expected) in prompt.logits.enumerated() {
                for (i, value) in expected.enumerated() { worst = max(worst, abs(logits[position * vocab + i] - value)) }
            }
            #expect(worst <= Fixtures.f32LogitTolerance, "\(prompt.name): max |Δlogit| \(worst)")
        }
    }

    @Test func aWrapperWithoutTextConfigIsRefused() throws {
        let dir = try Self.wrapperCheckpoint(textConfig: false)
        defer { try? FileManager.default.removeItem(at: dir) }
        do {
            _ = try TransformerModel(path: dir.path)
            Issue.record("a Gemma4ForConditionalGeneration config without text_config should be refused")
        } catch let error as FormatError {
            #expect(error.key == "text_config", "\(error)")
        }
    }
}

/// google/gemma-4-E2B-it's published configuration (its text_config's values as pinned by
/// several public projects' config tests; the hub is not reachable here): what Hearth derives.
@Suite struct Gemma4E2BConfigTests {
    static func e2bConfig() throws -> HFConfig {
        let types = (0..<35).map { ($0 + 1) % 5 == 0 ? "full_attention" : "sliding_attention" }
        let text: [String: Any] = [
            "model_type": "gemma4_text", "hidden_size": 1536, "intermediate_size": 6144, "num_hidden_layers": 35,
            "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "global_head_dim": 512,
            "num_global_key_value_heads": NSNull(), "attention_k_eq_v": false, "sliding_window": 512,
            "vocab_size": 262_144, "vocab_size_per_layer_input": 262_144, "hidden_size_per_layer_input": 256,
            "num_kv_shared_layers": 20, "use_double_wide_mlp": true, "max_position_embeddings": 131_072,
            "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": 30.0,
            "tie_word_embeddings": true, "layer_types": types, "enable_moe_block": false,
            "rope_parameters": [
                "full_attention": ["rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0],
                "sliding_attention": ["rope_type": "default", "rope_theta": 10_000.0],
            ],
        ]
        let config: [String: Any] = [
            "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "text_config": text,
            "vision_config": ["model_type": "gemma4_vision"], "audio_config": ["model_type": "gemma4_audio"],
        ]
        return try HFConfig(json: try JSONSerialization.data(withJSONObject: config), path: "config.json")
    }

    @Test func e2bMapsToItsLayerShapes() throws {
        let config = try Self.e2bConfig()
        let o = try Gemma4Family.options(from: config)
        #expect(Gemma4Family.decoderPrefix(for: config) == "model.language_model.")
        #expect(o.layerCount == 35 && o.hiddenSize == 1536 && o.kvHeadCount == 1 && o.vocabSize == 262_144)
        // Layers 15–34 reuse layer 13 (last sliding) and 14 (last full) before them.
        #expect(o.cacheLayerCount == 15)
        #expect((15..<35).allSatisfy { o.kvSource($0) == ($0 % 5 == 4 ? 14 : 13) })
        #expect((0..<15).allSatisfy { o.ownsKV($0) })
        #expect((0..<35).allSatisfy { o.ffnSize(forLayer: $0) == ($0 < 15 ? 6144 : 12_288) })
        #expect(o.headDim(forLayer: 3) == 256 && o.headDim(forLayer: 4) == 512 && o.headDim(forLayer: 34) == 512)
        #expect(o.slidingWindow == 512 && o.perLayerInputSize == 256 && o.finalLogitSoftcap == 30)
        #expect(o.qkvWidth(forLayer: 0) == (8 + 2) * 256 && o.qkvWidth(forLayer: 14) == (8 + 2) * 512)
        #expect(o.qkvWidth(forLayer: 15) == 8 * 256)
    }
}
