#if arch(x86_64)
import HearthKernelsCommon

/// ``sgemmBody`` compiled for the AVX512 level (the 6 × 16 register tile in six zmm accumulators).
@inline(never)
public func hearthSgemmAVX512(
    m: Int, n: Int, k: Int, a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int, transposeB: Bool,
    c: UnsafeMutablePointer<Float>, ldc: Int, alpha: Float, beta: Float
) {
    // The panel's closure is compiled here, for this level (in the body it would be baseline code).
    withUnsafeTemporaryAllocation(of: Float.self, capacity: gemmPanelFloats) { panel in
        sgemmBody(
            m: m, n: n, k: k, a: a, lda: lda, b: b, ldb: ldb, transposeB: transposeB, c: c, ldc: ldc, alpha: alpha,
            beta: beta, panel: panel.baseAddress.unsafelyUnwrapped, fused: true)
    }
}
#endif
