import Foundation
import Testing

@testable import HearthKernels

@Suite struct KernelTests {
    @Test func halfConversionsRoundTrip() {
        // Every finite half converts to a float and back to itself.
        for bits in UInt16(0)...UInt16.max {
            let exponent = (bits >> 10) & 0x1f
            let value = halfToFloat(bits)
            if exponent == 0x1f {
                #expect(value.isInfinite || value.isNaN)
                continue
            }
            #expect(floatToHalf(value) == bits, "bits \(bits)")
        }
        #expect(halfToFloat(0x3c00) == 1)
        #expect(halfToFloat(0xc000) == -2)
        #expect(halfToFloat(0x0001) == Float(sign: .plus, exponent: -24, significand: 1))
        #expect(floatToHalf(1e6) == 0x7c00)
        #expect(floatToHalf(1 + 1.0 / 4096) == 0x3c00)  // ties round to even
    }

    @Test func bfloat16Conversions() {
        #expect(bfloat16ToFloat(0x3f80) == 1)
        #expect(floatToBFloat16(1) == 0x3f80)
        #expect(floatToBFloat16(-2.5) == 0xc020)
    }

    /// Batched and single-vector products agree with a scalar reference for every dtype.
    @Test(arguments: [DType.f32, .f16, .bf16])
    func matmulMatchesReference(_ dtype: DType) {
        let rows = 37, cols = 72, batch = 5
        var rng = SystemRandomNumberGenerator()
        let values = (0..<(rows * cols)).map { _ in Float.random(in: -1...1, using: &rng) }
        let buffer = OwnedBuffer(count: dtype.byteCount(elements: rows * cols) ?? 0)
        for (i, v) in values.enumerated() {
            switch dtype {
            case .f32: buffer.pointer.storeBytes(of: v, toByteOffset: i * 4, as: Float.self)
            case .f16: buffer.pointer.storeBytes(of: floatToHalf(v), toByteOffset: i * 2, as: UInt16.self)
            case .bf16: buffer.pointer.storeBytes(of: floatToBFloat16(v), toByteOffset: i * 2, as: UInt16.self)
            default: break
            }
        }
        let w = WeightMatrix(rows: rows, cols: cols, dtype: dtype, data: buffer.pointer, owner: buffer)
        let x = (0..<(batch * cols)).map { _ in Float.random(in: -1...1, using: &rng) }
        var expected = [Float](repeating: 0, count: batch * rows)
        var row = [Float](repeating: 0, count: cols)
        for r in 0..<rows {
            row.withUnsafeMutableBufferPointer { w.dequantizeRow(r, into: $0.baseAddress!) }
            for b in 0..<batch {
                var sum: Double = 0
                for c in 0..<cols { sum += Double(row[c]) * Double(x[b * cols + c]) }
                expected[b * rows + r] = Float(sum)
            }
        }
        let pool = WorkerPool(threads: 3)
        let scratch = MatMulScratch(threads: 3, maxCols: cols, slabRows: 8)
        var batched = [Float](repeating: 0, count: batch * rows)
        matmul(w, x: x, batch: batch, y: &batched, pool: pool, scratch: scratch)
        var single = [Float](repeating: 0, count: rows)
        matmul(w, x: x, batch: 1, y: &single, pool: pool, scratch: scratch)
        for i in 0..<(batch * rows) { #expect(abs(batched[i] - expected[i]) < 1e-4) }
        for r in 0..<rows { #expect(abs(single[r] - expected[r]) < 1e-4) }
    }

    @Test func workerPoolCoversEveryIndexOnce() {
        let pool = WorkerPool(threads: 4)
        for count in [0, 1, 3, 17, 1000] {
            let hits = UnsafeMutablePointer<Int>.allocate(capacity: max(count, 1))
            hits.initialize(repeating: 0, count: max(count, 1))
            pool.parallelFor(count, granularity: 4) { range in for i in range { hits[i] += 1 } }
            for i in 0..<count { #expect(hits[i] == 1) }
            hits.deallocate()
        }
    }

    @Test func softmaxAndNorms() {
        var v: [Float] = [1, 2, 3]
        softmax(&v, 3)
        #expect(abs(v.reduce(0, +) - 1) < 1e-6)
        #expect(v[2] > v[1] && v[1] > v[0])
        let x: [Float] = [1, -2, 3, -4]
        let w: [Float] = [1, 1, 1, 1]
        var out = [Float](repeating: 0, count: 4)
        rmsNorm(x, weight: w, eps: 0, dim: 4, out: &out)
        let rms = (x.map { $0 * $0 }.reduce(0, +) / 4).squareRoot()
        for i in 0..<4 { #expect(abs(out[i] - x[i] / rms) < 1e-6) }
    }
}
