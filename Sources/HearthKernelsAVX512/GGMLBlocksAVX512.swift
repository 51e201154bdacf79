#if arch(x86_64)
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// Built with -target-cpu skylake-avx512 (AVX-512 F/CD/BW/DQ/VL and everything of the AVX2
// level): call only after run-time dispatch has checked the CPU (HearthKernels' KernelLevel).

/// AVX-512 twins of the scalar dequantizers in HearthKernels' GGMLBlocks.swift for the block
/// types real GGUF files use most (q5_0, q4_K, q6_K): sixteen weights per instruction instead
/// of one. They perform the same float operations in the same order as the scalar references
/// (an exact int→float conversion, then the same multiplies and subtractions, no fused
/// multiply-add), so their output is bit-identical; GGMLBlockTests checks that.
enum GGMLBlocksAVX512 {
    /// 16 bytes at `p`, zero-extended to 16 int32 lanes.
    @inline(__always)
    static func bytes16(_ p: UnsafeRawPointer) -> SIMD8<Int64> {
        _mm512_cvtepu8_epi32(p.loadUnaligned(as: SIMD2<Int64>.self))
    }

    @inline(__always)
    static func store(_ v: SIMD16<Float>, _ out: UnsafeMutablePointer<Float>) {
        _mm512_storeu_ps(UnsafeMutableRawPointer(out), v)
    }

