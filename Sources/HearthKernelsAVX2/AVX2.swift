#if arch(x86_64)
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// Built with -target-cpu haswell (AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE): call only after
// run-time dispatch has checked the CPU (HearthKernels' KernelLevel). Entry points are
// non-generic and @inline(never), over raw pointers only.

/// Activation quantization (``quantizeActivationRows``) compiled for AVX2.
@inline(never)
public func hearthQuantizeActivationsAVX2(
    _ x: UnsafePointer<Float>, rowStart: Int, rowEnd: Int, cols: Int, quants: UnsafeMutablePointer<Int8>,
    scales: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>
) {
    quantizeActivationRows(x, rows: rowStart..<rowEnd, cols: cols, quants: quants, scales: scales, sums: sums)
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 matrix (tiles of `tileBytes`, `blocks` per group, kind ``TileKind``), all
/// `batch` tokens of 8-bit activations (`quants`, per-block `scales` and `sums`).
///
/// A tile's 64-byte weight vector is two 32-byte halves (rows 0–7, rows 8–15); `vpmaddubsw`
/// then `vpmaddwd` against four activation bytes broadcast gives each row's 4-product sum in
/// one int32 lane. q8_0 uses the sign trick (|q| × sign(a, q)) so the 16-bit pair sums cannot
/// saturate, and so needs no zero-point correction. q8_a's unsigned q (0…255) goes the same
/// way as q − 128 (flipping the top bit), and 128·d·Σa puts the offset back.
@inline(never)
public func hearthQuantizedMatMulAVX2(
    tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, kind: Int32,
    quants: UnsafePointer<Int8>, scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int,
    batch: Int, groupStart: Int, groupEnd: Int, y: UnsafeMutablePointer<Float>, ldy: Int
) {
    // One copy of the body per tile kind, written out so that each inlines with the kind a constant.
    switch kind {
    case TileKind.q4_0:
        tileKernel(
            tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, kind: TileKind.q4_0, quants: quants, scales: scales,
            sums: sums, cols: cols, batch: batch, groupStart: groupStart, groupEnd: groupEnd, y: y, ldy: ldy)
    case TileKind.q4_1:
        tileKernel(
            tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, kind: TileKind.q4_1, quants: quants, scales: scales,
            sums: sums, cols: cols, batch: batch, groupStart: groupStart, groupEnd: groupEnd, y: y, ldy: ldy)
    case TileKind.q8_0:
        tileKernel(
            tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, kind: TileKind.q8_0, quants: quants, scales: scales,
            sums: sums, cols: cols, batch: batch, groupStart: groupStart, groupEnd: groupEnd, y: y, ldy: ldy)
    case TileKind.q8_a:
        tileKernel(
            tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, kind: TileKind.q8_a, quants: quants, scales: scales,
            sums: sums, cols: cols, batch: batch, groupStart: groupStart, groupEnd: groupEnd, y: y, ldy: ldy)
    case TileKind.q5_0:
        tileKernel(
            tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, kind: TileKind.q5_0, quants: quants, scales: scales,
            sums: sums, cols: cols, batch: batch, groupStart: groupStart, groupEnd: groupEnd, y: y, ldy: ldy)
    default:
        tileKernel(
            tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, kind: TileKind.q5_1, quants: quants, scales: scales,
            sums: sums, cols: cols, batch: batch, groupStart: groupStart, groupEnd: groupEnd, y: y, ldy: ldy)
    }
}

@inline(__always)
private func tileKernel(
    tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, kind: Int32,
    quants: UnsafePointer<Int8>, scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int,
    batch: Int, groupStart: Int, groupEnd: Int, y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let isQ8 = kind == TileKind.q8_0 || kind == TileKind.q8_a
    let isQ5 = kind == TileKind.q5_0 || kind == TileKind.q5_1
    let affine = kind == TileKind.q4_1 || kind == TileKind.q8_a || kind == TileKind.q5_1
    let zero = SIMD8<Float>(
        repeating: kind == TileKind.q8_a ? -128 : kind == TileKind.q4_0 ? 8 : kind == TileKind.q5_0 ? 16 : 0)
    let quantBase = kind == TileKind.q5_0 ? KTile.q5_0Nibbles : kind == TileKind.q5_1 ? KTile.q5_1Nibbles : affine ? 64 : 32
    let highPlane = kind == TileKind.q5_1 ? KTile.q5_1High : KTile.q5_0High
    let ones = _mm256_set1_epi16(1)
    let mask = _mm256_set1_epi8(0x0f)
    let fifth = _mm256_set1_epi8(0x10)
    let flip = _mm256_set1_epi8(-128)

    /// The weight half `half` (0: rows 0–7, 1: rows 8–15) of vector m of a tile (q5_0/q5_1:
    /// the nibble with bit m of the fifth-bit plane moved to bit 4).
    @inline(__always) func weights(_ tile: UnsafeRawPointer, _ m: Int, _ half: Int) -> SIMD4<Int64> {
        if isQ8 {
            return _mm256_xor_si256(
                tile.loadUnaligned(fromByteOffset: quantBase + 64 * m + 32 * half, as: SIMD4<Int64>.self), flip)
        }
        let raw = tile.loadUnaligned(fromByteOffset: quantBase + 64 * (m & 3) + 32 * half, as: SIMD4<Int64>.self)
        let nibble = m < 4 ? _mm256_and_si256(raw, mask) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask)
        guard isQ5 else { return nibble }
        let plane = tile.loadUnaligned(fromByteOffset: highPlane + 32 * half, as: SIMD4<Int64>.self)
        let moved = m < 4 ? _mm256_slli_epi16(plane, Int32(4 - m)) : m == 4 ? plane : _mm256_srli_epi16(plane, Int32(m - 4))
        return _mm256_or_si256(nibble, _mm256_and_si256(moved, fifth))
    }

    /// Adds block b's products for one token (int32 row sums `i0`, `i1`) to its float rows.
    @inline(__always) func finish(
        _ f0: inout SIMD8<Float>, _ f1: inout SIMD8<Float>, _ i0: SIMD4<Int64>, _ i1: SIMD4<Int64>,
        _ tile: UnsafeRawPointer, _ t: Int, _ b: Int
    ) {
        let da = SIMD8<Float>(repeating: scales[t * blocks + b])
        let sa = SIMD8<Float>(repeating: sums[t * blocks + b])
        let d0 = _mm256_cvtph_ps(tile.loadUnaligned(as: SIMD2<Int64>.self))
        let d1 = _mm256_cvtph_ps(tile.loadUnaligned(fromByteOffset: 16, as: SIMD2<Int64>.self))
        f0 = _mm256_fmadd_ps(d0 * da, _mm256_cvtepi32_ps(i0) - zero * sa, f0)
        f1 = _mm256_fmadd_ps(d1 * da, _mm256_cvtepi32_ps(i1) - zero * sa, f1)
        if affine {
            let m0 = _mm256_cvtph_ps(tile.loadUnaligned(fromByteOffset: 32, as: SIMD2<Int64>.self))
            let m1 = _mm256_cvtph_ps(tile.loadUnaligned(fromByteOffset: 48, as: SIMD2<Int64>.self))
            f0 = _mm256_fmadd_ps(m0 * da, sa, f0)
            f1 = _mm256_fmadd_ps(m1 * da, sa, f1)
        }
    }

    @inline(__always) func store(_ f0: SIMD8<Float>, _ f1: SIMD8<Float>, token t: Int, group g: Int) {
        let out = y + t * ldy + g * 16
        let valid = lesser(16, rows - g * 16)
        for r in 0..<lesser(8, valid) { out[r] = f0[r] }
        if valid > 8 { for r in 8..<valid { out[r] = f1[r - 8] } }
    }

    /// Row sums += w · a for four activation bytes of one token, both row halves: the unsigned
    /// operands `u0`, `u1` (|q| for q8, the nibbles otherwise) against a, sign-adjusted for q8.
    @inline(__always) func accumulate(
        _ i0: inout SIMD4<Int64>, _ i1: inout SIMD4<Int64>, _ u0: SIMD4<Int64>, _ u1: SIMD4<Int64>,
        _ w0: SIMD4<Int64>, _ w1: SIMD4<Int64>, _ a: UnsafeRawPointer
    ) {
        let av = _mm256_set1_epi32(a.loadUnaligned(as: Int32.self))
        let s0 = isQ8 ? _mm256_sign_epi8(av, w0) : av
        let s1 = isQ8 ? _mm256_sign_epi8(av, w1) : av
        i0 = _mm256_add_epi32(i0, _mm256_madd_epi16(_mm256_maddubs_epi16(u0, s0), ones))
        i1 = _mm256_add_epi32(i1, _mm256_madd_epi16(_mm256_maddubs_epi16(u1, s1), ones))
    }

    for g in groupStart..<groupEnd {
        var t0 = 0
        // Tokens in tiles of four share each unpacked weight vector (prompt processing).
        while t0 + 4 <= batch {
            var f00 = SIMD8<Float>(), f01 = SIMD8<Float>(), f10 = SIMD8<Float>(), f11 = SIMD8<Float>()
            var f20 = SIMD8<Float>(), f21 = SIMD8<Float>(), f30 = SIMD8<Float>(), f31 = SIMD8<Float>()
            let a0 = UnsafeRawPointer(quants + t0 * cols)
            for b in 0..<blocks {
                let tile = tiles + (g * blocks + b) * tileBytes
                var i00 = _mm256_setzero_si256(), i01 = _mm256_setzero_si256()
                var i10 = _mm256_setzero_si256(), i11 = _mm256_setzero_si256()
                var i20 = _mm256_setzero_si256(), i21 = _mm256_setzero_si256()
                var i30 = _mm256_setzero_si256(), i31 = _mm256_setzero_si256()
                for m in 0..<8 {
                    let w0 = weights(tile, m, 0), w1 = weights(tile, m, 1)
                    let u0 = isQ8 ? _mm256_sign_epi8(w0, w0) : w0, u1 = isQ8 ? _mm256_sign_epi8(w1, w1) : w1
                    let a = a0 + b * 32 + 4 * m
                    accumulate(&i00, &i01, u0, u1, w0, w1, a)
                    accumulate(&i10, &i11, u0, u1, w0, w1, a + cols)
                    accumulate(&i20, &i21, u0, u1, w0, w1, a + 2 * cols)
                    accumulate(&i30, &i31, u0, u1, w0, w1, a + 3 * cols)
                }
                finish(&f00, &f01, i00, i01, tile, t0, b)
                finish(&f10, &f11, i10, i11, tile, t0 + 1, b)
                finish(&f20, &f21, i20, i21, tile, t0 + 2, b)
                finish(&f30, &f31, i30, i31, tile, t0 + 3, b)
            }
            store(f00, f01, token: t0, group: g)
            store(f10, f11, token: t0 + 1, group: g)
            store(f20, f21, token: t0 + 2, group: g)
            store(f30, f31, token: t0 + 3, group: g)
            t0 += 4
        }
        // The remaining tokens (decode: all of them) one at a time.
        while t0 < batch {
            var f0 = SIMD8<Float>(), f1 = SIMD8<Float>()
            let a0 = UnsafeRawPointer(quants + t0 * cols)
            for b in 0..<blocks {
                let tile = tiles + (g * blocks + b) * tileBytes
                var i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256()
                for m in 0..<8 {
                    let w0 = weights(tile, m, 0), w1 = weights(tile, m, 1)
                    let u0 = isQ8 ? _mm256_sign_epi8(w0, w0) : w0, u1 = isQ8 ? _mm256_sign_epi8(w1, w1) : w1
                    accumulate(&i0, &i1, u0, u1, w0, w1, a0 + b * 32 + 4 * m)
                }
                finish(&f0, &f1, i0, i1, tile, t0, b)
            }
            store(f0, f1, token: t0, group: g)
            t0 += 1
        }
    }
}

