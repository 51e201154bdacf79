import Foundation
import HearthKernelsCommon
import Testing

@testable import HearthKernels

/// Products over f16 weights (an F16 GGUF, a 16-bit checkpoint run as stored), at every level
/// the CPU runs: one row of x (decoding), a few (a decode step of several sequences or a
/// speculative verification: each weight row converted once for all of them) and many (slabs
/// through `sgemm`). Against a Double dot of the same f16 values; and a row of a small batch
/// equals the one-row product bit for bit (a verified row is the row plain decoding computes).
@Suite struct F16MatMulTests {
    @Test(arguments: [640, 208, 216, 40])
    func f16ProductsAtEveryLevel(cols: Int) throws {
        let rows = 37
        let buffer = OwnedBuffer(count: rows * cols * 2)
        let values = KernelTableTests.randomFloats(rows * cols, seed: 12)
        for (i, v) in values.enumerated() { buffer.pointer.storeBytes(of: floatToHalf(v), toByteOffset: 2 * i, as: UInt16.self) }
        let w = WeightMatrix(rows: rows, cols: cols, dtype: .f16, data: buffer.pointer, owner: buffer)
        let weights = (0..<(rows * cols)).map { Double(halfToFloat(buffer.pointer.load(fromByteOffset: 2 * $0, as: UInt16.self))) }
        let pool = WorkerPool(threads: 2)
        for level in KernelLevel.supported {
            for batch in [1, 2, 3, 4, 5, 9, 16, 17] {
                let x = KernelTableTests.randomFloats(batch * cols, seed: UInt64(batch))
                let scratch = MatMulScratch(threads: 2, maxCols: cols, maxBatch: batch)
                var y = [Float](repeating: .nan, count: batch * rows)
                matmul(w, x: x, batch: batch, y: &y, pool: pool, scratch: scratch, level: level)
                for b in 0..<batch {
                    var single = [Float](repeating: .nan, count: rows)
                    let xb = Array(x[(b * cols)..<((b + 1) * cols)])
                    matmul(w, x: xb, batch: 1, y: &single, pool: pool, scratch: scratch, level: level)
                    for r in 0..<rows {
                        var exact = 0.0, magnitude = 0.0
                        for c in 0..<cols {
                            exact += weights[r * cols + c] * Double(xb[c])
                            magnitude += abs(weights[r * cols + c] * Double(xb[c]))
                        }
                        let got = y[b * rows + r]
                        #expect(abs(Double(got) - exact) <= 1e-5 * magnitude + 1e-30, "\(level) batch \(batch) row \(b),\(r): \(got) vs \(exact)")
                        if batch <= 16 {
                            #expect(got.bitPattern == single[r].bitPattern, "\(level) batch \(batch) row \(b),\(r) differs from one row")
                        }
                    }
                }
            }
        }
    }
}
