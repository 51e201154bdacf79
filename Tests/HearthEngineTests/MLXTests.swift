import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// MLX 4-bit and 8-bit checkpoints converted by `mlx_lm.convert` (scripts/make_mlx_fixtures.py) against
/// mlx-lm's own logits and greedy continuations on the same quantized weights.
@Suite struct MLXGoldenTests {
    /// The tiles hold the checkpoint's own s, b and q, so with f32 activations (BLAS on the
    /// dequantized tiles: `weightsAreExact`) Hearth matches mlx-lm's f32 logits to ≈4e-6. The
    /// integer kernels quantize activations to 8 bits per 32-element block (step amax/127),
    /// and that alone moves the logits, in proportion to their spread σ (1.7–2.9 here): by at
    /// most 3.2–4.6 % of σ (0.054–0.135) and by 0.55–0.72 % of σ on average (measured on the
    /// four fixtures). Bounds: about twice the measured figures.
    static let relativeTolerance: Float = 0.08
    static let relativeMeanTolerance: Float = 0.015
    static let exactTolerance: Float = 1e-4

    /// The standard deviation of all reference logits of a fixture.
    static func logitSpread(_ name: String) throws -> Float {
        let values = try Fixtures.reference(name).prompts.flatMap { $0.logits.joined() }.map(Double.init)
        let mean = values.reduce(0, +) / Double(max(values.count, 1))
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(max(values.count, 1))
        return Float(variance.squareRoot())
    }

    static func difference(_ name: String, batch: Int, path: QuantizedBatchPath) throws -> (worst: Float, mean: Float) {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let generator = try Generator(model: model, context: 128, threads: 2, batch: batch, kvType: .f32)
        generator.decoder.quantizedBatchPath = path
        let vocab = model.options.vocabSize
        var worst: Float = 0, total: Float = 0, count = 0
        for prompt in try Fixtures.reference(name).prompts {
            if !prompt.text.isEmpty {
                #expect(try model.tokenizer.encode(prompt.text, addSpecialTokens: true) == prompt.input_ids)
            }
            let logits = try generator.logits(for: prompt.input_ids)
            for (position, expected) in prompt.logits.enumerated() {
                #expect(expected.count == vocab)
                for (i, value) in expected.enumerated() {
                    let delta = abs(logits[position * vocab + i] - value)
                    worst = max(worst, delta)
                    total += delta
                    count += 1
                }
            }
        }
        return (worst, total / Float(max(count, 1)))
    }

    @Test(arguments: Fixtures.mlxCheckpoints)
    func logitsMatchMLX(_ name: String) throws {
        let spread = try Self.logitSpread(name)
        for batch in [1, 7, 64] {
            let (worst, mean) = try Self.difference(name, batch: batch, path: .integer)
            #expect(worst <= Self.relativeTolerance * spread, "\(name) batch \(batch): max |Δlogit| \(worst), σ \(spread)")
            #expect(mean <= Self.relativeMeanTolerance * spread, "\(name) batch \(batch): mean |Δlogit| \(mean), σ \(spread)")
        }
    }

    /// With f32 activations (BLAS on dequantized tiles) the only differences left are
    /// summation order: the tiles reproduce MLX's weights exactly.
    @Test(arguments: Fixtures.mlxCheckpoints)
    func weightsAreExact(_ name: String) throws {
        let (worst, _) = try Self.difference(name, batch: 64, path: .sgemm)
        #expect(worst <= Self.exactTolerance, "\(name): max |Δlogit| \(worst)")
    }

    @Test(arguments: Fixtures.mlxCheckpoints)
    func greedyMatchesMLX(_ name: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
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

    /// Every quantized matrix — embeddings and lm_head included — runs on q4_1 tiles (8-bit:
    /// q8_a); the module config.json marks `false` stays in its float type.
    @Test func matricesLandOnKernelTiles() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("mlx-phi3-q4-g64").path)
        for (role, matrix) in model.weights.namedMatrices(options: model.options) {
            #expect(matrix.dtype == .q4_1 && matrix.layout == .interleaved16, "\(role)")
        }
        #expect(model.quantizationSummary == "MLX 10 × affine 4-bit, group 64; scales/biases F16 → f16 exact")

