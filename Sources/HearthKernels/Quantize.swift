import HearthKernelsCommon
import Foundation
/// Reference quantizers for the block types, following GGUF's rounding rules so a block
/// quantized here equals the block llama.cpp's reference quantizer writes for the same floats.
package enum Quantizer {
    /// Quantizes 32 floats into one row-layout block of `dtype` at `out`.
    package static func quantizeBlock(_ x: UnsafePointer<Float>, dtype: DType, into out: UnsafeMutableRawPointer) {
        switch dtype {
        case .q4_0:
            var amax: Float = 0, signedMax: Float = 0
            for i in 0..<32 where abs(x[i]) > amax {
                amax = abs(x[i])
                signedMax = x[i]
            }
            let d = signedMax / -8
            let id: Float = d != 0 ? 1 / d : 0
            out.storeBytes(of: floatToHalf(d), as: UInt16.self)
            for i in 0..<16 {
                let lo = min(15, Int(Int8(truncatingIfNeeded: Int(x[i] * id + 8.5))))
                let hi = min(15, Int(Int8(truncatingIfNeeded: Int(x[i + 16] * id + 8.5))))
                out.storeBytes(of: UInt8(lo | hi << 4), toByteOffset: 2 + i, as: UInt8.self)
            }
        case .q4_1:
            var lo = Float.infinity, hi = -Float.infinity
            for i in 0..<32 {
                lo = min(lo, x[i])
                hi = max(hi, x[i])
            }
            let d = (hi - lo) / 15
            let id: Float = d != 0 ? 1 / d : 0
            out.storeBytes(of: floatToHalf(d), as: UInt16.self)
            out.storeBytes(of: floatToHalf(lo), toByteOffset: 2, as: UInt16.self)
            for i in 0..<16 {
                let a = min(15, Int(Int8(truncatingIfNeeded: Int((x[i] - lo) * id + 0.5))))
                let b = min(15, Int(Int8(truncatingIfNeeded: Int((x[i + 16] - lo) * id + 0.5))))
                out.storeBytes(of: UInt8(a | b << 4), toByteOffset: 4 + i, as: UInt8.self)
            }
        case .q8_0:
            var amax: Float = 0
            for i in 0..<32 { amax = max(amax, abs(x[i])) }
            let d = amax / 127
            let id: Float = d != 0 ? 1 / d : 0
            out.storeBytes(of: floatToHalf(d), as: UInt16.self)
            for i in 0..<32 {
                out.storeBytes(of: Int8((x[i] * id).rounded()), toByteOffset: 2 + i, as: Int8.self)
            }
        case .q8_a:
            // q4_1's rule with 255 steps: d = (max − min)/255, m = min, q = round((x − m)/d).
            var lo = Float.infinity, hi = -Float.infinity
            for i in 0..<32 {
                lo = min(lo, x[i])
                hi = max(hi, x[i])
            }
            let d = (hi - lo) / 255
            let id: Float = d != 0 ? 1 / d : 0
            out.storeBytes(of: floatToHalf(d), as: UInt16.self)
            out.storeBytes(of: floatToHalf(lo), toByteOffset: 2, as: UInt16.self)
            for i in 0..<32 {
                let q = min(255, max(0, ((x[i] - lo) * id).rounded()))
                out.storeBytes(of: UInt8(q), toByteOffset: 4 + i, as: UInt8.self)
            }
        case .f32, .f16, .bf16, .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K:
            break  // no Hearth quantizer / interleaved layout for these types
        }
    }

    /// Quantizes a row-major f32 matrix `(rows, cols)` straight into the interleaved16 layout.
    /// `out` must hold `dtype.matrixBytes(rows:cols:layout: .interleaved16)` bytes.
    package static func quantizeInterleaved(
        _ x: UnsafePointer<Float>, rows: Int, cols: Int, dtype: DType, into out: UnsafeMutableRawPointer
    ) {
        let blocks = cols / 32
        var block = [UInt8](repeating: 0, count: dtype.bytesPerBlock)
        let zeros = [Float](repeating: 0, count: 32)
        for g in 0..<((rows + 15) / 16) {
            for b in 0..<blocks {
                let tile = out + (g * blocks + b) * dtype.interleavedTileBytes
                for r in 0..<16 {
                    let row = g * 16 + r
                    block.withUnsafeMutableBytes { raw in
                        if row < rows {
                            quantizeBlock(x + row * cols + b * 32, dtype: dtype, into: raw.baseAddress!)
                        } else {
                            zeros.withUnsafeBufferPointer { quantizeBlock($0.baseAddress!, dtype: dtype, into: raw.baseAddress!) }
                        }
                        interleave(block: UnsafeRawPointer(raw.baseAddress!), dtype: dtype, row: r, into: tile)
                    }
                }
            }
        }
    }

    /// Places one row-layout block as row `r` (0..<16) of an interleaved tile.
    /// This is a lossless byte rearrangement: GGUF blocks convert without requantizing.
    package static func interleave(block p: UnsafeRawPointer, dtype: DType, row r: Int, into tile: UnsafeMutableRawPointer) {
        if KernelTileGeometry(dtype) != nil {
            interleaveGGML(block: p, dtype: dtype, row: r, into: tile)
            return
        }
        tile.storeBytes(of: p.loadUnaligned(as: UInt16.self), toByteOffset: 2 * r, as: UInt16.self)
        switch dtype {
        case .q4_0, .q4_1:
            let header = dtype == .q4_1 ? 4 : 2
            let quants = dtype == .q4_1 ? 64 : 32
            if dtype == .q4_1 {
                tile.storeBytes(of: p.loadUnaligned(fromByteOffset: 2, as: UInt16.self), toByteOffset: 32 + 2 * r, as: UInt16.self)
            }
            // Element e (< 16) is the low nibble of byte e; element e + 16 the high nibble.
            // Four bytes of a row go together: copied a word at a time.
            for k in 0..<4 {
                let word = p.loadUnaligned(fromByteOffset: header + 4 * k, as: UInt32.self)
                tile.storeBytes(of: word, toByteOffset: quants + 64 * k + 4 * r, as: UInt32.self)
            }
        case .q8_0:
            for k in 0..<8 {
                let word = p.loadUnaligned(fromByteOffset: 2 + 4 * k, as: UInt32.self)
                tile.storeBytes(of: word ^ 0x8080_8080, toByteOffset: 32 + 64 * k + 4 * r, as: UInt32.self)
            }
        case .q8_a:
            // Minimum after the scales; the unsigned quants as they are.
            tile.storeBytes(of: p.loadUnaligned(fromByteOffset: 2, as: UInt16.self), toByteOffset: 32 + 2 * r, as: UInt16.self)
            for k in 0..<8 {
                tile.storeBytes(
                    of: p.loadUnaligned(fromByteOffset: 4 + 4 * k, as: UInt32.self), toByteOffset: 64 + 64 * k + 4 * r,
                    as: UInt32.self)
            }
        case .f32, .f16, .bf16, .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K:
            break  // the GGUF types above; no interleaved layout for the others
        }
    }
}

