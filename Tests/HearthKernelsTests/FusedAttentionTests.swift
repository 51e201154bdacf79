import Foundation
import Testing

@testable import HearthKernels
import HearthKernelsCommon

/// Fused attention (online softmax over key/value tiles) at every kernel level this CPU runs,
/// against ``fusedAttentionReference`` (Double scores, softmax and sums from the definition) on
/// random inputs: f16, f32, q8_0 and q4_0 caches (the quantized ones both with integer key dots
/// against 8-bit queries and with keys converted to Float per tile), causal and sliding-window
/// masks, GQA groups, both score shapes (narrow: ≤ 8 rows; wide: 16-row panels), head sizes with
/// a remainder past the last 16 lanes, tile remainders (key counts not a multiple of the
/// 64-key tile or the six-key block), and calls over whole cache rows of several KV heads (a
/// decode or verification step of a model such as Phi-3: 32 heads of 96, 5-key tiles).
@Suite struct FusedAttentionTests {
    struct Case: CustomStringConvertible, Sendable {
        var tokens: Int
        var groupHeads: Int
        var headDim: Int
        var firstPosition: Int
        var window: Int
        /// KV heads the rows span (``FusedAttentionShape/kvHeads``).
        var kvHeads = 1
        var description: String {
            "t\(tokens) g\(groupHeads) hd\(headDim) p\(firstPosition) w\(window)" + (kvHeads > 1 ? " kv\(kvHeads)" : "")
        }
    }

    static let cases: [Case] = [
        Case(tokens: 37, groupHeads: 4, headDim: 64, firstPosition: 0, window: 0),  // wide, a prompt from the start
        Case(tokens: 29, groupHeads: 2, headDim: 72, firstPosition: 100, window: 0),  // wide, after cached context; hd % 16 = 8
        Case(tokens: 50, groupHeads: 4, headDim: 32, firstPosition: 90, window: 40),  // wide, sliding window across tiles
        Case(tokens: 1, groupHeads: 4, headDim: 256, firstPosition: 300, window: 0),  // narrow: a decode step (Gemma's group)
        Case(tokens: 1, groupHeads: 1, headDim: 96, firstPosition: 130, window: 77),  // narrow, one head, windowed
        Case(tokens: 2, groupHeads: 3, headDim: 40, firstPosition: 63, window: 0),  // narrow, six rows, hd % 16 = 8
        Case(tokens: 3, groupHeads: 3, headDim: 16, firstPosition: 5, window: 2),  // wide (9 rows), tiny window
        Case(tokens: 1, groupHeads: 32, headDim: 96, firstPosition: 300, window: 0, kvHeads: 32),  // Phi-3's decode step
        Case(tokens: 3, groupHeads: 8, headDim: 64, firstPosition: 130, window: 77, kvHeads: 4),  // verification, GQA 2, window
        Case(tokens: 2, groupHeads: 6, headDim: 40, firstPosition: 70, window: 0, kvHeads: 3),  // 18 rows, hd % 16 = 8
    ]

