import HearthKernelsCommon

extension GGMLBlocks {
    /// Dequantizes one block of `dtype` (a ggml-only type: q5_0, q5_1 or a K-quant) with the
    /// kernels of `level` (default: the current one). Other types write nothing; use
    /// `dequantizeBlock(_:dtype:into:)` for every type.
    @inline(__always)
    package static func dequantizeBlock(
        _ p: UnsafeRawPointer, dtype: DType, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current
    ) {
        if let kind = dtype.ggmlKind { dequantizeGGML(p, kind: kind, blocks: 1, into: out, level: level) }
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

/// Dequantizes `blocks` blocks of ``GGMLKind`` `kind` at `src` with `level`'s kernels
/// (``KernelTable``): the AVX-512 in-register dequantizers for q5_0/q4_K/q6_K, otherwise the
/// scalar references as compiled for AVX2 or for the baseline.
@inline(__always)
func dequantizeGGML(
    _ src: UnsafeRawPointer, kind: Int32, blocks: Int, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    KernelTable.at(level).dequantizeGGML(src, kind, blocks, out)
}
