import Foundation
import Testing

@testable import HearthKernels

/// The `amx` level's K-quant product over 256-column activation super-blocks: the activation
/// quantization (every level's build equal to the portable one, each value within half a step),
/// the scalar reference (within rounding of a float product of the dequantized weights and the
/// quantized activations), and the tile kernel (the reference's bits, for every batch shape:
/// one token, partial tiles, pairs of tiles, several token blocks, outlier picks).
@Suite struct SuperBlockTests {
    static let types: [DType] = [.q4_K, .q5_K, .q6_K]

    func randomInput(_ count: Int, cols: Int, seed: UInt64, large: Bool) -> [Float] {
        var state = seed
        return (0..<count).map { i -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let v = Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
            return large && (i % cols == 7 || i % cols == 300) ? 400 * v : v
        }
    }

    /// Each level's super-block quantization equals the portable one value for value; the
    /// quants times their scale are within half a step of the input; the sums are the quants'.
    @Test func quantizationMatchesPortable() {
        let cols = 1024, rows = 3
        let x = randomInput(rows * cols, cols: cols, seed: 5, large: true)
        var expected: (quants: [Int8], scales: [Float], sums: [Int16])?
        for level in KernelLevel.supported {
            var quants = [Int8](repeating: 0, count: rows * cols), scales = [Float](repeating: 0, count: rows * cols / 256)
            var sums = [Int16](repeating: 0, count: rows * cols / 32), halves = [Int16](repeating: 0, count: rows * cols / 16)
            for r in 0..<rows {
                x.withUnsafeBufferPointer { xs in
                    KernelTable.at(level).quantizeSuperBlocks8(
                        xs.baseAddress! + r * cols, cols, &quants[r * cols], &scales[r * cols / 256], &sums[r * cols / 32],
                        &halves[r * cols / 16])
                }
            }
            for h in 0..<(rows * cols / 16) {
                #expect(Int(halves[h]) == quants[(16 * h)..<(16 * h + 16)].reduce(0) { $0 + Int($1) }, "\(level) half sum \(h)")
            }
            for i in 0..<(rows * cols) {
                let d = scales[i / 256]
                #expect(abs(Float(quants[i]) * d - x[i]) <= d / 2 * (1 + 1e-5), "\(level) value \(i)")
            }
            for b in 0..<(rows * cols / 32) {
                #expect(Int(sums[b]) == quants[(32 * b)..<(32 * b + 32)].reduce(0) { $0 + Int($1) }, "\(level) sum \(b)")
            }
            if let expected {
                #expect(quants == expected.quants && scales == expected.scales && sums == expected.sums, "\(level)")
            } else {
                expected = (quants, scales, sums)
            }
        }
    }

    /// The reference equals a float product of the dequantized weights and the super-block
    /// activations within rounding, and the amx kernel equals the reference bit for bit.
    @Test(arguments: types)
    func kernelMatchesReference(_ dtype: DType) throws {
        try check(dtype, rows: 37, cols: 768, batches: [1, 2, 15, 16, 17, 33, 40, 67], outliers: [0, 2])
    }

    /// Several token blocks (the kernel's blocks are 256 tokens at 4096 columns) and a partial
    /// tile at a block's end.
    @Test func kernelCrossesTokenBlocks() throws {
        try check(.q6_K, rows: 20, cols: 4096, batches: [263], outliers: [8])
    }

    private func check(_ dtype: DType, rows: Int, cols: Int, batches: [Int], outliers: [Int]) throws {
        let (source, _) = KQuantTileTests().randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 31)
        let w = try #require(Quantizer.repackInterleaved(source))
        let amx = KernelLevel.supported.contains(.amx)
        var row = [Float](repeating: 0, count: cols)
        for batch in batches { for picks in outliers {
            let x = randomInput(batch * cols, cols: cols, seed: UInt64(batch * 7 + picks), large: picks > 0)
            let act = QuantizedActivations(maxRows: batch, maxCols: cols)
            act.bits = 8
            act.outlierChannels = picks
            act.superBlocks = true
            x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: batch, cols: cols, level: .amx) }
            let groups = 0..<((rows + 15) / 16)
            var reference = [Float](repeating: .nan, count: batch * rows)
            superBlockMatMulReference(w, act: act, batch: batch, groups: groups, y: &reference, ldy: rows)
            for r in 0..<rows {
                row.withUnsafeMutableBufferPointer { source.dequantizeRow(r, into: $0.baseAddress!) }
                for t in 0..<batch {
                    var exact: Double = 0, magnitude: Double = 0
                    for c in 0..<cols {
                        let a = Double(act.superQuants[t * cols + c]) * Double(act.superScales[t * cols / 256 + c / 256])
                        exact += Double(row[c]) * a
                        magnitude += abs(Double(row[c]) * a)
                    }
                    let i = t * rows + r
                    #expect(abs(Double(reference[i]) - exact) <= 1e-5 * max(1, magnitude), "\(dtype) reference r\(r) t\(t)")
                }
            }
            guard amx else { continue }
            var y = [Float](repeating: .nan, count: batch * rows)
            quantizedMatMul(w, act: act, batch: batch, groups: groups, y: &y, ldy: rows, level: .amx)
            let differ = zip(y, reference).filter { $0 != $1 }.count
            #expect(differ == 0, "\(dtype) batch \(batch) picks \(picks): \(differ) of \(y.count) values differ from the reference")
        } }
    }
}
