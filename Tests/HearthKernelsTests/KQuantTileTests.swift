import Foundation
import Testing

@testable import HearthKernels

/// The interleaved16 tiles of the GGUF types q5_0, q5_1, q4_K, q5_K and q6_K: the load-time
/// repack is lossless, and every kernel level's integer matmul equals the scalar reference.
@Suite struct KQuantTileTests {
    static let types: [DType] = [.q5_0, .q5_1, .q4_K, .q5_K, .q6_K]

    /// A row-layout matrix of random blocks with finite, moderate f16 scales (and minimums).
    func randomGGUFMatrix(_ dtype: DType, rows: Int, cols: Int, seed: UInt64) -> (WeightMatrix, OwnedBuffer) {
        var state = seed
        let buffer = OwnedBuffer(count: dtype.matrixBytes(rows: rows, cols: cols, layout: .rows) ?? 0)
        for i in 0..<buffer.count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            buffer.pointer.storeBytes(of: UInt8(truncatingIfNeeded: state >> 33), toByteOffset: i, as: UInt8.self)
        }
        let halves: [Int]
        switch dtype {
        case .q6_K: halves = [208]
        case .q5_1, .q4_K, .q5_K: halves = [0, 2]
        default: halves = [0]
        }
        for block in 0..<(rows * cols / dtype.blockSize) {
            for (k, offset) in halves.enumerated() {
                let value = k == 0 ? 0.002 * Float(block % 5 + 1) : 0.001 * Float(block % 3 + 1)
                buffer.pointer.storeBytes(
                    of: floatToHalf(value), toByteOffset: block * dtype.bytesPerBlock + offset, as: UInt16.self)
            }
        }
        return (WeightMatrix(rows: rows, cols: cols, dtype: dtype, data: buffer.pointer, owner: buffer), buffer)
    }

    /// Repacked rows dequantize to exactly (bit for bit) the values of the GGUF blocks.
    @Test(arguments: types)
    func repackIsLossless(_ dtype: DType) throws {
        let rows = 37, cols = 512
        let (source, _) = randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 17)
        let repacked = try #require(Quantizer.repackInterleaved(source))
        #expect(repacked.layout == .interleaved16)
        #expect(repacked.byteCount == dtype.matrixBytes(rows: rows, cols: cols, layout: .interleaved16))
        var a = [Float](repeating: 0, count: cols), b = [Float](repeating: .nan, count: cols)
        for r in 0..<rows {
            a.withUnsafeMutableBufferPointer { source.dequantizeRow(r, into: $0.baseAddress!) }
            b.withUnsafeMutableBufferPointer { repacked.dequantizeRow(r, into: $0.baseAddress!) }
            #expect(a == b, "\(dtype) row \(r)")
        }
    }

    /// The reference kernel equals a float dot of the dequantized weights and the quantized
    /// activations, and each level this CPU runs equals the reference, for odd row and token counts.
    @Test(arguments: types)
    func kernelsMatchReference(_ dtype: DType) throws {
        // 768 columns: 24 units (several tiles of a K-quant row).
        let rows = 37, cols = 768, actBlocks = 768 / 32
        let (source, _) = randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 29)
        let w = try #require(Quantizer.repackInterleaved(source))
        var state: UInt64 = 3
        // 33 and 38 tokens: a second block of the 16-bit register kernel's 32-token blocks, its
        // one (five, six) tokens padded to a pass of two (eight). 130 and 137: a second block of
        // the 8-bit kernel's (128 tokens at 768 columns), its two tokens one pass read from the
        // tiles, its nine two passes over the group's decoded copy (9 to 38: one block, decoded).
        for batch in [1, 2, 3, 4, 5, 7, 8, 9, 33, 38, 130, 137] { for bits in [8, 16] {
            let input = (0..<(batch * cols)).map { _ -> Float in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
            }
            let act = QuantizedActivations(maxRows: batch, maxCols: cols)
            act.bits = bits
            input.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: batch, cols: cols) }
            let groups = 0..<((rows + 15) / 16)
            var reference = [Float](repeating: .nan, count: batch * rows)
            quantizedMatMulReference(w, act: act, batch: batch, groups: groups, y: &reference, ldy: rows)
            var results: [KernelLevel: [Float]] = [:]
            for level in KernelLevel.supported {
                var y = [Float](repeating: .nan, count: batch * rows)
                quantizedMatMul(w, act: act, batch: batch, groups: groups, y: &y, ldy: rows, level: level)
                results[level] = y
            }
            var row = [Float](repeating: 0, count: cols)
            for r in 0..<rows {
                row.withUnsafeMutableBufferPointer { source.dequantizeRow(r, into: $0.baseAddress!) }
                for t in 0..<batch {
                    var exact: Double = 0, magnitude: Double = 0
                    for c in 0..<cols {
                        let a = Double(act.activation(t * cols + c)) * Double(act.scales[t * actBlocks + c / 32])
                        exact += Double(row[c]) * a
                        magnitude += abs(Double(row[c]) * a)
                    }
                    let i = t * rows + r, tolerance = Float(1e-5 * max(1, magnitude))
                    #expect(abs(reference[i] - Float(exact)) <= tolerance, "\(dtype) reference r\(r) t\(t)")
                    for (level, y) in results {
                        #expect(abs(y[i] - reference[i]) <= tolerance, "\(dtype) \(level) \(bits)-bit r\(r) t\(t): \(y[i]) vs \(reference[i])")
                    }
                }
            }
        } }
    }

    /// The 8-bit prompt path as the engine runs it (the matmul entry point, outlier channels,
    /// activations with a few large channels as Gemma 3's hidden states have): the levels that
    /// multiply 8-bit activations in integers blocks of 32 (avx512-vnni; amx for q5_0 and q5_1)
    /// give the same bits, so a token does not depend on whether its batch was long enough for
    /// the amx tiles. (The amx level's K-quant products read super-blocks: SuperBlockTests.)
    @Test(arguments: [(DType.q5_0, 640), (.q5_1, 640), (.q4_K, 1024), (.q5_K, 1024), (.q6_K, 1024)])
    func eightBitLevelsAgreeOnLargeChannels(_ dtype: DType, _ cols: Int) throws {
        let rows = 64, batch = 48
        let (source, _) = randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 41)
        let w = try #require(Quantizer.repackInterleaved(source))
        let levels = KernelLevel.supported.filter { $0 >= .avx512vnni && !KernelTable.at($0).readsSuperBlocks(w) }
        guard levels.count > 1 else { return }
        var state: UInt64 = 9
        let x = (0..<(batch * cols)).map { i -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let v = Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
            return i % cols == 7 || i % cols == 300 ? 400 * v : v
        }
        let pool = WorkerPool(threads: 2)
        var results: [[Float]] = []
        for level in levels {
            let scratch = MatMulScratch(threads: 2, maxCols: cols, maxBatch: batch)
            scratch.activations.bits = 8
            scratch.activations.outlierChannels = 1
            var y = [Float](repeating: .nan, count: batch * rows)
            matmul(w, x: x, batch: batch, y: &y, pool: pool, scratch: scratch, level: level)
            results.append(y)
        }
        for (level, y) in zip(levels, results).dropFirst() {
            let differ = zip(y, results[0]).filter { $0 != $1 }.count
            #expect(differ == 0, "\(dtype) \(level) vs \(levels[0]): \(differ) of \(y.count) values differ")
        }
    }

    /// A q5_0 matrix whose columns are not a multiple of 256 (Gemma 3's 640) and the matmul
    /// entry point (activation quantization, row split) give the float product within rounding,
    /// at every level this CPU runs.
    @Test func matmulThroughEntryPoint() throws {
        let rows = 50, cols = 640
        let (source, _) = randomGGUFMatrix(.q5_0, rows: rows, cols: cols, seed: 5)
        let w = try #require(Quantizer.repackInterleaved(source))
        let x = (0..<(2 * cols)).map { Float(($0 % 11) - 5) / 8 }
        let pool = WorkerPool(threads: 2)
        var row = [Float](repeating: 0, count: cols)
        for level in KernelLevel.supported {
            var y = [Float](repeating: .nan, count: 2 * rows)
            matmul(w, x: x, batch: 2, y: &y, pool: pool, scratch: MatMulScratch(threads: 2, maxCols: cols, maxBatch: 2), level: level)
            for r in 0..<rows {
                row.withUnsafeMutableBufferPointer { source.dequantizeRow(r, into: $0.baseAddress!) }
                for t in 0..<2 {
                    var exact: Double = 0, magnitude: Double = 0
                    for c in 0..<cols {
                        exact += Double(row[c]) * Double(x[t * cols + c])
                        magnitude += abs(Double(row[c]) * Double(x[t * cols + c]))
                    }
                    // 16-bit activations (the default): |error| ≤ Σ|w|·d_a/2 ≤ magnitude/32767.
                    #expect(abs(Double(y[t * rows + r]) - exact) <= magnitude / 30000 + 1e-6, "\(level) r\(r) t\(t)")
                }
            }
        }
    }
}