/// Dequantizes row `r` (0..<16) of one interleaved tile: `dtype.blockSize` floats (32; 256
/// for the K-quants).
@inline(__always)
package func dequantizeInterleaved(_ tile: UnsafeRawPointer, dtype: DType, row r: Int, into out: UnsafeMutablePointer<Float>) {
    if KernelTileGeometry(dtype) != nil {
        dequantizeKernelTile(tile, dtype: dtype, row: r, into: out)
        return
    }
    let d = halfToFloat(tile.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self))
    switch dtype {
    case .q4_0, .q4_1:
        let m: Float = dtype == .q4_1 ? halfToFloat(tile.loadUnaligned(fromByteOffset: 32 + 2 * r, as: UInt16.self)) : 0
        let offset: Float = dtype == .q4_0 ? -8 : 0
        let quants = dtype == .q4_1 ? 64 : 32
        for k in 0..<4 {
            for j in 0..<4 {
                let byte = tile.load(fromByteOffset: quants + 64 * k + 4 * r + j, as: UInt8.self)
                out[4 * k + j] = d * (Float(byte & 0x0f) + offset) + m
                out[16 + 4 * k + j] = d * (Float(byte >> 4) + offset) + m
            }
        }
    case .q8_0:
        for k in 0..<8 {
            for j in 0..<4 {
                let q = Int8(bitPattern: tile.load(fromByteOffset: 32 + 64 * k + 4 * r + j, as: UInt8.self) ^ 0x80)
                out[4 * k + j] = d * Float(q)
            }
        }
    case .q8_a:
        let m = halfToFloat(tile.loadUnaligned(fromByteOffset: 32 + 2 * r, as: UInt16.self))
        for k in 0..<8 {
            for j in 0..<4 {
                out[4 * k + j] = d * Float(tile.load(fromByteOffset: 64 + 64 * k + 4 * r + j, as: UInt8.self)) + m
            }
        }
    case .f32, .f16, .bf16, .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K:
        break  // the GGUF types above; no interleaved layout for the others
    }
}

