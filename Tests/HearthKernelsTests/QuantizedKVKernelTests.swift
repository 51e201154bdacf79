import Foundation
import Testing

@testable import HearthKernels
import HearthKernelsCommon

/// The quantized KV cache's kernels (q8_0 and q4_0 records, one per head) at every level this
/// CPU runs, against scalar references that decode the records from their definition
/// (`cachedElementReference`) and sum in Double.
@Suite struct QuantizedKVKernelTests {
    static let types: [DType] = [.q8_0, .q4_0]
    /// One block, an odd number of blocks (Phi-3's 96: the VNNI kernel's half-vector tail) and
    /// Gemma 3's 256.
    static let headDims = [32, 96, 256]

    /// Stores `positions` rows of `headDim` values, `stride` bytes apart.
    static func cache(_ values: [Float], type: DType, headDim: Int, positions: Int, stride: Int, level: KernelLevel = .current)
        -> [UInt8]
    {
        var cache = [UInt8](repeating: 0xA5, count: positions * stride)
        cache.withUnsafeMutableBytes { raw in
            values.withUnsafeBufferPointer { v in
                for j in 0..<positions {
                    storeCached(v.baseAddress! + j * headDim, type: type, count: headDim, into: raw.baseAddress! + j * stride, level: level)
                }
            }
        }
        return cache
    }

    /// Every element decodes to within the type's rounding of what was stored: q8_0 within half a
    /// step (d = max|x|/127); q4_0 within a quarter of the block's largest magnitude (its searched
    /// scale may clip the far end), and each q4_0 block's squared error is at most that of ggml's
    /// q4_0 rule (d = m/−8 for the element m of largest magnitude, f16-rounded), computed here from
    /// its definition. Every level stores the same bytes and loads exactly what the reference decodes.
    @Test(arguments: types, headDims)
    func storeAndLoadAtEveryLevel(_ type: DType, _ headDim: Int) throws {
        let positions = 9
        let bytes = try #require(type.kvHeadBytes(headDim: headDim))
        #expect(bytes == headDim / 32 * (type == .q8_0 ? 34 : 18))
        let values = KernelTableTests.randomFloats(positions * headDim, seed: 11).enumerated().map { i, x in
            x * Float(1 + i % 7)  // blocks of differing ranges
        }
        let reference = Self.cache(values, type: type, headDim: headDim, positions: positions, stride: bytes, level: .portable)
        for level in KernelLevel.supported {
            let stored = Self.cache(values, type: type, headDim: headDim, positions: positions, stride: bytes, level: level)
            #expect(stored == reference, "\(type) \(headDim) \(level): stored bytes differ from the portable level's")
        }
        reference.withUnsafeBytes { raw in
            for j in 0..<positions {
                let row = raw.baseAddress! + j * bytes
                for b in 0..<(headDim / 32) {
                    let block = (0..<32).map { values[j * headDim + 32 * b + $0] }
                    let amax = block.map(abs).max() ?? 0
                    let bound = (type == .q8_0 ? 0.5 * amax / 127 : amax / 4) * 1.001 + 1e-12
                    var squaredError = 0.0
                    for i in (32 * b)..<(32 * b + 32) {
                        let decoded = cachedElementReference(row, i, type: type, headDim: headDim)
                        #expect(abs(decoded - values[j * headDim + i]) <= bound, "\(type) \(headDim) row \(j) element \(i)")
                        squaredError += Double(decoded - values[j * headDim + i]) * Double(decoded - values[j * headDim + i])
                    }
                    if type == .q4_0 {
                        let extreme = block.max { abs($0) < abs($1) } ?? 0
                        let d = Double(Float(Float16(extreme / -8)))
                        let ggml = block.reduce(0.0) { sum, x in
                            let q = d == 0 ? 0 : max(-8, min(7, (Double(x) / d).rounded()))
                            return sum + (Double(x) - d * q) * (Double(x) - d * q)
                        }
                        #expect(squaredError <= ggml * (1 + 1e-5) + 1e-12, "q4_0 \(headDim) row \(j) block \(b)")
                    }
                }
                for level in KernelLevel.supported {
                    var out = [Float](repeating: .nan, count: headDim)
                    loadCached(row, type: type, count: headDim, into: &out, level: level)
                    for i in 0..<headDim {
                        #expect(out[i] == cachedElementReference(row, i, type: type, headDim: headDim), "\(type) \(level) \(i)")
                    }
                }
            }
        }
    }

