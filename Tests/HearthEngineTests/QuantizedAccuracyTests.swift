import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Quantized weights against the f32 reference path on the fixture models, teacher-forced
/// along the reference prompts: top-1 agreement and mean |Δ log-probability| of the
/// reference's next token.
@Suite struct QuantizedAccuracyTests {
    struct Agreement {
        var top1 = 0.0
        var meanAbsLogprobDelta = 0.0
    }

    static func agreement(_ name: String, _ type: DType, path: QuantizedBatchPath = .integer) throws -> Agreement {
        let f32 = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let quantized = try TransformerModel(path: Fixtures.checkpoint(name).path, quantize: type, threads: 2)
        let a = try Generator(model: f32, context: 128, threads: 2, kvType: .f32)
        let b = try Generator(model: quantized, context: 128, threads: 2, kvType: .f32)
        b.decoder.quantizedBatchPath = path
        let vocab = f32.options.vocabSize
        var agree = 0, total = 0
        var delta = 0.0
        for prompt in try Fixtures.reference(name).prompts {
            let tokens = prompt.input_ids + prompt.greedy
            let la = try a.logits(for: tokens), lb = try b.logits(for: tokens)
            for position in 0..<(tokens.count - 1) {
                let ra = Array(la[(position * vocab)..<((position + 1) * vocab)])
                let rb = Array(lb[(position * vocab)..<((position + 1) * vocab)])
                let argA = ra.indices.max { ra[$0] < ra[$1] } ?? 0
                let argB = rb.indices.max { rb[$0] < rb[$1] } ?? 0
                if argA == argB { agree += 1 }
                let next = Int(tokens[position + 1])
                let lpA = ra[next] - ra.withUnsafeBufferPointer { logSumExp($0.baseAddress!, vocab) }
                let lpB = rb[next] - rb.withUnsafeBufferPointer { logSumExp($0.baseAddress!, vocab) }
                delta += Double(abs(lpA - lpB))
                total += 1
            }
        }
        return Agreement(top1: Double(agree) / Double(total), meanAbsLogprobDelta: delta / Double(total))
    }

    // Bounds measured on these fixtures (random N(0, 0.2) weights, whose flat logits make
    // them far more sensitive to weight error than trained models): q8_0 ≈ 0.88–0.93 top-1,
    // Δ ≈ 0.06; q4 ≈ 0.28–0.47 top-1, Δ ≈ 0.5–0.95. Chance agreement is 1/1024.

    @Test(arguments: Fixtures.phi3Checkpoints)
    func q8_0StaysClose(_ name: String) throws {
        let result = try Self.agreement(name, .q8_0)
        #expect(result.top1 >= 0.85, "\(name): top-1 \(result.top1)")
        #expect(result.meanAbsLogprobDelta <= 0.1, "\(name): Δ \(result.meanAbsLogprobDelta)")
    }

    @Test(arguments: Fixtures.phi3Checkpoints)
    func q4StaysCoherent(_ name: String) throws {
        for type in [DType.q4_0, .q4_1] {
            let result = try Self.agreement(name, type)
            #expect(result.top1 >= 0.2, "\(name) \(type): top-1 \(result.top1)")
            #expect(result.meanAbsLogprobDelta <= 1.5, "\(name) \(type): Δ \(result.meanAbsLogprobDelta)")
        }
    }

    /// 8-bit activations add little error on top of the weights' own quantization error:
    /// the integer path stays within 0.03 mean |Δ logprob| of dequantize + f32 sgemm.
    @Test(arguments: Fixtures.phi3Checkpoints)
    func integerPathAddsLittleError(_ name: String) throws {
        for type in [DType.q8_0, .q4_0] {
            let weightsOnly = try Self.agreement(name, type, path: .sgemm)
            let integer = try Self.agreement(name, type, path: .integer)
            #expect(abs(integer.meanAbsLogprobDelta - weightsOnly.meanAbsLogprobDelta) <= 0.03, "\(name) \(type)")
        }
    }
}