extension Quantizer {
    /// Quantizes any row-layout matrix into `dtype`'s interleaved16 layout, 16-row groups in
    /// parallel over `threads` threads. `progress` receives the fraction done (from any thread).
    package static func quantizeMatrix(
        _ w: WeightMatrix, to dtype: DType, into out: UnsafeMutableRawPointer, threads: Int,
        progress: (@Sendable (Double) -> Void)? = nil
    ) {
        let groups = (w.rows + 15) / 16
        let groupBytes = (w.cols / 32) * dtype.interleavedTileBytes
        let workers = max(1, min(threads, groups))
        let output = UncheckedPointer(out)
        DispatchQueueShim.concurrentPerform(iterations: workers) { worker in
            let temp = UnsafeMutablePointer<Float>.allocate(capacity: 16 * w.cols)
            defer { temp.deallocate() }
            let range = (groups * worker / workers)..<(groups * (worker + 1) / workers)
            for g in range {
                let rows = min(16, w.rows - g * 16)
                for r in 0..<rows { w.dequantizeRow(g * 16 + r, into: temp + r * w.cols) }
                quantizeInterleaved(temp, rows: rows, cols: w.cols, dtype: dtype, into: output.pointer + g * groupBytes)
                if worker == 0, let progress { progress(Double(g - range.lowerBound + 1) / Double(range.count)) }
            }
        }
    }
}

/// A raw pointer handed to worker threads that write disjoint parts of it.
/// `@unchecked Sendable`: callers guarantee the parts do not overlap.
struct UncheckedPointer: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }
}

extension Quantizer {
    /// Whether ``repackInterleaved(_:consumed:)`` rearranges `w`: a row-layout matrix of a
    /// type with a kernel layout (q8_a excepted: it is made interleaved).
    package static func canRepackInterleaved(_ w: WeightMatrix) -> Bool {
        w.layout == .rows && w.dtype.hasKernelLayout && w.dtype != .q8_a
            && w.dtype.matrixBytes(rows: w.rows, cols: w.cols, layout: .interleaved16) != nil
    }

    /// Rearranges a row-layout q4_0/q4_1/q8_0/q5_0/q5_1/q4_K/q5_K/q6_K matrix (as in GGUF
    /// files) into the interleaved16 kernel layout — a lossless rearrangement of bits.
    /// Returns nil for other types.

    package static func repackInterleaved(
        _ w: WeightMatrix, consumed: (@Sendable (_ offset: Int, _ count: Int) -> Void)? = nil
    ) -> WeightMatrix? {
        guard canRepackInterleaved(w),
            let bytes = w.dtype.matrixBytes(rows: w.rows, cols: w.cols, layout: .interleaved16)
        else { return nil }
        let buffer = OwnedBuffer(count: bytes)
        let blocks = w.blocksPerRow, groups = (w.rows + 15) / 16
        let output = UncheckedPointer(buffer.pointer)
        let groupBytes = 16 * blocks * w.dtype.bytesPerBlock
        // Groups split over the cores: the bit rearrangement of a K-quant matrix is a few
        // operations per weight, and a 4-billion-weight model should still load in seconds.
        let workers = max(1, min(groups / 64, ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueueShim.concurrentPerform(iterations: workers) { worker in
            let first = groups * worker / workers, end = groups * (worker + 1) / workers
            var released = first
            for g in first..<end {
                for b in 0..<blocks {
                    let tile = output.pointer + (g * blocks + b) * w.dtype.interleavedTileBytes
                    for r in 0..<16 where g * 16 + r < w.rows {
                        interleave(block: w.row(g * 16 + r) + b * w.dtype.bytesPerBlock, dtype: w.dtype, row: r, into: tile)
                    }
                }
                // Every 8 MiB of source read, tell the owner (which may hand the pages back), so
                // a big matrix never holds both whole copies at once.
                if let consumed, (g + 1 - released) * groupBytes >= 8 << 20 || g + 1 == end {
                    consumed(released * groupBytes, (g + 1 - released) * groupBytes)
                    released = g + 1
                }
            }
        }
        return WeightMatrix(rows: w.rows, cols: w.cols, dtype: w.dtype, layout: .interleaved16, data: buffer.pointer, owner: buffer)
    }
}
