import Foundation
import Testing

@testable import HearthKernels
import HearthKernelsCommon

/// The per-level kernel table: every dispatched operation, run at every level this CPU runs in
/// this one process, against a scalar reference that shares no code with the kernels.
@Suite struct KernelTableTests {
    /// A deterministic stream of floats in [-1, 1).
    static func randomFloats(_ count: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
        }
    }

    @Test func tablePerLevel() {
        #expect(KernelTable.current.level == KernelLevel.current)
        for level in KernelLevel.supported { #expect(KernelTable.at(level).level == level) }
        // A level this CPU cannot run gives the best one below it (never an illegal instruction).
        for level in KernelLevel.allCases {
            let expected = KernelLevel.supported.last { $0 <= level } ?? .portable
            #expect(KernelTable.at(level).level == expected, "\(level)")
        }
        #expect(KernelTable.at(.portable).quantizedKernelName == "portable")
    }

    /// f16 and f32 attention scores and weighted values at every level against the Double
    /// references. Tolerance: the kernels sum `headDim` products in Float in their own order
    /// (8 or 16 lanes, then a horizontal sum), an error below headDim·2⁻²⁴·Σ|products|; 1e-6·Σ|·| bounds it for
    /// headDim ≤ 16 per lane chain.
    @Test(arguments: [DType.f16, .f32])
    func attentionMatchesReference(_ type: DType) {
        let headDim = 80, positions = 37, stride = headDim * (type == .f16 ? 2 : 4) + 32
        let q = Self.randomFloats(headDim, seed: 1)
        let values = Self.randomFloats(positions * headDim, seed: 2).map { $0 * 4 }
        var cache = [UInt8](repeating: 0, count: positions * stride)
        cache.withUnsafeMutableBytes { raw in
            for j in 0..<positions {
                values.withUnsafeBufferPointer {
                    storeCached($0.baseAddress! + j * headDim, type: type, count: headDim, into: raw.baseAddress! + j * stride)
                }
            }
        }
        let weights = Self.randomFloats(positions, seed: 3).map { abs($0) }
        Self.attentionAtEveryLevel(
            q: q, cache: cache, stride: stride, weights: weights, headDim: headDim, scale: 0.125, type: type
        ) { level, range, scores, expectedScores, out, expectedOut in
            for j in range {
                let magnitude = (0..<headDim).reduce(Float(0)) { $0 + abs(q[$1] * values[j * headDim + $1]) } * 0.125
                #expect(abs(scores[j] - expectedScores[j]) <= 1e-6 * magnitude + 1e-30, "\(type) \(level) score \(j)")
            }
            for i in 0..<headDim {
                let magnitude = range.reduce(Float(0)) { $0 + abs(weights[$1] * values[$1 * headDim + i]) }
                #expect(abs(out[i] - expectedOut[i]) <= 1e-6 * magnitude + 1e-30, "\(type) \(level) value \(i)")
            }
        }
    }

    /// `attentionScores` and `attentionValues` (weights `weights`, one per position of `cache`)
    /// at every level and their Double references, over the whole cache, one position and a
    /// middle range; `check(level, range, scores, expectedScores, out, expectedOut)` judges each.
    static func attentionAtEveryLevel(
        q: [Float], cache: [UInt8], stride: Int, weights: [Float], headDim: Int, scale: Float, type: DType,
        check: (KernelLevel, ClosedRange<Int>, [Float], [Float], [Float], [Float]) -> Void
    ) {
        let positions = weights.count
        for range in [0...(positions - 1), 5...5, 3...30] {
            var expectedScores = [Float](repeating: 0, count: positions), expectedOut = [Float](repeating: 0, count: headDim)
            cache.withUnsafeBytes { raw in
                attentionScoresReference(
                    q, keys: raw.baseAddress!, stride: stride, positions: range, headDim: headDim, scale: scale, type: type,
                    into: &expectedScores)
                attentionValuesReference(
                    weights, values: raw.baseAddress!, stride: stride, positions: range, headDim: headDim, type: type,
                    into: &expectedOut)
            }
            for level in KernelLevel.supported {
                var scores = [Float](repeating: .nan, count: positions), out = [Float](repeating: .nan, count: headDim)
                cache.withUnsafeBytes { raw in
                    attentionScores(
                        q, keys: raw.baseAddress!, stride: stride, positions: range, headDim: headDim, scale: scale, type: type,
                        into: &scores, level: level)
                    attentionValues(
                        weights, values: raw.baseAddress!, stride: stride, positions: range, headDim: headDim, type: type,
                        into: &out, level: level)
                }
                check(level, range, scores, expectedScores, out, expectedOut)
            }
        }
    }

    /// f16 cache rows load exactly (every level) to the values the reference decodes from the bits,
    /// subnormals, infinities and signed zeros included.
    @Test func loadCachedIsExactAtEveryLevel() {
        var bits = (0..<4096).map { UInt16(truncatingIfNeeded: $0 &* 40_503) }
        bits += [0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x3c00, 0xbc00]
        bits = bits.filter { ($0 & 0x7c00) != 0x7c00 || ($0 & 0x03ff) == 0 }  // NaN payloads aside
        var expected = [Float](repeating: 0, count: bits.count)
        bits.withUnsafeBytes { raw in
            // The reference's own decoder: key j = the element, q = 1, scale 1, one element per row.
            let one: [Float] = [1]
            for j in 0..<bits.count {
                attentionScoresReference(one, keys: raw.baseAddress!, stride: 2, positions: j...j, headDim: 1, scale: 1, type: .f16, into: &expected)
            }
        }
        for level in KernelLevel.supported {
            var out = [Float](repeating: .nan, count: bits.count)
            bits.withUnsafeBytes { loadCached($0.baseAddress!, type: .f16, count: bits.count, into: &out, level: level) }
            for i in bits.indices {
                // Equal as numbers (the reference's Double sum starts at +0, so it cannot keep −0's sign);
                // the signed zero itself: bit for bit.
                #expect(out[i] == expected[i], "\(level) bits \(String(bits[i], radix: 16)): \(out[i]) vs \(expected[i])")
                if bits[i] == 0x8000 { #expect(out[i].bitPattern == (-Float.zero).bitPattern, "\(level) −0") }
            }
        }
    }

    /// The float dot at every level against a Double sum (Float rounding of n products: ≤ n·2⁻²⁴·Σ|·|).
    @Test func floatDotAtEveryLevel() {
        for n in [1, 7, 8, 31, 640, 1001] {
            let a = Self.randomFloats(n, seed: UInt64(n)), b = Self.randomFloats(n, seed: UInt64(n) + 9)
            let exact = zip(a, b).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            let magnitude = zip(a, b).reduce(0.0) { $0 + abs(Double($1.0) * Double($1.1)) }
            for level in KernelLevel.supported {
                let dot = dotF32(a, b, n, level: level)
                #expect(abs(Double(dot) - exact) <= Double(n) * 6e-8 * magnitude + 1e-30, "\(level) n \(n)")
            }
        }
    }

    /// ggml row-layout block types (the ones a K-quant GGUF keeps in rows: q2_K, q3_K, and any
    /// type read without repacking): at every level the dequantizer equals the scalar reference
    /// (``GGMLBlocks``, itself checked bit for bit against gguf-py) bit for bit, and the matrix–vector
    /// product (fused dots or dequantize-then-dot, per level) its Double dot within Float rounding.
    @Test(arguments: [DType.q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K])
    func ggmlRowsAtEveryLevel(_ dtype: DType) throws {
        let rows = 19, cols = 768
        let bytes = try #require(dtype.matrixBytes(rows: rows, cols: cols, layout: .rows))
        let buffer = OwnedBuffer(count: bytes)
        var state: UInt64 = 41
        for i in 0..<bytes {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            buffer.pointer.storeBytes(of: UInt8(truncatingIfNeeded: state >> 33), toByteOffset: i, as: UInt8.self)
        }
        let halves: [Int] = switch dtype {
        case .q5_0: [0]
        case .q2_K: [80, 82]
        case .q3_K: [108]
        case .q6_K: [208]
        default: [0, 2]
        }
        for block in 0..<(bytes / dtype.bytesPerBlock) {
            for (k, offset) in halves.enumerated() {  // finite scales of either sign
                let value = (k == 0 ? 0.01 : 0.004) * Float(block % 7 - 3)
                buffer.pointer.storeBytes(of: floatToHalf(value), toByteOffset: block * dtype.bytesPerBlock + offset, as: UInt16.self)
            }
        }
        let w = WeightMatrix(rows: rows, cols: cols, dtype: dtype, data: buffer.pointer, owner: buffer)
        let kind = try #require(dtype.ggmlKind)
        var reference = [Float](repeating: 0, count: rows * cols)
        GGMLKind.dequantize(buffer.pointer, kind: kind, blocks: rows * cols / dtype.blockSize, into: &reference)
        let x = Self.randomFloats(cols, seed: 8)
        let pool = WorkerPool(threads: 1)
        let scratch = MatMulScratch(threads: 1, maxCols: cols)
        for level in KernelLevel.supported {
            var out = [Float](repeating: .nan, count: rows * cols)
            dequantize(buffer.pointer, dtype: dtype, count: rows * cols, into: &out, level: level)
            #expect(out.map(\.bitPattern) == reference.map(\.bitPattern), "\(dtype) dequantized at \(level)")
            var y = [Float](repeating: .nan, count: rows)
            matmul(w, x: x, batch: 1, y: &y, pool: pool, scratch: scratch, level: level)
            for r in 0..<rows {
                var exact: Double = 0, magnitude: Double = 0
                for c in 0..<cols {
                    exact += Double(reference[r * cols + c]) * Double(x[c])
                    magnitude += abs(Double(reference[r * cols + c]) * Double(x[c]))
                }
                #expect(abs(Double(y[r]) - exact) <= 1e-5 * magnitude + 1e-30, "\(dtype) row \(r) at \(level): \(y[r]) vs \(exact)")
            }
        }
    }

    /// The tile reference's weights (read from the repacked tile on their own) equal the GGUF
    /// blocks' values from ``GGMLBlocks`` — the two readers share no code, so this checks the
    /// reference against the gguf-py-checked dequantizers. Tolerance: the reference groups the
    /// product as d·(sc·q) + (−dmin·m) where ggml rounds (d·sc)·q − dmin·m: a few ulp of the terms.
    @Test(arguments: [DType.q5_0, .q5_1, .q4_K, .q5_K, .q6_K])
    func tileReferenceReadsTheGGUFValues(_ dtype: DType) throws {
        let rows = 21, cols = 512
        let (source, _) = KQuantTileTests().randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 77)
        let tiles = try #require(Quantizer.repackInterleaved(source))
        var row = [Float](repeating: 0, count: cols)
        for r in 0..<rows {
            row.withUnsafeMutableBufferPointer { source.dequantizeRow(r, into: $0.baseAddress!, level: .portable) }
            for c in 0..<cols {
                let tile = tiles.tile(group: r / 16, block: c / dtype.blockSize)
                let within = c % dtype.blockSize
                let weight = tileWeightReference(tile, dtype: dtype, row: r % 16, sub: within / 32, element: within % 32)
                let value = Double(weight.factor) * Double(weight.integer) + Double(weight.offset)
                let size = abs(Double(weight.factor) * Double(weight.integer)) + abs(Double(weight.offset))
                #expect(abs(value - Double(row[c])) <= 4.8e-7 * size, "\(dtype) r\(r) c\(c): \(value) vs \(row[c])")
            }
        }
    }
}
