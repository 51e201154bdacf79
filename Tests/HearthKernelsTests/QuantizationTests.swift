import Foundation
import Testing

@testable import HearthKernels
import HearthKernelsCommon

@Suite struct QuantizationTests {
    static let blockTypes: [DType] = [.q4_0, .q4_1, .q8_0, .q8_a]

    func randomMatrix(rows: Int, cols: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<(rows * cols)).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
        }
    }

    func quantize(_ x: [Float], rows: Int, cols: Int, dtype: DType) -> (WeightMatrix, OwnedBuffer) {
        let buffer = OwnedBuffer(count: dtype.matrixBytes(rows: rows, cols: cols, layout: .interleaved16) ?? 0)
        x.withUnsafeBufferPointer {
            Quantizer.quantizeInterleaved($0.baseAddress!, rows: rows, cols: cols, dtype: dtype, into: buffer.pointer)
        }
        let w = WeightMatrix(rows: rows, cols: cols, dtype: dtype, layout: .interleaved16, data: buffer.pointer, owner: buffer)
        return (w, buffer)
    }

    /// Per-block error bounds with d the block's step: q4_0 ≤ |d| (the clipped top code),
    /// q4_1 and q8_0 ≤ d/2 — plus |q|·|d − f16(d)| ≤ |q|·d·2⁻¹¹ from storing the scale in f16.
    @Test(arguments: blockTypes)
    func roundTripErrorWithinBound(_ dtype: DType) {
        let rows = 21, cols = 96
        let x = randomMatrix(rows: rows, cols: cols, seed: 7)
        let (w, _) = quantize(x, rows: rows, cols: cols, dtype: dtype)
        var out = [Float](repeating: 0, count: cols)
        for r in 0..<rows {
            out.withUnsafeMutableBufferPointer { w.dequantizeRow(r, into: $0.baseAddress!) }
            for b in 0..<(cols / 32) {
                let block = x[(r * cols + b * 32)..<(r * cols + b * 32 + 32)]
                let amax = block.map(abs).max() ?? 0
                let lo = block.min() ?? 0, hi = block.max() ?? 0
                let bound: Float
                switch dtype {
                case .q4_0: bound = amax / 8 * (1 + 8.0 / 2048)
                case .q4_1: bound = (hi - lo) / 15 * (0.5 + 15.0 / 2048) + abs(lo) / 2048
                case .q8_a: bound = (hi - lo) / 255 * (0.5 + 255.0 / 2048) + abs(lo) / 2048
                default: bound = amax / 127 * (0.5 + 127.0 / 2048)
                }
                for i in 0..<32 {
                    let error = abs(out[b * 32 + i] - block[block.startIndex + i])
                    #expect(error <= bound + 1e-6, "\(dtype) row \(r) block \(b) element \(i): \(error) > \(bound)")
                }
            }
        }
    }

    /// The interleaved layout is a lossless rearrangement of GGUF blocks.
    @Test(arguments: blockTypes)
    func interleavedMatchesRowBlocks(_ dtype: DType) {
        let rows = 16, cols = 64
        let x = randomMatrix(rows: rows, cols: cols, seed: 3)
        let (w, _) = quantize(x, rows: rows, cols: cols, dtype: dtype)
        var block = [UInt8](repeating: 0, count: dtype.bytesPerBlock)
        var fromBlock = [Float](repeating: 0, count: 32)
        var fromTile = [Float](repeating: 0, count: 32)
        for r in 0..<rows {
            for b in 0..<(cols / 32) {
                x.withUnsafeBufferPointer { xs in
                    block.withUnsafeMutableBytes {
                        Quantizer.quantizeBlock(xs.baseAddress! + r * cols + b * 32, dtype: dtype, into: $0.baseAddress!)
                    }
                }
                block.withUnsafeBytes { raw in
                    fromBlock.withUnsafeMutableBufferPointer { dequantizeBlock(raw.baseAddress!, dtype: dtype, into: $0.baseAddress!) }
                }
                fromTile.withUnsafeMutableBufferPointer {
                    dequantizeInterleaved(w.tile(group: 0, block: b), dtype: dtype, row: r, into: $0.baseAddress!)
                }
                #expect(fromBlock == fromTile)
            }
        }
    }

    /// The reference integer kernel equals a float dot of the dequantized operands, and
    /// the build's fast kernel equals the reference, for odd row counts and token counts.
    @Test(arguments: blockTypes)
    func kernelsMatchReference(_ dtype: DType) {
        let rows = 37, cols = 128
        let x = randomMatrix(rows: rows, cols: cols, seed: 11)
        let (w, _) = quantize(x, rows: rows, cols: cols, dtype: dtype)
        // 16, 17 and 40 tokens: the amx level's tile kernel (16 tokens a tile; one, eight left over).
        for batch in [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 40] { for bits in [8, 16] {
            let input = randomMatrix(rows: batch, cols: cols, seed: 5 + UInt64(batch))
            let act = QuantizedActivations(maxRows: batch, maxCols: cols)
            act.bits = bits
            input.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: batch, cols: cols) }
            var reference = [Float](repeating: .nan, count: batch * rows)
            let groups = 0..<((rows + 15) / 16)
            quantizedMatMulReference(w, act: act, batch: batch, groups: groups, y: &reference, ldy: rows)
            // Every level this CPU runs (portable, avx2, avx512, avx512-vnni, amx), in one process.
            var results: [KernelLevel: [Float]] = [:]
            for level in KernelLevel.supported {
                var y = [Float](repeating: .nan, count: batch * rows)
                quantizedMatMul(w, act: act, batch: batch, groups: groups, y: &y, ldy: rows, level: level)
                results[level] = y
            }
            var row = [Float](repeating: 0, count: cols)
            for r in 0..<rows {
                row.withUnsafeMutableBufferPointer { w.dequantizeRow(r, into: $0.baseAddress!) }
                for t in 0..<batch {
                    var exact: Double = 0
                    for c in 0..<cols {
                        let a = Double(act.activation(t * cols + c)) * Double(act.scales[t * (cols / 32) + c / 32])
                        exact += Double(row[c]) * a
                    }
                    let i = t * rows + r
                    #expect(abs(reference[i] - Float(exact)) <= 1e-3 * max(1, abs(Float(exact))), "\(dtype) ref r\(r) t\(t)")
                    for (level, y) in results {
                        #expect(abs(y[i] - reference[i]) <= 1e-4 * max(1, abs(reference[i])), "\(dtype) \(level) \(bits)-bit r\(r) t\(t)")
                    }
                }
            }
        } }
    }

    /// 8-bit products of a batch longer than one of the tile kernel's token blocks (128 tokens at
    /// 8192 columns, each copied into its own activation panel) and of rows not a multiple of 16:
    /// every level this CPU runs equals the scalar reference, and amx gives avx512-vnni's bits.
    @Test func longBatchesMatchReference() {
        let rows = 17, cols = 8192, batch = 150
        let (w, _) = quantize(randomMatrix(rows: rows, cols: cols, seed: 21), rows: rows, cols: cols, dtype: .q8_0)
        let act = QuantizedActivations(maxRows: batch, maxCols: cols)
        act.bits = 8
        randomMatrix(rows: batch, cols: cols, seed: 22).withUnsafeBufferPointer {
            act.quantize($0.baseAddress!, rows: batch, cols: cols)
        }
        let groups = 0..<((rows + 15) / 16)
        var reference = [Float](repeating: .nan, count: batch * rows)
        quantizedMatMulReference(w, act: act, batch: batch, groups: groups, y: &reference, ldy: rows)
        var byLevel: [KernelLevel: [Float]] = [:]
        for level in KernelLevel.supported {
            var y = [Float](repeating: .nan, count: batch * rows)
            quantizedMatMul(w, act: act, batch: batch, groups: groups, y: &y, ldy: rows, level: level)
            let worst = zip(y, reference).map { abs($0 - $1) / max(1, abs($1)) }.max() ?? .nan
            #expect(worst <= 1e-4, "\(level): worst relative difference \(worst)")
            byLevel[level] = y
        }
        // The tile kernel gives the VNNI kernel's bits (a token must not depend on its batch's length).
        if let tiles = byLevel[.amx], let vnni = byLevel[.avx512vnni] {
            #expect(tiles == vnni, "amx and avx512-vnni differ in \(zip(tiles, vnni).filter { $0 != $1 }.count) values")
        }
    }

    /// Every level's 8- and 16-bit activation quantizer stays within half a step, and its sums are its quants' sums.
    @Test(arguments: [8, 16])
    func activationQuantizationBound(bits: Int) {
        let cols = 256
        let x = randomMatrix(rows: 2, cols: cols, seed: 9)
        for level in KernelLevel.supported {
            let act = QuantizedActivations(maxRows: 2, maxCols: cols)
            act.bits = bits
            x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: 2, cols: cols, level: level) }
            for i in 0..<(2 * cols) {
                let d = act.scales[i / 32]
                let amax = x[(i / 32 * 32)..<(i / 32 * 32 + 32)].map(abs).max() ?? 0
                #expect(abs(d - amax / (bits == 16 ? 32767 : 127)) <= 1e-7, "\(level)")
                // Half a step, plus the float rounding of q·d.
                #expect(abs(Float(act.activation(i)) * d - x[i]) <= d / 2 * 1.001 + abs(x[i]) * 2.4e-7, "\(level) \(i)")
            }
            // Σq per block and d·Σq per block and per 16 columns agree with the quants.
            for block in 0..<(2 * cols / 32) {
                let sum = (0..<32).reduce(Int32(0)) { $0 + act.activation(32 * block + $1) }
                #expect(act.sums[block] == Float(sum), "\(level) block \(block)")
                if bits == 8 { #expect(act.scaledSums[block] == act.scales[block] * Float(sum), "\(level) block \(block)") }
            }
            if bits == 8 {
                for half in 0..<(2 * cols / 16) {
                    let sum = (0..<16).reduce(Int32(0)) { $0 + act.activation(16 * half + $1) }
                    #expect(act.scaledHalfSums[half] == act.scales[half / 2] * Float(sum), "\(level) half \(half)")
                }
            }
        }
    }

    /// Every level's 8- and 16-bit activation quantizer (AVX-512, AVX2, portable) equals the
    /// portable body bit for bit — scales, sums, and quants, exact halves included (row 2 has
    /// d = 1, so its k + ½ values are ties that must round away from zero).
    @Test(arguments: [8, 16])
    func activationQuantizationMatchesPortable(bits: Int) {
        let rows = 3, cols = 96, top: Float = bits == 16 ? 32767 : 127
        var x = randomMatrix(rows: rows, cols: cols, seed: 21)
        for i in 0..<cols { x[2 * cols + i] = Float(i % 9) - 4 + (i % 2 == 0 ? 0.5 : 0) }
        for b in 0..<(cols / 32) { x[2 * cols + b * 32] = b == 1 ? -top : top }
        var q16 = [Int16](repeating: 0, count: rows * cols), q8 = [Int8](repeating: 0, count: rows * cols)
        var scales = [Float](repeating: 0, count: rows * cols / 32), sums = scales
        x.withUnsafeBufferPointer {
            if bits == 16 {
                quantizeActivationRows16($0.baseAddress!, rows: 0..<rows, cols: cols, quants: &q16, scales: &scales, sums: &sums)
            } else {
                quantizeActivationRows($0.baseAddress!, rows: 0..<rows, cols: cols, quants: &q8, scales: &scales, sums: &sums)
            }
        }
        let q = bits == 16 ? q16.map(Int32.init) : q8.map(Int32.init)
        for level in KernelLevel.supported {
            let act = QuantizedActivations(maxRows: rows, maxCols: cols)
            act.bits = bits
            x.withUnsafeBufferPointer { act.quantize($0.baseAddress!, rows: rows, cols: cols, level: level) }
            for i in 0..<(rows * cols) { #expect(act.activation(i) == q[i], "quant \(i) at \(level)") }
            for i in 0..<(rows * cols / 32) {
                #expect(act.scales[i] == scales[i], "scale \(i) at \(level)")
                #expect(act.sums[i] == sums[i], "sum \(i) at \(level)")
            }
        }
        // -1.5 → -2 and 0.5 → 1 (half away from zero), -3 stays.
        #expect([q[2 * cols + 1], q[2 * cols + 2], q[2 * cols + 4]] == [-3, -2, 1])
    }
}

