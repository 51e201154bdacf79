import Foundation
import Testing

@testable import HearthKernels

/// `matmul(…, groups:)`, the output head under a grammar: the rows of the chosen 16-row groups
/// equal the full product's bit for bit (at every kernel level, for the interleaved quantized
/// layout with and without outlier picks, 16-bit and f16/f32 row layouts), and no other row is
/// written (except by the f32 batch product, which BLAS computes whole).
@Suite struct GroupMatMulTests {
    static let groupSets: [[Int32]] = [[0], [2], [0, 1, 2], [1, 3, 4, 6], [0, 2, 3, 4, 5, 6], [6]]

    func check(_ w: WeightMatrix, cols: Int, bits: Int, outliers: Int, label: String) {
        let pool = WorkerPool(threads: 2)
        for batch in [1, 3] {
            let x = OutlierChannelTests().activations(rows: batch, cols: cols, seed: UInt64(7 + batch))
            for level in KernelLevel.supported {
                func scratch() -> MatMulScratch {
                    let s = MatMulScratch(threads: 2, maxCols: cols, maxBatch: batch)
                    s.activations.bits = bits
                    s.activations.outlierChannels = outliers
                    return s
                }
                var full = [Float](repeating: .nan, count: batch * w.rows)
                matmul(w, x: x, batch: batch, y: &full, pool: pool, scratch: scratch(), level: level)
                for groups in Self.groupSets {
                    let sentinel: Float = 12345
                    var part = [Float](repeating: sentinel, count: batch * w.rows)
                    part.withUnsafeMutableBufferPointer { y in
                        matmul(w, x: x, batch: batch, y: y.baseAddress!, groups: groups, pool: pool, scratch: scratch(), level: level)
                    }
                    let chosen = Set(groups.flatMap { g in (Int(g) * 16)..<min(w.rows, Int(g) * 16 + 16) })
                    var same = true, untouched = true
                    for t in 0..<batch {
                        for r in 0..<w.rows {
                            let got = part[t * w.rows + r]
                            if chosen.contains(r) {
                                if got.bitPattern != full[t * w.rows + r].bitPattern { same = false }
                            } else if got != sentinel {
                                untouched = false
                            }
                        }
                    }
                    #expect(same, "\(label) \(level.rawValue) batch \(batch) groups \(groups): a chosen row differs from the full product")
                    // f32 rows for a batch go through BLAS whole (documented): only the values are checked.
                    let wholeProduct = w.dtype == .f32 && w.layout == .rows && batch > 1
                    #expect(untouched || wholeProduct, "\(label) \(level.rawValue) batch \(batch) groups \(groups): a row outside the groups was written")
                }
            }
        }
    }

    @Test(arguments: [DType.q4_0, .q8_0, .q4_K, .q6_K])
    func interleavedQuantizedRows(_ dtype: DType) throws {
        // 105 rows: the last group (96..<105) is partial.
        let rows = 105, cols = dtype.blockSize == 256 ? 512 : 320
        let (source, _) = KQuantTileTests().randomGGUFMatrix(dtype, rows: rows, cols: cols, seed: 5)
        let w = try #require(Quantizer.repackInterleaved(source))
        check(w, cols: cols, bits: 16, outliers: 0, label: "\(dtype.rawValue) 16-bit")
        check(w, cols: cols, bits: 8, outliers: 8, label: "\(dtype.rawValue) 8-bit with outliers")
    }

    @Test func rowLayoutFloats() {
        let rows = 105, cols = 96
        var state: UInt64 = 99
        let values = (0..<(rows * cols)).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int(state >> 40) % 2000 - 1000) / 997
        }
        let f32Buffer = OwnedBuffer(count: rows * cols * 4)
        let f16Buffer = OwnedBuffer(count: rows * cols * 2)
        for (i, v) in values.enumerated() {
            f32Buffer.pointer.storeBytes(of: v, toByteOffset: 4 * i, as: Float.self)
            f16Buffer.pointer.storeBytes(of: floatToHalf(v), toByteOffset: 2 * i, as: UInt16.self)
        }
        let f32 = WeightMatrix(rows: rows, cols: cols, dtype: .f32, data: f32Buffer.pointer, owner: f32Buffer)
        check(f32, cols: cols, bits: 16, outliers: 0, label: "f32")
        let f16 = WeightMatrix(rows: rows, cols: cols, dtype: .f16, data: f16Buffer.pointer, owner: f16Buffer)
        check(f16, cols: cols, bits: 16, outliers: 0, label: "f16")
    }

    /// The groups of a mask: a group is in when any of its 16 ids is allowed.
    @Test func allowedGroupsOfAMask() {
        var mask = [UInt64](repeating: 0, count: 4)  // 256 ids, 16 groups
        mask[0] = 1 << 17  // id 17: group 1
        mask[1] = 1 << 63  // id 127: group 7
        mask[3] = 0xFFFF << 48  // ids 240…255: group 15
        #expect(allowedGroups(mask, vocabulary: 256) == [1, 7, 15])
        #expect(allowedGroups(mask, vocabulary: 250) == [1, 7, 15])
        #expect(allowedGroups([], vocabulary: 256).isEmpty)
        #expect(groupRuns([1, 2, 3, 7, 7, 5, 9, 40], groupCount: 10) == [1..<4, 7..<8, 9..<10])
    }
}