    /// Scores and weighted values at every level against the Double references over the stored
    /// (quantized) keys and values.
    ///
    /// Scores: the kernels round the query to 8-bit blocks (dq = max|q_b|/127) before the integer
    /// dots, so each product may differ from the reference's by |k_i|·dq/2; the bound is that sum
    /// (times the scale) plus 1e-5 of Σ|q·k| for the Float sums over the blocks.
    /// Values: Σ_j (s_j·d)·q summed in Float, within 2e-6·Σ|s·v| of the Double sum (≤ 37 terms).
    @Test(arguments: types, headDims)
    func attentionMatchesReference(_ type: DType, _ headDim: Int) throws {
        let positions = 37
        let stride = try #require(type.kvHeadBytes(headDim: headDim)) + 20  // rows not packed: the stride is honoured
        let q = KernelTableTests.randomFloats(headDim, seed: 1).enumerated().map { i, x in x * Float(1 + i % 5) }
        let values = KernelTableTests.randomFloats(positions * headDim, seed: 2).map { $0 * 4 }
        let cache = Self.cache(values, type: type, headDim: headDim, positions: positions, stride: stride)
        let weights = KernelTableTests.randomFloats(positions, seed: 3).map { abs($0) }
        let scale: Float = 0.0625
        var decoded = [Float](repeating: 0, count: positions * headDim)
        cache.withUnsafeBytes { raw in
            for j in 0..<positions {
                for i in 0..<headDim {
                    decoded[j * headDim + i] = cachedElementReference(raw.baseAddress! + j * stride, i, type: type, headDim: headDim)
                }
            }
        }
        let queryStep = (0..<(headDim / 32)).map { b in ((0..<32).map { abs(q[32 * b + $0]) }.max() ?? 0) / 127 }
        KernelTableTests.attentionAtEveryLevel(
            q: q, cache: cache, stride: stride, weights: weights, headDim: headDim, scale: scale, type: type
        ) { level, range, scores, expectedScores, out, expectedOut in
            for j in range {
                var rounding: Float = 0, magnitude: Float = 0
                for i in 0..<headDim {
                    let k = abs(decoded[j * headDim + i])
                    rounding += k * queryStep[i / 32] / 2
                    magnitude += abs(q[i]) * k
                }
                let bound = (rounding + 1e-5 * magnitude) * scale + 1e-30
                #expect(abs(scores[j] - expectedScores[j]) <= bound, "\(type) \(headDim) \(level) score \(j)")
            }
            for i in 0..<headDim {
                let magnitude = range.reduce(Float(0)) { $0 + abs(weights[$1] * decoded[$1 * headDim + i]) }
                #expect(abs(out[i] - expectedOut[i]) <= 2e-6 * magnitude + 1e-30, "\(type) \(headDim) \(level) value \(i)")
            }
        }
    }

    /// The query rounding is the only approximation in the scores: with a query that is exactly
    /// representable in 8-bit blocks (integers up to 127 in each block, one of them ±127), every level's
    /// integer dots equal the Double reference to Float rounding of the per-block sums (1e-6·Σ|q·k|).
    @Test(arguments: types)
    func integerDotsAreExactForRepresentableQueries(_ type: DType) throws {
        let headDim = 96, positions = 5
        let stride = try #require(type.kvHeadBytes(headDim: headDim))
        var q = KernelTableTests.randomFloats(headDim, seed: 7).map { ($0 * 127).rounded() }
        for b in 0..<(headDim / 32) { q[32 * b] = b % 2 == 0 ? 127 : -127 }
        let values = KernelTableTests.randomFloats(positions * headDim, seed: 8)
        let cache = Self.cache(values, type: type, headDim: headDim, positions: positions, stride: stride)
        var expected = [Float](repeating: 0, count: positions)
        cache.withUnsafeBytes { raw in
            attentionScoresReference(
                q, keys: raw.baseAddress!, stride: stride, positions: 0...(positions - 1), headDim: headDim, scale: 1,
                type: type, into: &expected)
        }
        for level in KernelLevel.supported {
            var scores = [Float](repeating: .nan, count: positions)
            cache.withUnsafeBytes { raw in
                attentionScores(
                    q, keys: raw.baseAddress!, stride: stride, positions: 0...(positions - 1), headDim: headDim, scale: 1,
                    type: type, into: &scores, level: level)
            }
            cache.withUnsafeBytes { raw in
                for j in 0..<positions {
                    let magnitude = (0..<headDim).reduce(Float(0)) {
                        $0 + abs(q[$1] * cachedElementReference(raw.baseAddress! + j * stride, $1, type: type, headDim: headDim))
                    }
                    #expect(abs(scores[j] - expected[j]) <= 1e-6 * magnitude + 1e-30, "\(type) \(level) \(j)")
                }
            }
        }
    }

    /// Heads that are not whole blocks have no quantized layout; the float types take any head.
    @Test func headBytes() {
        #expect(DType.q8_0.kvHeadBytes(headDim: 80) == nil)
        #expect(DType.q4_0.kvHeadBytes(headDim: 16) == nil)
        #expect(DType.f16.kvHeadBytes(headDim: 80) == 160)
        #expect(DType.q4_K.kvHeadBytes(headDim: 256) == nil)
        #expect(DType.q8_0.kvHeadBytes(headDim: 256) == 272)
        #expect(DType.q4_0.kvHeadBytes(headDim: 256) == 144)
    }
}