    /// q5_0 block at `p`: elements 0…15 and 16…31 as q − 16 in int32 lanes
    /// (q = nibble | fifth bit << 4).
    @inline(__always)
    static func q5_0Quants(_ p: UnsafeRawPointer) -> (SIMD8<Int64>, SIMD8<Int64>) {
        let qh = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 2, as: UInt32.self))
        let b = bytes16(p + 6)
        let sixteen = _mm512_set1_epi32(16)
        let lo = _mm512_and_si512(b, _mm512_set1_epi32(15))
        let hi = _mm512_srli_epi32(b, 4)
        // With the fifth bit set, q − 16 is the nibble itself; without, nibble − 16.
        return (
            _mm512_mask_blend_epi32(UInt16(truncatingIfNeeded: qh), _mm512_sub_epi32(lo, sixteen), lo),
            _mm512_mask_blend_epi32(UInt16(truncatingIfNeeded: qh >> 16), _mm512_sub_epi32(hi, sixteen), hi))
    }

    /// q4_K sub-block 2c + h of the block at `p`: its 32 nibbles as two int32 vectors, and
    /// its scale d·sc and minimum dmin·min.
    @inline(__always)
    static func q4_KSubBlock(_ p: UnsafeRawPointer, c: Int, h: Int) -> (SIMD8<Int64>, SIMD8<Int64>, Float, Float) {
        let b0 = bytes16(p + 16 + 32 * c), b1 = bytes16(p + 32 + 32 * c)
        let mask = _mm512_set1_epi32(15)
        let (sc, mn) = GGMLBlocks.scaleMinK4(p + 4, 2 * c + h)
        let d = GGMLBlocks.half(p, 0), dmin = GGMLBlocks.half(p, 2)
        return h == 0
            ? (_mm512_and_si512(b0, mask), _mm512_and_si512(b1, mask), d * Float(sc), dmin * Float(mn))
            : (_mm512_srli_epi32(b0, 4), _mm512_srli_epi32(b1, 4), d * Float(sc), dmin * Float(mn))
    }

    /// q6_K elements e…e+15 (e = 128c + 32s + 16·half) of the block at `p` as q − 32 in int32
    /// lanes, and their scale d·scale[e/16]. Element e + i takes nibble s/2 of low byte
    /// 64c + 32(s%2) + 16·half + i and bits 2s…2s+1 of high byte 128 + 32c + 16·half + i.
    @inline(__always)
    static func q6_KQuants(_ p: UnsafeRawPointer, c: Int, half: Int, s: Int) -> (SIMD8<Int64>, Float) {
        let high = bytes16(p + 128 + 32 * c + 16 * half)
        let lowBytes = bytes16(p + 64 * c + 32 * (s % 2) + 16 * half)
        let low = _mm512_and_si512(_mm512_srli_epi32(lowBytes, UInt32(4 * (s / 2))), _mm512_set1_epi32(15))
        let hi = _mm512_and_si512(_mm512_srli_epi32(high, UInt32(2 * s)), _mm512_set1_epi32(3))
        let q = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(hi, 4)), _mm512_set1_epi32(32))
        let scale = Int8(bitPattern: GGMLBlocks.byte(p, 192 + (128 * c + 32 * s + 16 * half) / 16))
        return (q, GGMLBlocks.half(p, 208) * Float(scale))
    }

    /// q5_0: w = d·(q − 16).
    @inline(__always)
    static func dequantizeQ5_0(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = _mm512_set1_ps(GGMLBlocks.half(p, 0))
        let (qLo, qHi) = q5_0Quants(p)
        store(_mm512_mul_ps(d, _mm512_cvtepi32_ps(qLo)), out)
        store(_mm512_mul_ps(d, _mm512_cvtepi32_ps(qHi)), out + 16)
    }

    /// q4_K: w = (d·scale)·q − dmin·min.
    @inline(__always)
    static func dequantizeQ4_K(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        for c in 0..<4 {
            for h in 0..<2 {
                let (q0, q1, scale, min) = q4_KSubBlock(p, c: c, h: h)
                let d1 = _mm512_set1_ps(scale), m1 = _mm512_set1_ps(min)
                let o = out + 64 * c + 32 * h
                store(_mm512_sub_ps(_mm512_mul_ps(d1, _mm512_cvtepi32_ps(q0)), m1), o)
                store(_mm512_sub_ps(_mm512_mul_ps(d1, _mm512_cvtepi32_ps(q1)), m1), o + 16)
            }
        }
    }

    /// q6_K: w = (d·scale[e/16])·(q − 32).
    @inline(__always)
    static func dequantizeQ6_K(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        for c in 0..<2 {
            for half in 0..<2 {
                for s in 0..<4 {
                    let (q, scale) = q6_KQuants(p, c: c, half: half, s: s)
                    store(_mm512_mul_ps(_mm512_set1_ps(scale), _mm512_cvtepi32_ps(q)), out + 128 * c + 32 * s + 16 * half)
                }
            }
        }
    }

    // MARK: Fused dot products (decode): dequantize in registers and multiply by x, no store.
    // Exact f32 math like dequantize-then-dot; only the order of the float sums differs.

    @inline(__always)
    static func load16(_ x: UnsafePointer<Float>) -> SIMD16<Float> {
        _mm512_loadu_ps(UnsafeRawPointer(x))
    }

    /// Σ w·x over one q5_0 row of `blocks` blocks.
    @inline(__always)
    static func dotQ5_0(_ row: UnsafeRawPointer, _ x: UnsafePointer<Float>, blocks: Int) -> Float {
        var acc = _mm512_setzero_ps()
        for b in 0..<blocks {
            let p = row + 22 * b, xb = x + 32 * b
            let (qLo, qHi) = q5_0Quants(p)
            let t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(qHi), load16(xb + 16), _mm512_mul_ps(_mm512_cvtepi32_ps(qLo), load16(xb)))
            acc = _mm512_fmadd_ps(_mm512_set1_ps(GGMLBlocks.half(p, 0)), t, acc)
        }
        return horizontalSum(acc)
    }

    /// Σ w·x over one q4_K row of `blocks` super-blocks.
    @inline(__always)
    static func dotQ4_K(_ row: UnsafeRawPointer, _ x: UnsafePointer<Float>, blocks: Int) -> Float {
        var acc = _mm512_setzero_ps(), accMin = _mm512_setzero_ps()
        for b in 0..<blocks {
            let p = row + 144 * b, xb = x + 256 * b
            for c in 0..<4 {
                for h in 0..<2 {
                    let (q0, q1, scale, min) = q4_KSubBlock(p, c: c, h: h)
                    let x0 = load16(xb + 64 * c + 32 * h), x1 = load16(xb + 64 * c + 32 * h + 16)
                    let t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q1), x1, _mm512_mul_ps(_mm512_cvtepi32_ps(q0), x0))
                    acc = _mm512_fmadd_ps(_mm512_set1_ps(scale), t, acc)
                    accMin = _mm512_fmadd_ps(_mm512_set1_ps(min), _mm512_add_ps(x0, x1), accMin)
                }
            }
        }
        return horizontalSum(acc) - horizontalSum(accMin)
    }

    /// Σ w·x over one q6_K row of `blocks` super-blocks.
    @inline(__always)
    static func dotQ6_K(_ row: UnsafeRawPointer, _ x: UnsafePointer<Float>, blocks: Int) -> Float {
        var acc = _mm512_setzero_ps()
        for b in 0..<blocks {
            let p = row + 210 * b, xb = x + 256 * b
            for c in 0..<2 {
                for half in 0..<2 {
                    for s in 0..<4 {
                        let (q, scale) = q6_KQuants(p, c: c, half: half, s: s)
                        let e = 128 * c + 32 * s + 16 * half
                        acc = _mm512_fmadd_ps(_mm512_set1_ps(scale), _mm512_mul_ps(_mm512_cvtepi32_ps(q), load16(xb + e)), acc)
                    }
                }
            }
        }
        return horizontalSum(acc)
    }
}

