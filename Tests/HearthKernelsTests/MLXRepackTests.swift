import Foundation
import Testing

@testable import HearthKernels

/// MLX 4-bit affine matrices rearranged into q4_1 tiles give back exactly w = s·q + b.
@Suite struct MLXRepackTests {
    struct Packed {
        var words: [UInt32]
        var q: [Int]
        var scales: [UInt16]
        var biases: [UInt16]
    }

    /// A random matrix in MLX's packing: element j of a row in word j/8 at bits 4(j mod 8).
    static func randomPacked(rows: Int, cols: Int, groupSize: Int, seed: UInt64) -> Packed {
        var state = seed
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        let q = (0..<(rows * cols)).map { _ in Int(next() % 16) }
        var words = [UInt32](repeating: 0, count: rows * cols / 8)
        for (i, v) in q.enumerated() { words[i / 8] |= UInt32(v) << UInt32(4 * (i % 8)) }
        let groups = rows * cols / groupSize
        let scales = (0..<groups).map { _ in floatToHalf(Float(next() % 1000 + 1) / 50_000) }
        let biases = (0..<groups).map { _ in floatToHalf(-Float(next() % 1000) / 5_000) }
        return Packed(words: words, q: q, scales: scales, biases: biases)
    }

    static func repack(_ p: Packed, rows: Int, cols: Int, groupSize: Int, threads: Int) -> (WeightMatrix, OwnedBuffer) {
        let buffer = OwnedBuffer(count: DType.q4_1.matrixBytes(rows: rows, cols: cols, layout: .interleaved16) ?? 0)
        p.words.withUnsafeBytes { words in
            p.scales.withUnsafeBufferPointer { s in
                p.biases.withUnsafeBufferPointer { b in
                    MLXRepack.repack4Bit(
                        packed: words.baseAddress!, scales: s.baseAddress!, biases: b.baseAddress!, rows: rows, cols: cols,
                        groupSize: groupSize, into: buffer.pointer, threads: threads)
                }
            }
        }
        return (WeightMatrix(rows: rows, cols: cols, dtype: .q4_1, layout: .interleaved16, data: buffer.pointer, owner: buffer), buffer)
    }

    @Test(arguments: [(37, 128, 32), (16, 64, 64), (21, 256, 128), (5, 128, 64)])
    func tilesDequantizeToTheAffineRule(_ shape: (Int, Int, Int)) {
        let (rows, cols, groupSize) = shape
        let p = Self.randomPacked(rows: rows, cols: cols, groupSize: groupSize, seed: UInt64(rows * cols))
        let (w, _) = Self.repack(p, rows: rows, cols: cols, groupSize: groupSize, threads: 2)
        var out = [Float](repeating: 0, count: cols)
        for r in 0..<rows {
            out.withUnsafeMutableBufferPointer { w.dequantizeRow(r, into: $0.baseAddress!) }
            for j in 0..<cols {
                let g = (r * cols + j) / groupSize
                // The scalar definition of MLX's packing agrees with the test's packer.
                let q = p.words.withUnsafeBytes { MLXRepack.element($0.baseAddress!, row: r, cols: cols, bits: 4, column: j) }
                #expect(q == p.q[r * cols + j])
                // q4_1 dequantizes as d·q + m in f32, the same products MLX's f32 path forms.
                let expected = halfToFloat(p.scales[g]) * Float(q) + halfToFloat(p.biases[g])
                #expect(out[j] == expected, "row \(r) column \(j)")
            }
        }
    }

    /// One thread and several give the same bytes; padding rows stay zero.
    @Test func threadCountDoesNotChangeTheTiles() {
        let (rows, cols, groupSize) = (45, 192, 64)
        let p = Self.randomPacked(rows: rows, cols: cols, groupSize: groupSize, seed: 11)
        let (a, bufferA) = Self.repack(p, rows: rows, cols: cols, groupSize: groupSize, threads: 1)
        let (b, bufferB) = Self.repack(p, rows: rows, cols: cols, groupSize: groupSize, threads: 3)
        #expect(memcmp(bufferA.pointer, bufferB.pointer, a.byteCount) == 0)
        #expect(a.byteCount == b.byteCount)
    }

    /// The integer kernel over repacked tiles agrees with its scalar reference.
    @Test func kernelMatchesReference() {
        let (rows, cols, groupSize) = (40, 128, 64)
        let p = Self.randomPacked(rows: rows, cols: cols, groupSize: groupSize, seed: 5)
        let (w, _) = Self.repack(p, rows: rows, cols: cols, groupSize: groupSize, threads: 2)
        let batch = 5
        let x = (0..<(batch * cols)).map { Float(($0 * 37) % 101) / 50 - 1 }
        let act = QuantizedActivations(maxRows: batch, maxCols: cols)
        x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: batch, cols: cols) }
        var fast = [Float](repeating: 0, count: batch * rows), reference = fast
        let groups = 0..<((rows + 15) / 16)
        fast.withUnsafeMutableBufferPointer {
            quantizedMatMul(w, act: act, batch: batch, groups: groups, y: $0.baseAddress!, ldy: rows)
        }
        reference.withUnsafeMutableBufferPointer {
            quantizedMatMulReference(w, act: act, batch: batch, groups: groups, y: $0.baseAddress!, ldy: rows)
        }
        for i in fast.indices { #expect(abs(fast[i] - reference[i]) <= 1e-4 * max(1, abs(reference[i])), "\(i)") }
    }
}
