import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// `--quantize` (and `hearth quantize`, which writes the same types) on Gemma 4: the per-layer
/// matrices — each layer's per-layer gate and projection, the per-layer embedding table and
/// model projection, about half of E2B's weights — are quantized with the rest (they stayed
/// BF16 before), and the quantized model stays close to the f32 one, teacher-forced along
/// gemma4-tiny's reference prompts.
@Suite struct Gemma4QuantizeTests {
    static let name = "gemma4-tiny"

    static func perLayerMatrices(_ weights: ModelWeights) throws -> [WeightMatrix] {
        let ple = try #require(weights.perLayerInputs)
        var list = [ple.embedding, ple.modelProjection]
        for layer in weights.layers {
            list.append(try #require(layer.perLayerGate))
            list.append(try #require(layer.perLayerProjection))
        }
        return list
    }

    @Test(arguments: [DType.q8_0, .q4_0, .q4_1])
    func perLayerMatricesAreQuantized(_ type: DType) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(Self.name).path, quantize: type, threads: 2)
        for w in try Self.perLayerMatrices(model.weights) {
            #expect(w.dtype == type && w.layout == .interleaved16, "\(w.rows)×\(w.cols): \(w.dtype) \(w.layout)")
        }
        // The safetensors file's own matrices are BF16: nothing is left in it.
        let plain = try TransformerModel(path: Fixtures.checkpoint(Self.name).path)
        #expect(try Self.perLayerMatrices(plain.weights).allSatisfy { $0.dtype == .bf16 })
        let planned = ModelWeights.type(for: .perLayerTokenEmbedding, plan: try QuantizationPlan(type: type), tied: true)
        #expect(planned == type)
    }

    /// Top-1 agreement with the f32 model and mean |Δ log p| of the next reference token.
    static func agreement(_ type: DType) throws -> (top1: Double, delta: Double) {
        let f32 = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let quantized = try TransformerModel(path: Fixtures.checkpoint(name).path, quantize: type, threads: 2)
        let a = try Generator(model: f32, context: 128, threads: 2, kvType: .f32)
        let b = try Generator(model: quantized, context: 128, threads: 2, kvType: .f32)
        let vocab = f32.options.vocabSize
        var agree = 0, total = 0, delta = 0.0
        func logSoftmax(_ row: ArraySlice<Float>, _ i: Int) -> Double {
            let m = row.max() ?? 0
            let sum = row.reduce(0.0) { $0 + exp(Double($1 - m)) }
            return Double(row[row.startIndex + i] - m) - log(sum)
        }
        for prompt in try Fixtures.reference(name).prompts {
            let tokens = prompt.input_ids + prompt.greedy
            let la = try a.logits(for: tokens), lb = try b.logits(for: tokens)
            for position in 0..<(tokens.count - 1) {
                let ra = la[(position * vocab)..<((position + 1) * vocab)], rb = lb[(position * vocab)..<((position + 1) * vocab)]
                if ra.indices.max(by: { ra[$0] < ra[$1] }) == rb.indices.max(by: { rb[$0] < rb[$1] }) { agree += 1 }
                let next = Int(tokens[position + 1])
                delta += abs(logSoftmax(ra, next) - logSoftmax(rb, next))
                total += 1
            }
        }
        return (Double(agree) / Double(total), delta / Double(total))
    }

    // Measured on gemma4-tiny (random weights: flat logits, far more sensitive than a trained
    // model): q8_0 top-1 1.0, Δ 0.029; q4_0 top-1 0.56, Δ 0.33. The bounds are the other
    // families' (QuantizedAccuracyTests).
    @Test func quantizedModelStaysClose() throws {
        let q8 = try Self.agreement(.q8_0)
        let q4 = try Self.agreement(.q4_0)
        print("gemma4-tiny --quantize: q8_0 top-1 \(q8.top1) Δ \(q8.delta); q4_0 top-1 \(q4.top1) Δ \(q4.delta)")
        #expect(q8.top1 >= 0.85 && q8.delta <= 0.1, "q8_0: \(q8)")
        #expect(q4.top1 >= 0.2 && q4.delta <= 1.5, "q4_0: \(q4)")
    }
}
