#if arch(x86_64)
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// Fused single-token dot products for the ggml block types of most K-quant GGUF files (q5_0,
// q4_K, q6_K) at the AVX2 level: each row's weights are decoded eight at a time in registers and
// multiplied by x, never stored — the AVX2 twins of HearthKernelsAVX512's fused dots. Exact f32
// math like dequantize-then-dot; only the order of the float sums differs.

/// 8 bytes at `p`, zero-extended to 8 int32 lanes.
@inline(__always)
private func bytes8(_ p: UnsafeRawPointer) -> SIMD4<Int64> {
    _mm256_cvtepu8_epi32(SIMD2<Int64>(p.loadUnaligned(as: Int64.self), 0))
}

@inline(__always)
private func load8(_ x: UnsafePointer<Float>) -> SIMD8<Float> {
    UnsafeRawPointer(x).loadUnaligned(as: SIMD8<Float>.self)
}

@inline(__always)
private func sum8(_ v: SIMD8<Float>) -> Float {
    let a = v.lowHalf + v.highHalf
    let b = a.lowHalf + a.highHalf
    return b[0] + b[1]
}

/// Σ w·x over one q5_0 row: w = d·(q − 16), q = nibble | fifth bit << 4 (element i < 16: low
/// nibble of byte i; i + 16: its high nibble; bit i of `qh`).
@inline(__always)
private func dotQ5_0(_ row: UnsafeRawPointer, _ x: UnsafePointer<Float>, blocks: Int) -> Float {
    var acc = SIMD8<Float>()
    let fifteen = _mm256_set1_epi32(15), one = _mm256_set1_epi32(1), sixteen = _mm256_set1_epi32(16)
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
    for b in 0..<blocks {
        let p = row + 22 * b, xb = x + 32 * b
        let qh = _mm256_set1_epi32(Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 2, as: UInt32.self))))
        var t = SIMD8<Float>()
        for part in 0..<4 {  // elements 8·part … 8·part + 7
            let raw = bytes8(p + 6 + 8 * (part % 2))
            let nibble = part < 2 ? _mm256_and_si256(raw, fifteen) : _mm256_srli_epi32(raw, 4)
            let bit = _mm256_and_si256(_mm256_srlv_epi32(qh, _mm256_add_epi32(lanes, _mm256_set1_epi32(Int32(8 * part)))), one)
            let q = _mm256_sub_epi32(_mm256_or_si256(nibble, _mm256_slli_epi32(bit, 4)), sixteen)
            t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), load8(xb + 8 * part), t)
        }
        acc = _mm256_fmadd_ps(SIMD8<Float>(repeating: GGMLBlocks.half(p, 0)), t, acc)
    }
    return sum8(acc)
}

/// Σ w·x over one q4_K row: sub-block 2c + h holds nibble h of bytes 16 + 32c …;
/// w = (d·scale)·q − dmin·min.
@inline(__always)
private func dotQ4_K(_ row: UnsafeRawPointer, _ x: UnsafePointer<Float>, blocks: Int) -> Float {
    var acc = SIMD8<Float>(), accMin = SIMD8<Float>()
    let fifteen = _mm256_set1_epi32(15)
    for b in 0..<blocks {
        let p = row + 144 * b, xb = x + 256 * b
        let d = GGMLBlocks.half(p, 0), dmin = GGMLBlocks.half(p, 2)
        for c in 0..<4 {
            for h in 0..<2 {
                let (sc, mn) = GGMLBlocks.scaleMinK4(p + 4, 2 * c + h)
                var t = SIMD8<Float>(), xs = SIMD8<Float>()
                for part in 0..<4 {
                    let raw = bytes8(p + 16 + 32 * c + 8 * part)
                    let q = h == 0 ? _mm256_and_si256(raw, fifteen) : _mm256_srli_epi32(raw, 4)
                    let xv = load8(xb + 64 * c + 32 * h + 8 * part)
                    t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), xv, t)
                    xs += xv
                }
                acc = _mm256_fmadd_ps(SIMD8<Float>(repeating: d * Float(sc)), t, acc)
                accMin = _mm256_fmadd_ps(SIMD8<Float>(repeating: dmin * Float(mn)), xs, accMin)
            }
        }
    }
    return sum8(acc) - sum8(accMin)
}

/// Σ w·x over one q6_K row: element 128c + 32s + 16·half + i takes nibble s/2 of low byte
/// 64c + 32(s%2) + 16·half + i and bits 2s…2s+1 of high byte 128 + 32c + 16·half + i;
/// w = (d·scale[e/16])·(q − 32).
@inline(__always)
private func dotQ6_K(_ row: UnsafeRawPointer, _ x: UnsafePointer<Float>, blocks: Int) -> Float {
    var acc = SIMD8<Float>()
    let fifteen = _mm256_set1_epi32(15), three = _mm256_set1_epi32(3), thirtyTwo = _mm256_set1_epi32(32)
    for b in 0..<blocks {
        let p = row + 210 * b, xb = x + 256 * b
        let d = GGMLBlocks.half(p, 208)
        for c in 0..<2 {
            for s in 0..<4 {
                for half in 0..<2 {
                    let e = 128 * c + 32 * s + 16 * half
                    let scale = Int8(bitPattern: GGMLBlocks.byte(p, 192 + e / 16))
                    var t = SIMD8<Float>()
                    for part in 0..<2 {
                        let lowBytes = bytes8(p + 64 * c + 32 * (s % 2) + 16 * half + 8 * part)
                        let highBytes = bytes8(p + 128 + 32 * c + 16 * half + 8 * part)
                        let low = _mm256_and_si256(_mm256_srli_epi32(lowBytes, Int32(4 * (s / 2))), fifteen)
                        let high = _mm256_and_si256(_mm256_srli_epi32(highBytes, Int32(2 * s)), three)
                        let q = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), thirtyTwo)
                        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), load8(xb + e + 8 * part), t)
                    }
                    acc = _mm256_fmadd_ps(SIMD8<Float>(repeating: d * Float(scale)), t, acc)
                }
            }
        }
    }
    return sum8(acc)
}

/// y[r] = row r · x for rows `rowStart..<rowEnd` of a row-major matrix of ``GGMLKind`` `kind`
/// (q5_0, q4_K or q6_K; `rowBytes` apart, `blocks` blocks per row), decoding in registers.
@inline(never)
public func hearthDotRowsGGMLFusedAVX2(
    _ matrix: UnsafeRawPointer, kind: Int32, rowBytes: Int, blocks: Int, x: UnsafePointer<Float>,
    rowStart: Int, rowEnd: Int, y: UnsafeMutablePointer<Float>
) {
    for r in rowStart..<rowEnd {
        let row = matrix + r * rowBytes
        switch kind {
        case GGMLKind.q5_0: y[r] = dotQ5_0(row, x, blocks: blocks)
        case GGMLKind.q4_K: y[r] = dotQ4_K(row, x, blocks: blocks)
        default: y[r] = dotQ6_K(row, x, blocks: blocks)
        }
    }
}
#endif
