#if arch(x86_64)
import HearthKernelsCommon

/// ``fusedAttentionBody`` compiled for the AVX2 level (sixteen-lane vectors as ymm pairs, FMA).
@inline(never)
public func hearthFusedAttentionAVX2(
    _ q: UnsafePointer<Float>, out: UnsafeMutablePointer<Float>, logSumExp: UnsafeMutablePointer<Float>?,
    shape: FusedAttentionShape, scratch: UnsafeMutablePointer<Float>,
    scoresKeys: Bool, keyScores: (Int, Int, UnsafeMutablePointer<Float>, Int) -> Void,
    load: (Int, Int, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void
) {
    fusedAttentionBody(
        q, out: out, logSumExp: logSumExp, shape: shape, scratch: scratch, scoresKeys: scoresKeys, keyScores: keyScores,
        load: load, fused: true)
}
#endif
