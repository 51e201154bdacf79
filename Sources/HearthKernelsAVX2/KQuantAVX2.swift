#if arch(x86_64)
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// The integer matmul over K-quant super-block tiles (q4_K, q5_K, q6_K; layout ``KTile``) at the
// AVX2 level: 8-bit activations (blocks of 32 with scale and Σq), weights decoded in registers
// from the interleaved nibbles and high-bit planes, the integer sub-block scales applied by
// `vpmaddwd` itself (its 16-bit multiplier holds each row's scale instead of ones), so each
// 32-column sub-block costs the q4_0 kernel's instructions plus a few per row group.

/// The byte planes 0x10 (fifth bit) or 0x30 (two top bits) of vector `m`'s weights, in place.
@inline(__always)
private func highBits(_ plane: SIMD4<Int64>, _ m: Int, twoBits: Bool) -> SIMD4<Int64> {
    if twoBits {
        // Bits 2k…2k+1 (k = m mod 4) to bits 4…5.
        let k = m & 3
        let shifted = k == 0 ? _mm256_slli_epi16(plane, 4) : k == 1 ? _mm256_slli_epi16(plane, 2)
            : k == 2 ? plane : _mm256_srli_epi16(plane, 2)
        return _mm256_and_si256(shifted, _mm256_set1_epi8(0x30))
    }
    // Bit m to bit 4.
    let shifted = m < 4 ? _mm256_slli_epi16(plane, Int32(4 - m)) : m == 4 ? plane : _mm256_srli_epi16(plane, Int32(m - 4))
    return _mm256_and_si256(shifted, _mm256_set1_epi8(0x10))
}

/// 16-bit pairs (s_r, s_r) for rows 0–7 of 8 unsigned (or, `signed`, int8) scale bytes at `p`:
/// the `vpmaddwd` multiplier that applies each row's sub-block scale.
@inline(__always)
private func pairScales(_ p: UnsafeRawPointer, signed: Bool) -> SIMD4<Int64> {
    let bytes = SIMD2<Int64>(p.loadUnaligned(as: Int64.self), 0)
    let v = signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes)
    let low = signed ? _mm256_and_si256(v, _mm256_set1_epi32(0xffff)) : v
    return _mm256_or_si256(low, _mm256_slli_epi32(v, 16))
}

