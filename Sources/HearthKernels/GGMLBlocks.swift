import HearthKernelsCommon
#if arch(x86_64)
import HearthKernelsAVX2
import HearthKernelsAVX512
#endif

extension GGMLBlocks {
    /// Dequantizes one block of `dtype` (a ggml-only type: q5_0, q5_1 or a K-quant) with the
    /// current kernel level. Other types write nothing; use `dequantizeBlock(_:dtype:into:)`
    /// for every type.
    @inline(__always)
    public static func dequantizeBlock(_ p: UnsafeRawPointer, dtype: DType, into out: UnsafeMutablePointer<Float>) {
        if let kind = dtype.ggmlKind { dequantizeGGML(p, kind: kind, blocks: 1, into: out) }
    }
}

extension DType {
    /// The level modules' code for a ggml block type (``GGMLKind``), or nil.
    var ggmlKind: Int32? {
        switch self {
        case .q5_0: return GGMLKind.q5_0
        case .q4_K: return GGMLKind.q4_K
        case .q6_K: return GGMLKind.q6_K
        case .q5_1: return GGMLKind.q5_1
        case .q2_K: return GGMLKind.q2_K
        case .q3_K: return GGMLKind.q3_K
        case .q5_K: return GGMLKind.q5_K
        case .f32, .f16, .bf16, .q4_0, .q4_1, .q8_0, .q8_a: return nil
        }
    }
}

/// Dequantizes `blocks` blocks of ``GGMLKind`` `kind` at `src` with the current level's kernels: the
/// AVX-512 in-register dequantizers for q5_0/q4_K/q6_K, otherwise the scalar references as
/// compiled for AVX2 or for the baseline.
func dequantizeGGML(_ src: UnsafeRawPointer, kind: Int32, blocks: Int, into out: UnsafeMutablePointer<Float>) {
    let level = KernelLevel.current
    #if arch(x86_64)
    if level >= .avx512 && kind <= GGMLKind.q6_K {
        hearthDequantizeGGMLAVX512(src, kind: kind, blocks: blocks, into: out)
        return
    }
    if level >= .avx2 {
        hearthDequantizeGGMLAVX2(src, kind: kind, blocks: blocks, into: out)
        return
    }
    #endif
    GGMLKind.dequantize(src, kind: kind, blocks: blocks, into: out)
}

/// y[r] = W[r] · x for `rows` of a row-layout matrix of ggml blocks (`kind`), with the current level's
/// kernels: fused in-register dots for q5_0/q4_K/q6_K at AVX-512 (16 lanes) and AVX2 (8 lanes),
/// otherwise each row dequantized into `scratch` (`cols` floats) and dotted.
func dotRowsGGML(
    _ w: WeightMatrix, kind: Int32, x: UnsafePointer<Float>, rows: Range<Int>, y: UnsafeMutablePointer<Float>,
    scratch: UnsafeMutablePointer<Float>
) {
    let level = KernelLevel.current
    #if arch(x86_64)
    if level >= .avx512 && kind <= GGMLKind.q6_K {
        hearthDotRowsGGMLAVX512(
            w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rowStart: rows.lowerBound,
            rowEnd: rows.upperBound, y: y)
        return
    }
    if level >= .avx2 && kind <= GGMLKind.q6_K {
        hearthDotRowsGGMLFusedAVX2(
            w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rowStart: rows.lowerBound,
            rowEnd: rows.upperBound, y: y)
        return
    }
    if level >= .avx2 {
        hearthDotRowsGGMLAVX2(
            w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rowStart: rows.lowerBound,
            rowEnd: rows.upperBound, y: y, scratch: scratch)
        return
    }
    #endif
    dotRowsDequantizing(
        w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rows: rows, y: y, scratch: scratch)
}