/// The sum of 16 lanes, pairwise (lanes i and i+8, then i+4, …), as SIMD16's `sum()` adds them.
@inline(__always)
func horizontalSum(_ v: SIMD16<Float>) -> Float {
    let a = v.lowHalf + v.highHalf
    let b = a.lowHalf + a.highHalf
    let c = b.lowHalf + b.highHalf
    return c[0] + c[1]
}

/// Dequantizes `blocks` consecutive blocks of ``GGMLKind`` `kind` at `src` into `out`.
@inline(never)
public func hearthDequantizeGGMLAVX512(_ src: UnsafeRawPointer, kind: Int32, blocks: Int, into out: UnsafeMutablePointer<Float>) {
    let (bytes, weights) = GGMLKind.layout(kind)
    for b in 0..<blocks {
        let p = src + b * bytes, o = out + b * weights
        switch kind {
        case GGMLKind.q5_0: GGMLBlocksAVX512.dequantizeQ5_0(p, into: o)
        case GGMLKind.q4_K: GGMLBlocksAVX512.dequantizeQ4_K(p, into: o)
        default: GGMLBlocksAVX512.dequantizeQ6_K(p, into: o)
        }
    }
}

/// y[r] = row r · x for rows `rowStart..<rowEnd` of a row-major matrix of ``GGMLKind`` `kind`
/// (`rowBytes` apart, `blocks` blocks per row), dequantizing in registers.
@inline(never)
public func hearthDotRowsGGMLAVX512(
    _ matrix: UnsafeRawPointer, kind: Int32, rowBytes: Int, blocks: Int, x: UnsafePointer<Float>,
    rowStart: Int, rowEnd: Int, y: UnsafeMutablePointer<Float>
) {
    for r in rowStart..<rowEnd {
        let row = matrix + r * rowBytes
        switch kind {
        case GGMLKind.q5_0: y[r] = GGMLBlocksAVX512.dotQ5_0(row, x, blocks: blocks)
        case GGMLKind.q4_K: y[r] = GGMLBlocksAVX512.dotQ4_K(row, x, blocks: blocks)
        default: y[r] = GGMLBlocksAVX512.dotQ6_K(row, x, blocks: blocks)
        }
    }
}