/// The kernel body for one K-quant `kind` (a constant once inlined).
@inline(__always)
private func kQuantKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int,
    quants: UnsafePointer<Int8>, scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int,
    batch: Int, groups: Range<Int>, y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let isQ6 = kind == TileKind.q6_K, hasHigh = kind != TileKind.q4_K
    let nibbles = isQ6 ? KTile.q6Nibbles : KTile.kNibbles
    let high = isQ6 ? KTile.q6High : KTile.k5High
    let mask = _mm256_set1_epi8(0x0f)
    let actBlocks = cols / 32

    /// Half `half` (rows 0–7 or 8–15) of weight vector m of sub-block s: unsigned quants, or for
    /// q6_K the signed q − 32.
    @inline(__always) func weights(_ tile: UnsafeRawPointer, _ s: Int, _ m: Int, _ half: Int) -> SIMD4<Int64> {
        let raw = tile.loadUnaligned(fromByteOffset: nibbles + 256 * s + 64 * (m & 3) + 32 * half, as: SIMD4<Int64>.self)
        var q = m < 4 ? _mm256_and_si256(raw, mask) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask)
        if hasHigh {
            let planeOffset = isQ6 ? high + 128 * s + (m < 4 ? 0 : 64) : high + 64 * s
            let plane = tile.loadUnaligned(fromByteOffset: planeOffset + 32 * half, as: SIMD4<Int64>.self)
            q = _mm256_or_si256(q, highBits(plane, m, twoBits: isQ6))
        }
        return isQ6 ? _mm256_sub_epi8(q, _mm256_set1_epi8(32)) : q
    }

    /// int32 row sums += scale_r · Σ (4 products) for one token: `u` the unsigned weights
    /// (|q − 32| for q6_K, whose sign moves onto the activations), `w` the signed ones.
    @inline(__always) func accumulate(
        _ i: inout SIMD4<Int64>, _ u: SIMD4<Int64>, _ w: SIMD4<Int64>, _ a: SIMD4<Int64>, _ scale: SIMD4<Int64>
    ) {
        let s = isQ6 ? _mm256_sign_epi8(a, w) : a
        i = _mm256_add_epi32(i, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale))
    }

    @inline(__always) func store(_ f0: SIMD8<Float>, _ f1: SIMD8<Float>, token t: Int, group g: Int) {
        let out = y + t * ldy + g * 16
        let valid = lesser(16, rows - g * 16)
        for r in 0..<lesser(8, valid) { out[r] = f0[r] }
        if valid > 8 { for r in 8..<valid { out[r] = f1[r - 8] } }
    }

    /// Per-tile factors: d (and dmin) as f32 for both row halves.
    @inline(__always) func halves(_ tile: UnsafeRawPointer, _ offset: Int) -> (SIMD8<Float>, SIMD8<Float>) {
        (_mm256_cvtph_ps(tile.loadUnaligned(fromByteOffset: offset, as: SIMD2<Int64>.self)),
         _mm256_cvtph_ps(tile.loadUnaligned(fromByteOffset: offset + 16, as: SIMD2<Int64>.self)))
    }

    /// The sub-block scale multipliers: (vectors 0–3, vectors 4–7) × (rows 0–7, rows 8–15).
    @inline(__always) func subScales(_ tile: UnsafeRawPointer, _ s: Int) -> (SIMD4<Int64>, SIMD4<Int64>, SIMD4<Int64>, SIMD4<Int64>) {
        if isQ6 {
            let a = tile + KTile.q6Scales + 32 * s, b = a + 16
            return (pairScales(a, signed: true), pairScales(a + 8, signed: true),
                    pairScales(b, signed: true), pairScales(b + 8, signed: true))
        }
        let p = tile + KTile.kScales + 16 * s
        let s0 = pairScales(p, signed: false), s1 = pairScales(p + 8, signed: false)
        return (s0, s1, s0, s1)
    }

    /// dmin·min for sub-block s, both halves (zero for q6_K).
    @inline(__always) func subMins(_ tile: UnsafeRawPointer, _ s: Int, _ dmin: (SIMD8<Float>, SIMD8<Float>)) -> (SIMD8<Float>, SIMD8<Float>) {
        if isQ6 { return (SIMD8<Float>(), SIMD8<Float>()) }
        let p = tile + KTile.kMins + 16 * s
        let m0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(SIMD2<Int64>(p.loadUnaligned(as: Int64.self), 0)))
        let m1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(SIMD2<Int64>(p.loadUnaligned(fromByteOffset: 8, as: Int64.self), 0)))
        return (m0 * dmin.0, m1 * dmin.1)
    }

    /// f += d·d_a·Σ − dmin·min·d_a·Σa for one token's sub-block.
    @inline(__always) func finish(
        _ f0: inout SIMD8<Float>, _ f1: inout SIMD8<Float>, _ i0: SIMD4<Int64>, _ i1: SIMD4<Int64>,
        _ d: (SIMD8<Float>, SIMD8<Float>), _ mins: (SIMD8<Float>, SIMD8<Float>), _ t: Int, _ ab: Int
    ) {
        let da = SIMD8<Float>(repeating: scales[t * actBlocks + ab])
        f0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), d.0 * da, f0)
        f1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), d.1 * da, f1)
        if !isQ6 {
            let dsa = SIMD8<Float>(repeating: scales[t * actBlocks + ab] * sums[t * actBlocks + ab])
            f0 = _mm256_fnmadd_ps(mins.0, dsa, f0)
            f1 = _mm256_fnmadd_ps(mins.1, dsa, f1)
        }
    }

    @inline(__always) func broadcast(_ p: UnsafePointer<Int8>) -> SIMD4<Int64> {
        _mm256_set1_epi32(UnsafeRawPointer(p).loadUnaligned(as: Int32.self))
    }

    for g in groups {
        var t0 = 0
        // Tokens in tiles of four share each decoded weight vector (prompt processing).
        while t0 + 4 <= batch {
            var f00 = SIMD8<Float>(), f01 = SIMD8<Float>(), f10 = SIMD8<Float>(), f11 = SIMD8<Float>()
            var f20 = SIMD8<Float>(), f21 = SIMD8<Float>(), f30 = SIMD8<Float>(), f31 = SIMD8<Float>()
            for b in 0..<blocks {
                let tile = tiles + (g * blocks + b) * tileBytes
                let d = halves(tile, 0)
                let dmin = isQ6 ? d : halves(tile, KTile.kDmin)
                for s in 0..<8 {
                    let (sa0, sa1, sb0, sb1) = subScales(tile, s)
                    var i00 = _mm256_setzero_si256(), i01 = _mm256_setzero_si256()
                    var i10 = _mm256_setzero_si256(), i11 = _mm256_setzero_si256()
                    var i20 = _mm256_setzero_si256(), i21 = _mm256_setzero_si256()
                    var i30 = _mm256_setzero_si256(), i31 = _mm256_setzero_si256()
                    let a = quants + t0 * cols + 256 * b + 32 * s
                    for m in 0..<8 {
                        let w0 = weights(tile, s, m, 0), w1 = weights(tile, s, m, 1)
                        let u0 = isQ6 ? _mm256_sign_epi8(w0, w0) : w0, u1 = isQ6 ? _mm256_sign_epi8(w1, w1) : w1
                        let c0 = m < 4 ? sa0 : sb0, c1 = m < 4 ? sa1 : sb1
                        let a0 = broadcast(a + 4 * m), a1 = broadcast(a + cols + 4 * m)
                        let a2 = broadcast(a + 2 * cols + 4 * m), a3 = broadcast(a + 3 * cols + 4 * m)
                        accumulate(&i00, u0, w0, a0, c0); accumulate(&i01, u1, w1, a0, c1)
                        accumulate(&i10, u0, w0, a1, c0); accumulate(&i11, u1, w1, a1, c1)
                        accumulate(&i20, u0, w0, a2, c0); accumulate(&i21, u1, w1, a2, c1)
                        accumulate(&i30, u0, w0, a3, c0); accumulate(&i31, u1, w1, a3, c1)
                    }
                    let mins = subMins(tile, s, dmin)
                    let ab = 8 * b + s
                    finish(&f00, &f01, i00, i01, d, mins, t0, ab)
                    finish(&f10, &f11, i10, i11, d, mins, t0 + 1, ab)
                    finish(&f20, &f21, i20, i21, d, mins, t0 + 2, ab)
                    finish(&f30, &f31, i30, i31, d, mins, t0 + 3, ab)
                }
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
            for b in 0..<blocks {
                let tile = tiles + (g * blocks + b) * tileBytes
                let d = halves(tile, 0)
                let dmin = isQ6 ? d : halves(tile, KTile.kDmin)
                for s in 0..<8 {
                    let (sa0, sa1, sb0, sb1) = subScales(tile, s)
                    var i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256()
                    let a = quants + t0 * cols + 256 * b + 32 * s
                    for m in 0..<8 {
                        let w0 = weights(tile, s, m, 0), w1 = weights(tile, s, m, 1)
                        let u0 = isQ6 ? _mm256_sign_epi8(w0, w0) : w0, u1 = isQ6 ? _mm256_sign_epi8(w1, w1) : w1
                        let av = broadcast(a + 4 * m)
                        accumulate(&i0, u0, w0, av, m < 4 ? sa0 : sb0)
                        accumulate(&i1, u1, w1, av, m < 4 ? sa1 : sb1)
                    }
                    finish(&f0, &f1, i0, i1, d, subMins(tile, s, dmin), t0, 8 * b + s)
                }
            }
            store(f0, f1, token: t0, group: g)
            t0 += 1
        }
    }
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 K-quant matrix (``TileKind`` q4_K, q5_K or q6_K; tiles of `tileBytes`, `blocks`
/// super-blocks per group), all `batch` tokens of 8-bit activations (`quants`, per-32 `scales`
/// and `sums`).
@inline(never)
public func hearthQuantizedMatMulKAVX2(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ quants: UnsafePointer<Int8>, _ scales: UnsafePointer<Float>, _ sums: UnsafePointer<Float>, _ cols: Int,
    _ batch: Int, _ groupStart: Int, _ groupEnd: Int, _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    let groups = groupStart..<groupEnd
    switch kind {
    case TileKind.q4_K:
        kQuantKernel(
            kind: TileKind.q4_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
            scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy)
    case TileKind.q5_K:
        kQuantKernel(
            kind: TileKind.q5_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
            scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy)
    default:
        kQuantKernel(
            kind: TileKind.q6_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
            scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy)
    }
}
#endif
