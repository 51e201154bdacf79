import HearthKernelsCommon

/// A read-only 2-D weight matrix `(rows, cols)` in row-major order, stored in any `DType`,
/// usually pointing into a memory-mapped model file.
///
/// `@unchecked Sendable`: the bytes are immutable for the matrix's lifetime, and `owner`
/// keeps the mapping (or buffer) that holds them alive.
package struct WeightMatrix: @unchecked Sendable {
    /// Output features (one row per output).
    package let rows: Int
    /// Input features.
    package let cols: Int
    /// How the elements are stored.
    package let dtype: DType
    /// How blocks are ordered.
    package let layout: WeightLayout
    /// The first byte of the matrix.
    package let data: UnsafeRawPointer
    /// Keeps the storage alive.
    package let owner: AnyObject?

    /// Wraps existing storage. The caller has validated that `data` holds
    /// `dtype.matrixBytes(rows:cols:layout:)` bytes.
    package init(
        rows: Int, cols: Int, dtype: DType, layout: WeightLayout = .rows, data: UnsafeRawPointer, owner: AnyObject?
    ) {
        self.rows = rows
        self.cols = cols
        self.dtype = dtype
        self.layout = layout
        self.data = data
        self.owner = owner
    }

    /// Bytes in one row (row-major layout).
    package var rowBytes: Int { cols / dtype.blockSize * dtype.bytesPerBlock }

    /// Total bytes of the matrix.
    package var byteCount: Int { dtype.matrixBytes(rows: rows, cols: cols, layout: layout) ?? 0 }

    /// Blocks per row.
    package var blocksPerRow: Int { cols / dtype.blockSize }

    /// Pointer to the start of row `r` (row-major layout only).
    @inline(__always)
    package func row(_ r: Int) -> UnsafeRawPointer { data + r * rowBytes }

    /// Pointer to the tile of 16-row group `g`, block column `b` (interleaved layout only).
    @inline(__always)
    package func tile(group g: Int, block b: Int) -> UnsafeRawPointer {
        data + (g * blocksPerRow + b) * dtype.interleavedTileBytes
    }

    /// Writes row `r` as Float into `out` (`cols` elements), with `level`'s dequantizers
    /// (default: the current level's).
    package func dequantizeRow(_ r: Int, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current) {
        switch layout {
        case .rows: dequantize(row(r), dtype: dtype, count: cols, into: out, level: level)
        case .interleaved16:
            for b in 0..<blocksPerRow {
                dequantizeInterleaved(tile(group: r / 16, block: b), dtype: dtype, row: r % 16, into: out + b * dtype.blockSize)
            }
        }
    }
}

/// Converts `count` elements stored row-major as `dtype` at `src` to Float, with `level`'s
/// dequantizers for the ggml-only block types (default: the current level's).
package func dequantize(
    _ src: UnsafeRawPointer, dtype: DType, count: Int, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    switch dtype {
    case .f32:
        out.update(from: src.assumingMemoryBound(to: Float.self), count: count)
    case .f16:
        KernelTable.at(level).halfToFloats(src, count, out)
    case .bf16:
        let b = src.assumingMemoryBound(to: UInt16.self)
        for i in 0..<count { out[i] = bfloat16ToFloat(UInt16(littleEndian: b[i])) }
    case .q4_0, .q4_1, .q8_0, .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .q8_a:
        let n = dtype.blockSize
        if let kind = dtype.ggmlKind {
            dequantizeGGML(src, kind: kind, blocks: count / n, into: out, level: level)
            return
        }
        for block in 0..<(count / n) {
            dequantizeBlock(src + block * dtype.bytesPerBlock, dtype: dtype, into: out + block * n)
        }
    }
}

/// Dequantizes one GGUF-layout block (`dtype.blockSize` weights: 32, or 256 for the K-quants).
@inline(__always)
package func dequantizeBlock(_ p: UnsafeRawPointer, dtype: DType, into out: UnsafeMutablePointer<Float>) {
    let d = halfToFloat(p.loadUnaligned(as: UInt16.self))
    switch dtype {
    case .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K:
        GGMLBlocks.dequantizeBlock(p, dtype: dtype, into: out)
    case .q4_0:
        for i in 0..<16 {
            let byte = p.load(fromByteOffset: 2 + i, as: UInt8.self)
            out[i] = d * Float(Int(byte & 0x0f) - 8)
            out[i + 16] = d * Float(Int(byte >> 4) - 8)
        }
    case .q4_1:
        let m = halfToFloat(p.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        for i in 0..<16 {
            let byte = p.load(fromByteOffset: 4 + i, as: UInt8.self)
            out[i] = d * Float(byte & 0x0f) + m
            out[i + 16] = d * Float(byte >> 4) + m
        }
    case .q8_0:
        for i in 0..<32 { out[i] = d * Float(p.load(fromByteOffset: 2 + i, as: Int8.self)) }
    case .q8_a:
        let m = halfToFloat(p.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        for i in 0..<32 { out[i] = d * Float(p.load(fromByteOffset: 4 + i, as: UInt8.self)) + m }
    case .f32, .f16, .bf16:
        break
    }
}

/// A matrix owned in memory (used for weights that must be fixed at load time).
package final class OwnedBuffer: @unchecked Sendable {
    /// The bytes; immutable after the initialiser returns.
    package let pointer: UnsafeMutableRawPointer
    /// Size in bytes.
    package let count: Int

    /// Allocates `count` zeroed bytes aligned to 64. Buffers of 2 MiB or more (weights
    /// rearranged or quantized at load) are aligned to 2 MiB and, on Linux, asked for
    /// transparent huge pages before they are touched: the kernels stream them every token,
    /// and huge pages raise read bandwidth as they do for mapped files (benchmarks/history/2026-11-28-harness-run-ggufs.md, the bandwidth table).
    package init(count: Int) {
        self.count = count
        pointer = allocateStreamedBuffer(byteCount: count)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
    }

    deinit { pointer.deallocate() }
}