@Suite struct RepackTests {
    /// GGUF row-layout blocks rearranged into the kernel layout dequantize to exactly the same values.
    @Test(arguments: [DType.q4_0, .q4_1, .q8_0])
    func repackIsLossless(_ dtype: DType) throws {
        let rows = 21, cols = 64
        var state: UInt64 = 42
        let buffer = OwnedBuffer(count: dtype.matrixBytes(rows: rows, cols: cols, layout: .rows) ?? 0)
        for i in 0..<buffer.count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            buffer.pointer.storeBytes(of: UInt8(truncatingIfNeeded: state >> 33), toByteOffset: i, as: UInt8.self)
        }
        // Sane finite f16 scales (and minimums) at the start of every block.
        for block in 0..<(rows * cols / 32) {
            buffer.pointer.storeBytes(of: floatToHalf(0.01 * Float(block % 7 + 1)), toByteOffset: block * dtype.bytesPerBlock, as: UInt16.self)
            if dtype == .q4_1 {
                buffer.pointer.storeBytes(of: floatToHalf(-0.05), toByteOffset: block * dtype.bytesPerBlock + 2, as: UInt16.self)
            }
        }
        let source = WeightMatrix(rows: rows, cols: cols, dtype: dtype, data: buffer.pointer, owner: buffer)
        let repacked = try #require(Quantizer.repackInterleaved(source))
        #expect(repacked.layout == .interleaved16)
        var a = [Float](repeating: 0, count: cols), b = [Float](repeating: 0, count: cols)
        for r in 0..<rows {
            a.withUnsafeMutableBufferPointer { source.dequantizeRow(r, into: $0.baseAddress!) }
            b.withUnsafeMutableBufferPointer { repacked.dequantizeRow(r, into: $0.baseAddress!) }
            #expect(a == b, "row \(r)")
        }
    }
}
