import Foundation
import Testing

@testable import HearthKernels

/// 8-bit products with each token's largest activations picked out and multiplied in f32
/// (`QuantizedActivations.outlierChannels`, `OutlierPicks`, `addOutlierProducts`).
@Suite struct OutlierChannelTests {
    static let types: [DType] = [.q4_0, .q8_0, .q5_0, .q5_1, .q4_K, .q5_K, .q6_K]

    /// Deterministic activations in [-1, 1) with a few planted large values per row (the kind of
    /// hidden channel that stretches an 8-bit block's scale).
    func activations(rows: Int, cols: Int, seed: UInt64) -> [Float] {
        var state = seed
        var x = (0..<(rows * cols)).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
        }
        for r in 0..<rows {
            for k in 0..<5 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let c = Int(state >> 33) % cols
                x[r * cols + c] = (k % 2 == 0 ? 1 : -1) * Float(20 + 7 * k + r % 3)
            }
        }
        return x
    }

    /// The picks are each row's k largest magnitudes, with their values; the 8-bit blocks are
    /// exactly those of the row with the picks set to zero; 16-bit quantization picks nothing.
    @Test func picksAreTheLargestAndLeaveTheBlocks() {
        let rows = 5, cols = 640, k = 8
        var x = activations(rows: rows, cols: cols, seed: 41)
        // Row 0: every pick in one block (the k-th largest block maximum is then a small value).
        for i in 0..<k { x[96 + 3 * i] = Float(30 + i) * (i % 2 == 0 ? 1 : -1) }
        let act = QuantizedActivations(maxRows: rows, maxCols: cols)
        act.bits = 8
        act.outlierChannels = k
        x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: rows, cols: cols) }
        #expect(act.outliers.count == k)
        var zeroed = x
        for r in 0..<rows {
            let expected = (0..<cols).sorted { abs(x[r * cols + $0]) > abs(x[r * cols + $1]) || (abs(x[r * cols + $0]) == abs(x[r * cols + $1]) && $0 < $1) }.prefix(k)
            let picked = (0..<k).map { Int(act.outliers.columns[r * k + $0]) }
            #expect(picked == Array(expected), "row \(r)")
            for (i, c) in picked.enumerated() {
                #expect(act.outliers.values[r * k + i] == x[r * cols + c])
                zeroed[r * cols + c] = 0
            }
        }
        let plain = QuantizedActivations(maxRows: rows, maxCols: cols)
        plain.bits = 8
        zeroed.withUnsafeBufferPointer { plain.quantize($0.baseAddress!, rows: rows, cols: cols) }
        for i in 0..<(rows * cols) { #expect(act.quants[i] == plain.quants[i], "quant \(i)") }
        for i in 0..<(rows * cols / 32) { #expect(act.scales[i] == plain.scales[i] && act.sums[i] == plain.sums[i], "block \(i)") }
        // The index lists every picked column once, ascending, and finds each pick's column.
        let listed = (0..<act.outliers.slots).map { Int(act.outliers.slotColumns[$0]) }
        let pickedColumns = Set((0..<(rows * k)).map { Int(act.outliers.columns[$0]) })
        #expect(listed == pickedColumns.sorted())
        for i in 0..<(rows * k) {
            let c = Int(act.outliers.columns[i])
            #expect(act.outliers.slotColumns[Int(act.outliers.columnSlots[c])] == Int32(c))
        }
        act.bits = 16
        x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: rows, cols: cols) }
        #expect(act.outliers.count == 0)
    }

    /// A row of NaN but for three values quantizes without trapping at every level, picks the
    /// largest of them first, and its placeholders add nothing. (Which of the others are found
    /// depends on how the level's quantizer folds NaN into the block's scale, the search's bound.)
    @Test func fewerValuesThanPicks() {
        let cols = 32
        var x = [Float](repeating: .nan, count: cols)
        x[3] = 2; x[7] = -5; x[30] = 1
        for level in KernelLevel.supported {
            let act = QuantizedActivations(maxRows: 1, maxCols: cols)
            act.bits = 8
            act.outlierChannels = 8
            x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: 1, cols: cols, level: level) }
            #expect(act.outliers.columns[0] == 7 && act.outliers.values[0] == -5, "\(level)")
            var seen = Set<Int32>()
            for i in 0..<8 where act.outliers.values[i] != 0 {
                let c = act.outliers.columns[i]
                #expect([3, 7, 30].contains(c) && !seen.contains(c) && act.outliers.values[i] == x[Int(c)], "\(level) pick \(i)")
                seen.insert(c)
            }
        }
    }

    /// Through the matmul entry point at every level this CPU runs: the 8-bit product of the
    /// blocks without the picks plus the picks' f32 products, against the same sum over the
    /// dequantized weights in Double; and on rows with planted outliers it is far closer to the
    /// f32 product than the plain 8-bit one.
    @Test(arguments: types)
    func matmulAddsThePicks(_ dtype: DType) throws {
        let rows = 37, cols = dtype.blockSize == 256 ? 768 : 640, k = 8
        let (source, _) = KQuantTileTests().randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 23)
        let w = try #require(Quantizer.repackInterleaved(source))
        let pool = WorkerPool(threads: 2)
        var weights = [Float](repeating: 0, count: rows * cols)
        weights.withUnsafeMutableBufferPointer { b in for r in 0..<rows { source.dequantizeRow(r, into: b.baseAddress! + r * cols) } }
        for batch in [1, 3, 9, 38] {
            let x = activations(rows: batch, cols: cols, seed: UInt64(batch))
            for level in KernelLevel.supported {
                let scratch = MatMulScratch(threads: 2, maxCols: cols, maxBatch: batch)
                scratch.activations.bits = 8
                scratch.activations.outlierChannels = k
                var y = [Float](repeating: .nan, count: batch * rows)
                matmul(w, x: x, batch: batch, y: &y, pool: pool, scratch: scratch, level: level)
                let act = scratch.activations
                #expect(act.outliers.count == k)
                let plain = MatMulScratch(threads: 2, maxCols: cols, maxBatch: batch)
                plain.activations.bits = 8
                var yPlain = [Float](repeating: .nan, count: batch * rows)
                matmul(w, x: x, batch: batch, y: &yPlain, pool: pool, scratch: plain, level: level)
                var errorWith: Double = 0, errorWithout: Double = 0
                for t in 0..<batch {
                    // The amx level reads the K-quants' activations in super-blocks (SuperBlockTests).
                    let superBlocks = KernelTable.at(level).readsSuperBlocks(w)
                    var a = (0..<cols).map { c in
                        superBlocks
                            ? Double(act.superQuants[t * cols + c]) * Double(act.superScales[t * cols / 256 + c / 256])
                            : Double(act.quants[t * cols + c]) * Double(act.scales[t * cols / 32 + c / 32])
                    }
                    for i in 0..<k { a[Int(act.outliers.columns[t * k + i])] += Double(act.outliers.values[t * k + i]) }
                    for r in 0..<rows {
                        var expected: Double = 0, magnitude: Double = 0, f32: Double = 0
                        for c in 0..<cols {
                            let wv = Double(weights[r * cols + c])
                            expected += wv * a[c]
                            magnitude += abs(wv * a[c])
                            f32 += wv * Double(x[t * cols + c])
                        }
                        let got = y[t * rows + r]
                        #expect(abs(Double(got) - expected) <= 1e-5 * max(1, magnitude), "\(dtype) \(level) batch \(batch) t\(t) r\(r): \(got) vs \(expected)")
                        errorWith += abs(Double(got) - f32)
                        errorWithout += abs(Double(yPlain[t * rows + r]) - f32)
                    }
                }
                #expect(errorWith * 3 < errorWithout, "\(dtype) \(level) batch \(batch): \(errorWith) vs \(errorWithout)")
            }
        }
    }

    /// The outlier products over many groups at once — whole tiles of eight groups, a part tile,
    /// a last group of 6 rows, and scratch that holds only one or three groups' tables — equal
    /// the portable reference at every level this CPU runs.
    @Test(arguments: types)
    func outlierProductsInTiles(_ dtype: DType) throws {
        let rows = 150, cols = dtype.blockSize == 256 ? 512 : 320, batch = 9, k = 8
        let (source, _) = KQuantTileTests().randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 31)
        let w = try #require(Quantizer.repackInterleaved(source))
        let x = activations(rows: batch, cols: cols, seed: 7)
        let act = QuantizedActivations(maxRows: batch, maxCols: cols)
        act.bits = 8
        act.outlierChannels = k
        x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: batch, cols: cols) }
        let start = (0..<(batch * rows)).map { Float($0 % 13) / 7 - 1 }
        var reference = start
        addOutlierProductsPortable(w, picks: act.outliers, batch: batch, groups: 0..<10, y: &reference, ldy: rows)
        #expect(reference != start)
        for level in KernelLevel.supported {
            for scratchFloats in [1 << 20, 16 * (act.outliers.slots + 1), 3 * 16 * (act.outliers.slots + 1)] {
                var scratch = [Float](repeating: .nan, count: scratchFloats + 1)
                var y = start
                // From the second float: the kernel aligns what it is given.
                scratch.withUnsafeMutableBufferPointer { s in
                    addOutlierProducts(
                        w, act: act, batch: batch, groups: 0..<10, y: &y, ldy: rows, scratch: s.baseAddress! + 1,
                        scratchFloats: scratchFloats, level: level)
                }
                for i in 0..<(batch * rows) {
                    #expect(abs(y[i] - reference[i]) <= 1e-5 * max(1, abs(reference[i])), "\(dtype) \(level) \(scratchFloats) \(i): \(y[i]) vs \(reference[i])")
                }
            }
        }
    }
}
