#if arch(x86_64)
import HearthKernelsCommon

/// ``fusedAttentionBody`` compiled for the AVX-512 level (one zmm per sixteen lanes; the VNNI
/// level uses it too).
@inline(never)
public func hearthFusedAttentionAVX512(
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