/// Dequantizes `blocks` blocks of ``GGMLKind`` `kind` (the scalar references, compiled for AVX2).
@inline(never)
public func hearthDequantizeGGMLAVX2(_ src: UnsafeRawPointer, kind: Int32, blocks: Int, into out: UnsafeMutablePointer<Float>) {
    GGMLKind.dequantize(src, kind: kind, blocks: blocks, into: out)
}

/// ``dotRowsDequantizing`` compiled for AVX2.
@inline(never)
public func hearthDotRowsGGMLAVX2(
    _ matrix: UnsafeRawPointer, kind: Int32, rowBytes: Int, blocks: Int, x: UnsafePointer<Float>, rowStart: Int,
    rowEnd: Int, y: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>
) {
    dotRowsDequantizing(
        matrix, kind: kind, rowBytes: rowBytes, blocks: blocks, x: x, rows: rowStart..<rowEnd, y: y, scratch: scratch)
}

/// ``sigmoidActivation`` (SiLU / tanh-GELU) compiled for AVX2.
@inline(never)
public func hearthSigmoidActivationAVX2(_ x: UnsafeMutablePointer<Float>, _ n: Int, silu: Bool) {
    sigmoidActivation(x, n, silu: silu)
}

/// ``maxAndSumExp(_:_:weights:)`` compiled for AVX2 (the log-probability normaliser).
@inline(never)
public func hearthMaxAndSumExpAVX2(_ x: UnsafePointer<Float>, _ n: Int, weights: UnsafePointer<Float>?) -> (max: Float, sum: Float) {
    maxAndSumExp(x, n, weights: weights)
}