/// 8-bit activation quantization with AVX-512 registers, equal to ``quantizeActivationRows``
/// (d = max|x|/127, q = x/d rounded half away from zero, Σq) value for value
/// (``quantizeBlocksAVX512``). (The generic loop it replaces compiled to scalar code: 17% of
/// Gemma 3 270M's pp512 with 8-bit prompt products.)
@inline(never)
public func hearthQuantizeActivationsAVX512(
    _ x: UnsafePointer<Float>, rowStart: Int, rowEnd: Int, cols: Int, quants: UnsafeMutablePointer<Int8>,
    scales: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>
) {
    quantizeBlocksAVX512(x, rows: rowStart..<rowEnd, cols: cols, top: 127, scales: scales, sums: sums) { i, q0, q1 in
        let dst = UnsafeMutableRawPointer(quants + i)
        dst.storeBytes(of: _mm512_cvtepi32_epi8(q0), as: SIMD2<Int64>.self)
        dst.storeBytes(of: _mm512_cvtepi32_epi8(q1), toByteOffset: 16, as: SIMD2<Int64>.self)
    }
}

/// 16-bit activation quantization with AVX-512 registers, equal to ``quantizeActivationRows16``
/// (d = max|x|/32767, q = x/d rounded half away from zero, Σq) value for value
/// (``quantizeBlocksAVX512``).
@inline(never)
public func hearthQuantizeActivations16AVX512(
    _ x: UnsafePointer<Float>, rowStart: Int, rowEnd: Int, cols: Int, quants: UnsafeMutablePointer<Int16>,
    scales: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>
) {
    quantizeBlocksAVX512(x, rows: rowStart..<rowEnd, cols: cols, top: 32767, scales: scales, sums: sums) { i, q0, q1 in
        let dst = UnsafeMutableRawPointer(quants + i)
        dst.storeBytes(of: _mm512_cvtepi32_epi16(q0), as: SIMD4<Int64>.self)
        dst.storeBytes(of: _mm512_cvtepi32_epi16(q1), toByteOffset: 32, as: SIMD4<Int64>.self)
    }
}

/// Blocks of 32 activations to integers of at most `top` in magnitude (d = max|x|/top, q = x/d
/// rounded half away from zero, Σq): 32 columns are two registers; the rounding is done exactly
/// in integers — t = trunc(s), then + trunc(2·(s − t)), which is ±1 exactly when |s − t| ≥ ½
/// (s − t is exact in f32). `store(i, q0, q1)` writes the block starting at element i.
@inline(__always)
private func quantizeBlocksAVX512(
    _ x: UnsafePointer<Float>, rows: Range<Int>, cols: Int, top: Int32, scales: UnsafeMutablePointer<Float>,
    sums: UnsafeMutablePointer<Float>, store: (Int, SIMD8<Int64>, SIMD8<Int64>) -> Void
) {
    let blocks = cols / 32
    let limit = _mm512_set1_epi32(top), negativeLimit = _mm512_set1_epi32(-top)
    for r in rows {
        for b in 0..<blocks {
            let src = UnsafeRawPointer(x + r * cols + b * 32)
            let v0 = _mm512_loadu_ps(src)
            let v1 = _mm512_loadu_ps(src + 64)
            let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)))
            let d = amax / Float(top)
            let id: Float = d != 0 ? 1 / d : 0
            let idv = SIMD16<Float>(repeating: id)
            @inline(__always) func quantize(_ v: SIMD16<Float>) -> SIMD8<Int64> {
                let s = v * idv
                let t = _mm512_cvttps_epi32(s)
                let half = _mm512_cvttps_epi32((s - _mm512_cvtepi32_ps(t)) * 2)
                return _mm512_max_epi32(_mm512_min_epi32(_mm512_add_epi32(t, half), limit), negativeLimit)
            }
            let q0 = quantize(v0), q1 = quantize(v1)
            store(r * cols + b * 32, q0, q1)
            scales[r * blocks + b] = d
            sums[r * blocks + b] = Float(_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1)))
        }
    }
}
#endif
