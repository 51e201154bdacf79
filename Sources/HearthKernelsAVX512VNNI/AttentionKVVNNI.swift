#if arch(x86_64)
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// Attention scores over a quantized KV cache with `vpdpbusd` (record layout: HearthKernelsCommon's
// KVBlocks.swift). A key head is taken 64 elements (two blocks) per 512-bit vector: the stored
// quants are the unsigned operand (q8_0 as stored, q + 128; q4_0's nibbles spread so the vector
// holds elements 0…63 in order), the 8-bit query the signed one. Each int32 lane then sums four
// products of one block; the zero point is folded into the accumulator's starting value
// (−zero·Σ of the lane's four query bytes, once per query), and lanes 0–7 / 8–15 are scaled by
// their block's dk·dq before one FMA into a float accumulator.

/// s[j] = scale · Σ_b dq_b·dk_b·Σ_i q_i·(k_i − zero) for j in `first...last`, key j's record at
/// `keys + j·stride`. `qQuants` holds the query's 8-bit quants padded with zeros to a multiple
/// of 64, `qScales` its block scales padded with zeros to 16; headDim ≤ 512.
@inline(never)
public func hearthAttentionScoresKVAVX512VNNI(
    _ qQuants: UnsafePointer<Int8>, _ qScales: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, first: Int,
    last: Int, headDim n: Int, scale: Float, kind: Int32, into s: UnsafeMutablePointer<Float>
) {
    let blocks = n / 32
    let chunks = (blocks + 1) / 2
    let odd = blocks & 1 == 1
    let scaleMask = UInt16(truncatingIfNeeded: (1 << blocks) - 1)
    let dq = _mm512_loadu_ps(UnsafeRawPointer(qScales))
    let zero = _mm512_set1_epi8(Int8(truncatingIfNeeded: KVKind.zero(kind)))
    let nibbleOrder = SIMD8<Int64>(0, 1, 0, 1, 2, 3, 2, 3)
    let nibbleShift = SIMD8<Int64>(0, 0, 4, 4, 0, 0, 4, 4)
    let low = _mm512_set1_epi8(0x0f)
    let quantOffset = 2 * blocks
    withUnsafeTemporaryAllocation(of: SIMD8<Int64>.self, capacity: 3 * 8) { buffer in
        let base = buffer.baseAddress.unsafelyUnwrapped
        let query = base, correction = base + 8, lanes = base + 16
        let rq = UnsafeRawPointer(qQuants)
        for c in 0..<chunks {
            let qv = rq.loadUnaligned(fromByteOffset: 64 * c, as: SIMD8<Int64>.self)
            query[c] = qv
            correction[c] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), zero, qv))
            // Lanes 0–7 take block 2c's scale, lanes 8–15 block 2c + 1's.
            let lo = SIMD8<Int32>(repeating: Int32(2 * c)), hi = SIMD8<Int32>(repeating: Int32(2 * c + 1))
            lanes[c] = unsafeBitCast(SIMD16<Int32>(lowHalf: lo, highHalf: hi), to: SIMD8<Int64>.self)
        }
        for j in first...last {
            let k = keys + j * stride
            let dk = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(scaleMask, k))
            let scales = _mm512_mul_ps(dk, dq)
            var total = _mm512_setzero_ps()
            for c in 0..<chunks {
                let tail = odd && c == chunks - 1
                let bytes: SIMD8<Int64>
                if kind == KVKind.q8_0 {
                    let p = k + quantOffset + 64 * c
                    bytes = tail ? _mm512_maskz_loadu_epi8(0xffff_ffff, p) : p.loadUnaligned(as: SIMD8<Int64>.self)
                } else {
                    let p = k + quantOffset + 32 * c
                    let raw = tail ? _mm256_maskz_loadu_epi8(0xffff, p) : p.loadUnaligned(as: SIMD4<Int64>.self)
                    let spread = _mm512_permutexvar_epi64(nibbleOrder, _mm512_castsi256_si512(raw))
                    bytes = _mm512_and_si512(_mm512_srlv_epi64(spread, nibbleShift), low)
                }
                let dot = _mm512_dpbusd_epi32(correction[c], bytes, query[c])
                let blockScales = _mm512_permutexvar_ps(lanes[c], scales)
                total = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), blockScales, total)
            }
            let a = total.lowHalf + total.highHalf
            let b = a.lowHalf + a.highHalf
            let d = b.lowHalf + b.highHalf
            s[j] = (d[0] + d[1]) * scale
        }
    }
}
#endif