        let tied = try TransformerModel(path: Fixtures.checkpoint("mlx-phi3-tied-q4-g32").path)
        #expect(tied.options.tiedEmbeddings)
        #expect(tied.weights.output.data == tied.weights.tokenEmbedding.data)
        #expect(tied.weights.tokenEmbedding.dtype == .q4_1)
        #expect(tied.weights.layers[0].attnOutput.dtype == .bf16)
        #expect(tied.weights.layers[1].attnOutput.dtype == .q4_1)
        #expect(tied.weights.layers[1].down.dtype == .q8_a)
        let summary = try #require(tied.quantizationSummary)
        #expect(summary.hasPrefix("MLX 7 × affine 4-bit, group 32, 1 × affine 8-bit, group 64; scales/biases BF16 → f16"))

        let eight = try TransformerModel(path: Fixtures.checkpoint("mlx-phi3-q8-g64").path)
        for (role, matrix) in eight.weights.namedMatrices(options: eight.options) {
            #expect(matrix.dtype == .q8_a && matrix.layout == .interleaved16, "\(role)")
        }
    }

    @Test func quantizationConfigParses() throws {
        let json = #"""
            {"quantization_config": {"group_size": 32, "bits": 4, "lm_head": {"bits": 8}, "model.embed_tokens": false,
             "model.norm": true, "note": "ignored"}}
            """#
        let q = try #require(try MLXQuantizationConfig.parse(configJSON: Data(json.utf8), path: "config.json"))
        #expect(q.key == "quantization_config")
        #expect(q.defaults == .init(groupSize: 32, bits: 4))
        #expect(q.entry(forModule: "lm_head") == .quantized(.init(groupSize: 32, bits: 8)))
        #expect(q.entry(forModule: "model.embed_tokens") == .unquantized)
        #expect(q.entry(forModule: "model.layers.0.mlp.down_proj") == .quantized(q.defaults))
        #expect(try MLXQuantizationConfig.parse(configJSON: Data(#"{"hidden_size": 64}"#.utf8), path: "c") == nil)
    }
}

/// Broken and unsupported MLX checkpoints give typed errors, never traps.
@Suite struct MLXBadInputTests {
    static let fixture = "mlx-phi3-q4-g64"

    /// A tensor as the rewriter sees it.
    struct Tensor {
        var name: String
        var dtype: String
        var shape: [Int]
        var bytes: [UInt8]
    }

    /// Copies the fixture, lets `edit` change config.json and the tensors, and writes them back
    /// as one model.safetensors (no index).
    static func damagedCopy(
        config: (inout [String: Any]) -> Void = { _ in }, tensors: (inout [Tensor]) -> Void = { _ in }
    ) throws -> URL {
        let dir = try Fixtures.copyOfCheckpoint(fixture)
        let configURL = dir.appendingPathComponent("config.json")
        var object = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: configURL)) as? [String: Any])
        config(&object)
        try JSONSerialization.data(withJSONObject: object).write(to: configURL)

        let file = try SafetensorsFile(path: dir.appendingPathComponent("model.safetensors").path)
        var list = try file.tensors.values.sorted { $0.name < $1.name }.map {
            Tensor(name: $0.name, dtype: $0.dtype.rawValue, shape: $0.shape, bytes: Array(try file.data(of: $0)))
        }
        tensors(&list)
        var header: [String: Any] = [:]
        var data: [UInt8] = []
        for t in list {
            header[t.name] = ["dtype": t.dtype, "shape": t.shape, "data_offsets": [data.count, data.count + t.bytes.count]]
            data += t.bytes
        }
        let headerBytes = try JSONSerialization.data(withJSONObject: header)
        var length = UInt64(headerBytes.count).littleEndian
        var out = Data(bytes: &length, count: 8)
        out += headerBytes
        out += data
        try FileManager.default.removeItem(at: dir.appendingPathComponent("model.safetensors.index.json"))
        try out.write(to: dir.appendingPathComponent("model.safetensors"))
        return dir
    }

    static func code(_ dir: URL) -> FormatError.Code? {
        defer { try? FileManager.default.removeItem(at: dir) }
        do {
            _ = try TransformerModel(path: dir.path)
            Issue.record("loaded a broken checkpoint")
            return nil
        } catch let error as FormatError {
            #expect(error.key != nil || error.path != nil, "\(error)")
            return error.code
        } catch {
            Issue.record("expected FormatError, got \(error)")
            return nil
        }
    }

    static func setQuantization(_ key: String, _ value: Any) -> (inout [String: Any]) -> Void {
        { config in
            for name in ["quantization", "quantization_config"] {
                var q = config[name] as? [String: Any] ?? [:]
                q[key] = value
                config[name] = q
            }
        }
    }

    @Test func unsupportedBits() throws {
        for bits in [2, 3, 5, 6, 16] {
            #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("bits", bits))) == .unsupportedDType)
        }
        // 8 is supported, but these words hold 4-bit values: 32 columns, which group 64 does not divide.
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("bits", 8))) == .shapeMismatch)
    }

    @Test func groupSizes() throws {
        // Not a multiple of the 32-weight block.
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("group_size", 48))) == .unsupportedDType)
        // Does not divide the 64 columns of the attention and embedding matrices.
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("group_size", 128))) == .shapeMismatch)
        // Divides them but disagrees with the scales' shape.
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("group_size", 32))) == .shapeMismatch)
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("group_size", "64"))) == .invalidValue)
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("group_size", 0))) == .unsupportedDType)
    }

    @Test func unsupportedModesAndMethods() throws {
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("mode", "mxfp4"))) == .unsupportedDType)
        #expect(
            Self.code(
                try Self.damagedCopy(config: {
                    $0["quantization"] = nil
                    $0["quantization_config"] = ["quant_method": "gptq", "bits": 4, "group_size": 128]
                })) == .unsupportedDType)
        #expect(Self.code(try Self.damagedCopy(config: { $0["quantization"] = "q4" })) == .invalidValue)
        // A module marked unquantized that has scales.
        #expect(Self.code(try Self.damagedCopy(config: Self.setQuantization("lm_head", false))) == .invalidValue)
    }

    @Test func scalesShapeMismatch() throws {
        let dir = try Self.damagedCopy(tensors: { list in
            guard let i = list.firstIndex(where: { $0.name == "model.layers.0.self_attn.o_proj.scales" }) else { return }
            list[i].shape = [list[i].shape[0], 2]
            list[i].bytes += list[i].bytes
        })
        #expect(Self.code(dir) == .shapeMismatch)
    }

    @Test func packedWeightSizeWrong() throws {
        // One word short per row: 56 columns, which group 64 does not divide.
        let short = try Self.damagedCopy(tensors: { list in
            guard let i = list.firstIndex(where: { $0.name == "model.layers.1.mlp.down_proj.weight" }) else { return }
            let (rows, words) = (list[i].shape[0], list[i].shape[1])
            list[i].shape = [rows, words - 1]
            list[i].bytes = Array(list[i].bytes.prefix(rows * (words - 1) * 4))
        })
        #expect(Self.code(short) == .shapeMismatch)
        // Twice as wide: the scales no longer match, and neither would the model's columns.
        let wide = try Self.damagedCopy(tensors: { list in
            guard let i = list.firstIndex(where: { $0.name == "model.layers.0.self_attn.qkv_proj.weight" }) else { return }
            list[i].shape[1] *= 2
            list[i].bytes += list[i].bytes
        })
        #expect(Self.code(wide) == .shapeMismatch)
        // Bytes disagreeing with the declared shape are caught by the safetensors layer.
        let truncated = try Self.damagedCopy(tensors: { list in
            guard let i = list.firstIndex(where: { $0.name == "lm_head.weight" }) else { return }
            list[i].bytes.removeLast(4)
        })
        #expect(Self.code(truncated) == .sizeMismatch)
    }

    @Test func missingOrMistypedParts() throws {
        let noBiases = try Self.damagedCopy(tensors: { $0.removeAll { $0.name == "lm_head.biases" } })
        #expect(Self.code(noBiases) == .missingTensor)
        let noScales = try Self.damagedCopy(tensors: { $0.removeAll { $0.name == "lm_head.scales" } })
        #expect(Self.code(noScales) == .missingTensor)
        let byteScales = try Self.damagedCopy(tensors: { list in
            for i in list.indices where list[i].name == "lm_head.scales" || list[i].name == "lm_head.biases" {
                list[i].dtype = "U8"
                list[i].bytes = Array(list[i].bytes.prefix(list[i].bytes.count / 2))
            }
        })
        #expect(Self.code(byteScales) == .unsupportedDType)
        let floatWeight = try Self.damagedCopy(tensors: { list in
            guard let i = list.firstIndex(where: { $0.name == "lm_head.weight" }) else { return }
            list[i].dtype = "F16"
            list[i].shape[1] *= 2
        })
        #expect(Self.code(floatWeight) == .unsupportedDType)
    }
}