/// ``runStatistics16(_:_:maxima:sums:)`` compiled for AVX2.
@inline(never)
public func hearthRunStatistics16AVX2(
    _ x: UnsafePointer<Float>, _ n: Int, maxima: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>?
) {
    runStatistics16(x, n, maxima: maxima, sums: sums)
}

/// ``dotFloats`` compiled for AVX2 (f32 weights, dequantized rows).
@inline(never)
public func hearthDotFloatsAVX2(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
    dotFloats(a, b, n)
}

/// ``attentionScoresF16`` compiled for AVX2.
@inline(never)
public func hearthAttentionScoresF16AVX2(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, first: Int, last: Int, headDim: Int, scale: Float,
    into s: UnsafeMutablePointer<Float>
) {
    attentionScoresF16(q, keys: keys, stride: stride, positions: first...last, headDim: headDim, scale: scale, into: s)
}

/// ``attentionValuesF16`` compiled for AVX2.
@inline(never)
public func hearthAttentionValuesF16AVX2(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, first: Int, last: Int, headDim: Int,
    into out: UnsafeMutablePointer<Float>
) {
    attentionValuesF16(s, values: values, stride: stride, positions: first...last, headDim: headDim, into: out)
}
#endif

#if arch(x86_64)
/// The smaller of two Ints. Not the generic `Swift.min`: a specialisation of a generic function
/// emitted by this module (built for AVX2) could be shared with baseline code at link time
/// (scripts/check-kernel-isolation.sh).
@inline(__always)
func lesser(_ a: Int, _ b: Int) -> Int { a < b ? a : b }
#endif