    /// A cache of `positions` rows of `type`, `stride` bytes apart, each `heads` heads of `headDim`
    /// elements side by side (as ``KVCache`` lays them out), from `floats`.
    static func cache(_ floats: [Float], positions: Int, headDim: Int, stride: Int, type: DType, heads: Int = 1) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: positions * stride)
        let headBytes = type.kvHeadBytes(headDim: headDim) ?? 0
        bytes.withUnsafeMutableBytes { raw in
            floats.withUnsafeBufferPointer {
                for j in 0..<positions {
                    for h in 0..<heads {
                        storeCached(
                            $0.baseAddress! + (j * heads + h) * headDim, type: type, count: headDim,
                            into: raw.baseAddress! + j * stride + h * headBytes)
                    }
                }
            }
        }
        return bytes
    }

    /// How a case runs: the cache type, and for q8_0/q4_0 how the keys are dotted (integer or
    /// Float for every tile, so both paths meet both score shapes; `.automatic` picks one of them).
    struct Storage: CustomStringConvertible, Sendable {
        var type: DType
        var keyDots = QuantizedKeyDots.integer
        var description: String { type.isQuantized ? "\(type) \(keyDots) keys" : "\(type)" }
    }

    static let storages = [
        Storage(type: .f16), Storage(type: .f32), Storage(type: .q8_0), Storage(type: .q8_0, keyDots: .float),
        Storage(type: .q4_0), Storage(type: .q4_0, keyDots: .float),
    ]

    /// Tolerance: each output is a convex combination of values (|v| ≤ 4); Float scores (sums of
    /// ≤ 256 products), the kernels' e^x (a few ulp) and Float sums over ≤ 400 keys stay below
    /// 1e-5 relative, so 2e-5·max|v| bounds the error; a wrong mask or a lost rescale moves an
    /// output by about 0.1. The reference reads a quantized cache as stored and, for the integer
    /// key dots, rounds the queries to 8 bits as they do (`eightBitQueries`), so the same bound
    /// holds: the integer block sums are exact. (Without modelling that rounding the scores move
    /// by up to ~1e-2 here, so the bound could not tell a wrong block scale from it.) Heads that
    /// are not whole 32-element blocks are skipped for the quantized types.
    @Test(arguments: storages, cases)
    func matchesReference(_ storage: Storage, _ c: Case) throws {
        let type = storage.type
        let positions = c.firstPosition + c.tokens
        let hd = c.headDim, g = c.groupHeads
        guard let headBytes = type.kvHeadBytes(headDim: hd) else {
            #expect(type.isQuantized && hd % 32 != 0, "\(type) hd \(hd) has a head size")
            return
        }
        let heads = c.kvHeads, stride = heads * headBytes + 32
        let qStride = g * hd + 8, outStride = g * hd + 4
        let q = KernelTableTests.randomFloats(c.tokens * qStride, seed: 11).map { $0 * 3 }
        let keys = Self.cache(
            KernelTableTests.randomFloats(positions * heads * hd, seed: 12), positions: positions, headDim: hd, stride: stride,
            type: type, heads: heads)
        let values = Self.cache(
            KernelTableTests.randomFloats(positions * heads * hd, seed: 13).map { $0 * 4 }, positions: positions, headDim: hd,
            stride: stride, type: type, heads: heads)
        let shape = FusedAttentionShape(
            tokens: c.tokens, groupHeads: g, headDim: hd, firstPosition: c.firstPosition, keyStart: 0, keyEnd: positions,
            window: c.window, scale: 1 / Float(hd).squareRoot(), qStride: qStride, outStride: outStride, kvHeads: heads)
        let rows = shape.rows
        var expected = [Float](repeating: 0, count: c.tokens * outStride)
        var expectedLSE = [Float](repeating: 0, count: rows)
        keys.withUnsafeBytes { k in
            values.withUnsafeBytes { v in
                fusedAttentionReference(
                    q, keys: k.baseAddress!, values: v.baseAddress!, stride: stride, type: type, shape: shape, into: &expected,
                    logSumExp: &expectedLSE, eightBitQueries: type.isQuantized && storage.keyDots == .integer)
            }
        }
        var scratch = [Float](repeating: .nan, count: fusedAttentionScratchFloats(rows: rows, headDim: hd, kvHeads: heads))
        for level in KernelLevel.supported {
            var out = [Float](repeating: .nan, count: c.tokens * outStride)
            var lse = [Float](repeating: .nan, count: rows)
            keys.withUnsafeBytes { k in
                values.withUnsafeBytes { v in
                    fusedAttention(
                        q, keys: k.baseAddress!, values: v.baseAddress!, stride: stride, type: type, shape: shape, into: &out,
                        logSumExp: &lse, scratch: &scratch, keyDots: storage.keyDots, level: level)
                }
            }
            var worst: Float = 0
            for t in 0..<c.tokens {
                for i in 0..<(g * hd) { worst = max(worst, abs(out[t * outStride + i] - expected[t * outStride + i])) }
            }
            #expect(worst <= 2e-5 * 4, "\(storage) \(level) \(c): max error \(worst)")
            for r in 0..<rows { #expect(abs(lse[r] - expectedLSE[r]) <= 1e-5 * max(1, abs(expectedLSE[r])), "\(level) lse \(r)") }
        }
    }

    /// The keys split in three disjoint ranges (one empty for the early rows), each part's
    /// log-sum-exp kept, then ``mergeAttention``: equal to the reference over all keys, at
    /// every level (how a decode step's keys are shared between workers), for one KV head and
    /// for whole rows of two.
    @Test(arguments: [DType.f16, .f32, .q8_0, .q4_0], [1, 2])
    func splitKeysMerge(_ type: DType, kvHeads heads: Int) throws {
        let hd = 64, g = 4, tokens = 2, first = 200, positions = first + tokens
        let stride = try heads * #require(type.kvHeadBytes(headDim: hd))
        let q = KernelTableTests.randomFloats(tokens * g * hd, seed: 21).map { $0 * 3 }
        let keys = Self.cache(
            KernelTableTests.randomFloats(positions * heads * hd, seed: 22), positions: positions, headDim: hd, stride: stride,
            type: type, heads: heads)
        let values = Self.cache(
            KernelTableTests.randomFloats(positions * heads * hd, seed: 23).map { $0 * 4 }, positions: positions, headDim: hd,
            stride: stride, type: type, heads: heads)
        let whole = FusedAttentionShape(
            tokens: tokens, groupHeads: g, headDim: hd, firstPosition: first, keyStart: 0, keyEnd: positions, window: 150,
            scale: 0.125, qStride: g * hd, outStride: g * hd, kvHeads: heads)
        var expected = [Float](repeating: 0, count: tokens * g * hd)
        keys.withUnsafeBytes { k in
            values.withUnsafeBytes { v in
                fusedAttentionReference(
                    q, keys: k.baseAddress!, values: v.baseAddress!, stride: stride, type: type, shape: whole, into: &expected,
                    eightBitQueries: type.isQuantized)
            }
        }
        // The window starts at 51 (token 0) and 52 (token 1): the first range is empty for token 1.
        let bounds = [0, 52, 130, positions]
        let rows = whole.rows
        var scratch = [Float](repeating: .nan, count: fusedAttentionScratchFloats(rows: rows, headDim: hd, kvHeads: heads))
        for level in KernelLevel.supported {
            var parts = [Float](repeating: .nan, count: 3 * rows * hd), lse = [Float](repeating: .nan, count: 3 * rows)
            for p in 0..<3 {
                var shape = whole
                shape.keyStart = bounds[p]
                shape.keyEnd = bounds[p + 1]
                keys.withUnsafeBytes { k in
                    values.withUnsafeBytes { v in
                        parts.withUnsafeMutableBufferPointer { out in
                            lse.withUnsafeMutableBufferPointer { l in
                                fusedAttention(
                                    q, keys: k.baseAddress!, values: v.baseAddress!, stride: stride, type: type, shape: shape,
                                    into: out.baseAddress! + p * rows * hd, logSumExp: l.baseAddress! + p * rows,
                                    scratch: &scratch, keyDots: .integer, level: level)
                            }
                        }
                    }
                }
            }
            #expect((4..<8).allSatisfy { lse[$0] == -.infinity }, "\(level): token 1 sees nothing in the first range")
            #expect((0..<4).allSatisfy { lse[$0].isFinite }, "\(level): token 0 sees key 51 in the first range")
            var merged = [Float](repeating: .nan, count: tokens * g * hd)
            mergeAttention(parts, logSumExps: lse, parts: 3, rows: rows, headDim: hd, groupHeads: g, into: &merged, outStride: g * hd)
            let worst = zip(merged, expected).map { abs($0 - $1) }.max() ?? .nan
            #expect(worst <= 2e-5 * 4, "\(type) kv\(heads) \(level): max error \(worst)")
        }
    }
}
