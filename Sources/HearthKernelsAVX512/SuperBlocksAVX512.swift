#if arch(x86_64)
import HearthKernelsCommon
import _Builtin_intrinsics.intel

/// ``quantizeSuperBlockRow`` with AVX-512 registers, value for value (D = max|x|/127 per 256
/// columns, q = x·(1/D) rounded half away from zero in integers, Σq per 32 and per 16 columns).
@inline(never)
public func hearthQuantizeSuperBlockRowAVX512(
    _ x: UnsafePointer<Float>, cols: Int, quants: UnsafeMutablePointer<Int8>, scales: UnsafeMutablePointer<Float>,
    sums: UnsafeMutablePointer<Int16>, halfSums: UnsafeMutablePointer<Int16>
) {
    let limit = _mm512_set1_epi32(127), negativeLimit = _mm512_set1_epi32(-127)
    for sb in 0..<(cols / 256) {
        let src = UnsafeRawPointer(x + 256 * sb)
        var m = _mm512_abs_ps(_mm512_loadu_ps(src))
        for k in 1..<16 { m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(src + 64 * k))) }
        let d = _mm512_reduce_max_ps(m) / 127
        let id: Float = d != 0 ? 1 / d : 0
        let idv = SIMD16<Float>(repeating: id)
        @inline(__always) func quantize(_ k: Int) -> SIMD8<Int64> {
            let s = _mm512_loadu_ps(src + 64 * k) * idv
            let t = _mm512_cvttps_epi32(s)
            let half = _mm512_cvttps_epi32((s - _mm512_cvtepi32_ps(t)) * 2)
            return _mm512_max_epi32(_mm512_min_epi32(_mm512_add_epi32(t, half), limit), negativeLimit)
        }
        let dst = UnsafeMutableRawPointer(quants + 256 * sb)
        for j in 0..<8 {
            let q0 = quantize(2 * j), q1 = quantize(2 * j + 1)
            _mm_storeu_si128((dst + 32 * j).assumingMemoryBound(to: SIMD2<Int64>.self), _mm512_cvtepi32_epi8(q0))
            _mm_storeu_si128((dst + 32 * j + 16).assumingMemoryBound(to: SIMD2<Int64>.self), _mm512_cvtepi32_epi8(q1))
            let h0 = Int16(truncatingIfNeeded: _mm512_reduce_add_epi32(q0))
            let h1 = Int16(truncatingIfNeeded: _mm512_reduce_add_epi32(q1))
            halfSums[16 * sb + 2 * j] = h0
            halfSums[16 * sb + 2 * j + 1] = h1
            sums[8 * sb + j] = h0 &+ h1
        }
        scales[sb] = d
    }
}
#endif
