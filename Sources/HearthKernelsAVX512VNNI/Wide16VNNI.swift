#if arch(x86_64)
import CHearthCPU
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// The integer matmul with 16-bit activations at the AVX-512 VNNI level, for every interleaved16
// tile kind: the AVX2 kernel's scheme (Wide16AVX2.swift) at twice the width, with `vpdpwssd`
// (int16 × int16 pairs summed into int32 lanes, one instruction) instead of `vpmaddwd` + `vpaddd`.
// A unit's weights (32 columns × 16 rows) are 8 vectors of four weights per row; widened to
// int16, each is two 512-bit registers (rows 0–7 and 8–15, two lanes per row), multiplied
// against the four matching activations broadcast to every 64-bit lane. One unit for one token
// is 16 `vpdpwssd`; the two lanes of a row are added by one pair of permutes per unit.

/// The 32 weight bytes of half `half` (rows 0–7 / 8–15) of vector m of unit `u`: unsigned
/// quants, or signed for q8_0 and q6_K. (The AVX2 module's decoder, compiled for this level.)
@_transparent
private func weightBytes(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int, _ m: Int, _ half: Int) -> SIMD4<Int64> {
    @inline(__always) func load(_ offset: Int) -> SIMD4<Int64> {
        tile.loadUnaligned(fromByteOffset: offset + 32 * half, as: SIMD4<Int64>.self)
    }
    @inline(__always) func nibble(_ base: Int) -> SIMD4<Int64> {
        let raw = load(base + 64 * (m & 3))
        let mask = _mm256_set1_epi8(0x0f)
        return m < 4 ? _mm256_and_si256(raw, mask) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask)
    }
    @inline(__always) func fifthBit(_ plane: Int) -> SIMD4<Int64> {
        let v = load(plane)
        let moved = m < 4 ? _mm256_slli_epi16(v, Int32(4 - m)) : m == 4 ? v : _mm256_srli_epi16(v, Int32(m - 4))
        return _mm256_and_si256(moved, _mm256_set1_epi8(0x10))
    }
    switch kind {
    case TileKind.q4_0: return nibble(32)
    case TileKind.q4_1: return nibble(64)
    case TileKind.q8_0: return _mm256_xor_si256(load(32 + 64 * m), _mm256_set1_epi8(-128))
    case TileKind.q8_a: return load(64 + 64 * m)
    case TileKind.q5_0: return _mm256_or_si256(nibble(KTile.q5_0Nibbles), fifthBit(KTile.q5_0High))
    case TileKind.q5_1: return _mm256_or_si256(nibble(KTile.q5_1Nibbles), fifthBit(KTile.q5_1High))
    case TileKind.q4_K: return nibble(KTile.kNibbles + 256 * u)
    case TileKind.q5_K: return _mm256_or_si256(nibble(KTile.kNibbles + 256 * u), fifthBit(KTile.k5High + 64 * u))
    default:  // q6_K
        let v = load(KTile.q6High + 128 * u + (m < 4 ? 0 : 64))
        let k = m & 3
        let shifted = k == 0 ? _mm256_slli_epi16(v, 4) : k == 1 ? _mm256_slli_epi16(v, 2) : k == 2 ? v : _mm256_srli_epi16(v, 2)
        let q = _mm256_or_si256(nibble(KTile.q6Nibbles + 256 * u), _mm256_and_si256(shifted, _mm256_set1_epi8(0x30)))
        return _mm256_sub_epi8(q, _mm256_set1_epi8(32))
    }
}

/// Vector m of unit `u` widened to int16: rows 0–7 and rows 8–15, four weights per row.
private struct WidePair {
    var lo, hi: SIMD8<Int64>
}

@_transparent
private func decodeWide(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int, _ m: Int) -> WidePair {
    let a = weightBytes(kind, tile, u, m, 0), b = weightBytes(kind, tile, u, m, 1)
    if kind == TileKind.q8_0 || kind == TileKind.q6_K {
        return WidePair(lo: _mm512_cvtepi8_epi16(a), hi: _mm512_cvtepi8_epi16(b))
    }
    return WidePair(lo: _mm512_cvtepu8_epi16(a), hi: _mm512_cvtepu8_epi16(b))
}

/// Four int16 activations at `p` broadcast to every 64-bit lane.
@_transparent
private func broadcast(_ p: UnsafePointer<Int16>) -> SIMD8<Int64> {
    _mm512_broadcastq_epi64(_mm_loadu_si64(UnsafeRawPointer(p)))
}

/// Sixteen bytes at `p` as sixteen floats (unsigned or signed).
@_transparent
private func floats16(_ p: UnsafeRawPointer, signed: Bool) -> SIMD16<Float> {
    // The intrinsic load: a generic `loadUnaligned` was left out of line in these big kernels.
    let bytes = _mm_loadu_si128(p.assumingMemoryBound(to: SIMD2<Int64>.self))
    return _mm512_cvtepi32_ps(signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes))
}

/// The per-row factors of unit `u`: y += d·(Σ·d_a) + c·(Σa·d_a), with c = m for the affine
/// kinds and −zero·d for q4_0 (8) and q5_0 (16) (q8_0 and q6_K are decoded signed); q6_K has a
/// second d for the unit's upper 16 columns (vectors 4–7).
private struct UnitFactors {
    var d: SIMD16<Float>
    var dHigh: SIMD16<Float>
    var c: SIMD16<Float>
}

@_transparent
private func unitFactors(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int) -> UnitFactors {
    @inline(__always) func halves(_ offset: Int) -> SIMD16<Float> {
        _mm512_cvtph_ps(tile.loadUnaligned(fromByteOffset: offset, as: SIMD4<Int64>.self))
    }
    let d = halves(0)
    switch kind {
    case TileKind.q4_0: return UnitFactors(d: d, dHigh: d, c: d * SIMD16<Float>(repeating: -8))
    case TileKind.q5_0: return UnitFactors(d: d, dHigh: d, c: d * SIMD16<Float>(repeating: -16))
    case TileKind.q4_1, TileKind.q8_a, TileKind.q5_1:
        return UnitFactors(d: d, dHigh: d, c: halves(32))
    case TileKind.q4_K, TileKind.q5_K:
        let scaled = d * floats16(tile + KTile.kScales + 16 * u, signed: false)
        let mins = -halves(KTile.kDmin) * floats16(tile + KTile.kMins + 16 * u, signed: false)
        return UnitFactors(d: scaled, dHigh: scaled, c: mins)
    case TileKind.q6_K:
        let sc = tile + KTile.q6Scales + 32 * u
        return UnitFactors(d: d * floats16(sc, signed: true), dHigh: d * floats16(sc + 16, signed: true), c: SIMD16<Float>())
    default:
        return UnitFactors(d: d, dHigh: d, c: SIMD16<Float>())
    }
}

/// acc += d·(Σ·d_a) + c·(Σa·d_a) for 16 rows, Σ the row sums as int32 lanes.
@_transparent
private func accumulate(
    _ kind: Int32, _ acc: inout SIMD16<Float>, _ sum: SIMD8<Int64>, _ d: SIMD16<Float>, _ c: SIMD16<Float>, _ da: Float,
    _ sa: Float
) {
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum) * SIMD16<Float>(repeating: da), acc)
    if kind != TileKind.q8_0 && kind != TileKind.q6_K {
        acc = _mm512_fmadd_ps(c, SIMD16<Float>(repeating: sa * da), acc)
    }
}

/// The row sums (int32, one lane per row) of two `vpdpwssd` accumulators with two lanes per row.
@_transparent
private func joinLanes(_ lo: SIMD8<Int64>, _ hi: SIMD8<Int64>) -> SIMD8<Int64> {
    let evenLanes = SIMD16<Int32>(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
    let even = unsafeBitCast(evenLanes, to: SIMD8<Int64>.self)
    let odd = unsafeBitCast(evenLanes &+ 1, to: SIMD8<Int64>.self)
    return _mm512_add_epi32(_mm512_permutex2var_epi32(lo, even, hi), _mm512_permutex2var_epi32(lo, odd, hi))
}

/// One unit for one token, the weights decoded from the tile in registers (a single token's
/// pass): per vector, two `vpdpwssd` (rows 0–7, 8–15) against four broadcast activations.
@_transparent
private func unitProduct(
    _ kind: Int32, _ acc: inout SIMD16<Float>, _ f: UnitFactors, _ a: UnsafePointer<Int16>, _ da: Float, _ sa: Float,
    tile: UnsafeRawPointer, unit u: Int
) {
    var lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512()
    for m in 0..<4 {
        let w = decodeWide(kind, tile, u, m), b = broadcast(a + 4 * m)
        lo = _mm512_dpwssd_epi32(lo, w.lo, b)
        hi = _mm512_dpwssd_epi32(hi, w.hi, b)
    }
    if kind == TileKind.q6_K {
        accumulate(kind, &acc, joinLanes(lo, hi), f.d, f.c, da, sa)
        lo = _mm512_setzero_si512()
        hi = _mm512_setzero_si512()
    }
    for m in 4..<8 {
        let w = decodeWide(kind, tile, u, m), b = broadcast(a + 4 * m)
        lo = _mm512_dpwssd_epi32(lo, w.lo, b)
        hi = _mm512_dpwssd_epi32(hi, w.hi, b)
    }
    accumulate(kind, &acc, joinLanes(lo, hi), kind == TileKind.q6_K ? f.dHigh : f.d, f.c, da, sa)
}

/// A unit decoded for a batch: 16 vectors, vector p holding weights 2p and 2p + 1 of each of the
/// 16 rows as int16 pairs, so `vpdpwssd` against two broadcast activations gives one lane per
/// row and a token needs no lane joining.
private typealias UnitPairs = (
    SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>,
    SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>
)

@_transparent
private func unitPairs(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int) -> UnitPairs {
    let evenLanes = SIMD16<Int32>(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
    let even = unsafeBitCast(evenLanes, to: SIMD8<Int64>.self)
    let odd = unsafeBitCast(evenLanes &+ 1, to: SIMD8<Int64>.self)
    @inline(__always) func pairs(_ m: Int) -> (SIMD8<Int64>, SIMD8<Int64>) {
        let w = decodeWide(kind, tile, u, m)
        return (_mm512_permutex2var_epi32(w.lo, even, w.hi), _mm512_permutex2var_epi32(w.lo, odd, w.hi))
    }
    let (p0, p1) = pairs(0), (p2, p3) = pairs(1), (p4, p5) = pairs(2), (p6, p7) = pairs(3)
    let (p8, p9) = pairs(4), (p10, p11) = pairs(5), (p12, p13) = pairs(6), (p14, p15) = pairs(7)
    return (p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15)
}

/// Σ over pair vectors of w·a for 16 rows: `a` the unit's 32 activations (int16).
@_transparent
private func pairDots(_ v: UnitPairs, _ a: UnsafePointer<Int16>) -> (SIMD8<Int64>, SIMD8<Int64>) {
    let raw = UnsafeRawPointer(a)
    @inline(__always) func b(_ p: Int) -> SIMD8<Int64> { _mm512_set1_epi32(raw.loadUnaligned(fromByteOffset: 4 * p, as: Int32.self)) }
    let zero = _mm512_setzero_si512()
    var i0 = _mm512_dpwssd_epi32(zero, v.0, b(0)), i1 = _mm512_dpwssd_epi32(zero, v.8, b(8))
    i0 = _mm512_dpwssd_epi32(i0, v.1, b(1)); i1 = _mm512_dpwssd_epi32(i1, v.9, b(9))
    i0 = _mm512_dpwssd_epi32(i0, v.2, b(2)); i1 = _mm512_dpwssd_epi32(i1, v.10, b(10))
    i0 = _mm512_dpwssd_epi32(i0, v.3, b(3)); i1 = _mm512_dpwssd_epi32(i1, v.11, b(11))
    i0 = _mm512_dpwssd_epi32(i0, v.4, b(4)); i1 = _mm512_dpwssd_epi32(i1, v.12, b(12))
    i0 = _mm512_dpwssd_epi32(i0, v.5, b(5)); i1 = _mm512_dpwssd_epi32(i1, v.13, b(13))
    i0 = _mm512_dpwssd_epi32(i0, v.6, b(6)); i1 = _mm512_dpwssd_epi32(i1, v.14, b(14))
    i0 = _mm512_dpwssd_epi32(i0, v.7, b(7)); i1 = _mm512_dpwssd_epi32(i1, v.15, b(15))
    return (i0, i1)
}

/// Half of a unit (pair vectors `first`…`first + 7`: 16 columns) for four tokens at once, each
/// weight vector loaded once for the four: `a` the first token's activations as int16 pairs,
/// `stride` pairs from one token to the next.
@_transparent
private func halfDots4(
    _ w: UnsafePointer<SIMD8<Int64>>, _ a: UnsafePointer<Int32>, _ stride: Int, _ first: Int
) -> (SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>) {
    var s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512(), s2 = _mm512_setzero_si512(), s3 = _mm512_setzero_si512()
    for p in first..<(first + 8) {
        let v = w[p]
        s0 = _mm512_dpwssd_epi32(s0, v, _mm512_set1_epi32(a[p]))
        s1 = _mm512_dpwssd_epi32(s1, v, _mm512_set1_epi32(a[stride + p]))
        s2 = _mm512_dpwssd_epi32(s2, v, _mm512_set1_epi32(a[2 * stride + p]))
        s3 = _mm512_dpwssd_epi32(s3, v, _mm512_set1_epi32(a[3 * stride + p]))
    }
    return (s0, s1, s2, s3)
}

/// One unit for one token from its decoded pairs: columns 0–15 and 16–31 (q6_K's two scales).
@_transparent
private func pairProduct(
    _ kind: Int32, _ acc: inout SIMD16<Float>, _ v: UnitPairs, _ f: UnitFactors, _ a: UnsafePointer<Int16>, _ da: Float,
    _ sa: Float
) {
    let (s0, s1) = pairDots(v, a)
    if kind == TileKind.q6_K {
        accumulate(kind, &acc, s0, f.d, f.c, da, sa)
        accumulate(kind, &acc, s1, f.dHigh, f.c, da, sa)
    } else {
        accumulate(kind, &acc, _mm512_add_epi32(s0, s1), f.d, f.c, da, sa)
    }
}

/// out[0..<valid] (+)= the 16 row values.
@_transparent
private func storeRows(_ out: UnsafeMutablePointer<Float>, _ valid: Int, _ v: SIMD16<Float>, add: Bool) {
    if valid == 16 {
        let p = UnsafeMutableRawPointer(out)
        let old = add ? _mm512_loadu_ps(UnsafeRawPointer(p)) : SIMD16<Float>()
        _mm512_storeu_ps(p, old + v)
        return
    }
    for r in 0..<valid { out[r] = add ? out[r] + v[r] : v[r] }
}

/// Batches up to this many tokens (the decode steps of several sequences) take the
/// register path: weights decoded once per four tokens, no pair layout written to L1.
let smallBatchLimit = 8

/// Lane-pair copies of a unit's 16 row factors for accumulators with two lanes per row
/// (rows 0–7 in one register, 8–15 in the other): `d` in both lanes of a row, `c` in the
/// even lane only (its term is added once per row).
private struct PairFactors {
    var dLo, dHi, dHighLo, dHighHi, cLo, cHi: SIMD16<Float>
}

@_transparent
private func pairFactors(_ kind: Int32, _ f: UnitFactors) -> PairFactors {
    let lowIndex = unsafeBitCast(SIMD16<Int32>(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), to: SIMD8<Int64>.self)
    let highIndex = unsafeBitCast(SIMD16<Int32>(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), to: SIMD8<Int64>.self)
    let even = SIMD16<Float>(1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0)
    let dLo = _mm512_permutexvar_ps(lowIndex, f.d), dHi = _mm512_permutexvar_ps(highIndex, f.d)
    let q6 = kind == TileKind.q6_K
    let hasC = kind != TileKind.q8_0 && kind != TileKind.q6_K
    return PairFactors(
        dLo: dLo, dHi: dHi,
        dHighLo: q6 ? _mm512_permutexvar_ps(lowIndex, f.dHigh) : dLo,
        dHighHi: q6 ? _mm512_permutexvar_ps(highIndex, f.dHigh) : dHi,
        cLo: hasC ? _mm512_permutexvar_ps(lowIndex, f.c) * even : SIMD16<Float>(),
        cHi: hasC ? _mm512_permutexvar_ps(highIndex, f.c) * even : SIMD16<Float>())
}

/// Float accumulators of one token on the register path: two lanes per row.
private struct PairSums {
    var lo = SIMD16<Float>(), hi = SIMD16<Float>()
}

/// Adds one token's integer sums (two lanes per row) of a unit's half or whole, scaled.
@_transparent
private func accumulatePairs(
    _ kind: Int32, _ acc: inout PairSums, _ lo: SIMD8<Int64>, _ hi: SIMD8<Int64>, _ dLo: SIMD16<Float>,
    _ dHi: SIMD16<Float>, _ f: PairFactors, _ da: Float, _ sa: Float, withC: Bool
) {
    let a = SIMD16<Float>(repeating: da)
    acc.lo = _mm512_fmadd_ps(dLo, _mm512_cvtepi32_ps(lo) * a, acc.lo)
    acc.hi = _mm512_fmadd_ps(dHi, _mm512_cvtepi32_ps(hi) * a, acc.hi)
    if withC && kind != TileKind.q8_0 && kind != TileKind.q6_K {
        let s = SIMD16<Float>(repeating: sa * da)
        acc.lo = _mm512_fmadd_ps(f.cLo, s, acc.lo)
        acc.hi = _mm512_fmadd_ps(f.cHi, s, acc.hi)
    }
}

/// The 16 row values of a token's lane-pair accumulators.
@_transparent
private func joinPairs(_ acc: PairSums) -> SIMD16<Float> {
    let evenLanes = SIMD16<Int32>(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
    let even = unsafeBitCast(evenLanes, to: SIMD8<Int64>.self)
    let odd = unsafeBitCast(evenLanes &+ 1, to: SIMD8<Int64>.self)
    return _mm512_permutex2var_ps(acc.lo, even, acc.hi) + _mm512_permutex2var_ps(acc.lo, odd, acc.hi)
}

/// One 16-row group for `count` (1–4) tokens starting at token `t`, the weights decoded in
/// registers once for all of them (a few sequences' decode step): per vector, two `vpdpwssd`
/// per token against four broadcast activations; lanes are joined once at the end.
@_transparent
private func smallBatchGroup(
    _ kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, units: Int, g: Int, t: Int, count: Int,
    quants: UnsafePointer<Int16>, scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int,
    y: UnsafeMutablePointer<Float>, ldy: Int, valid: Int
) {
    let totalUnits = blocks * units, actBlocks = cols / 32
    let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
    // Tokens past `count` repeat the last one (their results are dropped).
    let t1 = count > 1 ? t + 1 : t, t2 = count > 2 ? t + 2 : t1, t3 = count > 3 ? t + 3 : t2
    let a0 = quants + t * cols, a1 = quants + t1 * cols, a2 = quants + t2 * cols, a3 = quants + t3 * cols
    var c0 = PairSums(), c1 = PairSums(), c2 = PairSums(), c3 = PairSums()
    for ab in 0..<totalUnits {
        let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
        hearth_prefetch(groupStart + ab * stride + prefetchDistance, stride)
        let f = pairFactors(kind, unitFactors(kind, tile, u))
        let zero = _mm512_setzero_si512()
        var l0 = zero, h0 = zero, l1 = zero, h1 = zero, l2 = zero, h2 = zero, l3 = zero, h3 = zero
        let i0 = t * actBlocks + ab, i1 = t1 * actBlocks + ab, i2 = t2 * actBlocks + ab, i3 = t3 * actBlocks + ab
        for m in 0..<8 {
            let w = decodeWide(kind, tile, u, m), o = 32 * ab + 4 * m
            let b0 = broadcast(a0 + o)
            l0 = _mm512_dpwssd_epi32(l0, w.lo, b0)
            h0 = _mm512_dpwssd_epi32(h0, w.hi, b0)
            if count > 1 {
                let b1 = broadcast(a1 + o)
                l1 = _mm512_dpwssd_epi32(l1, w.lo, b1)
                h1 = _mm512_dpwssd_epi32(h1, w.hi, b1)
            }
            if count > 2 {
                let b2 = broadcast(a2 + o)
                l2 = _mm512_dpwssd_epi32(l2, w.lo, b2)
                h2 = _mm512_dpwssd_epi32(h2, w.hi, b2)
            }
            if count > 3 {
                let b3 = broadcast(a3 + o)
                l3 = _mm512_dpwssd_epi32(l3, w.lo, b3)
                h3 = _mm512_dpwssd_epi32(h3, w.hi, b3)
            }
            if kind == TileKind.q6_K && m == 3 {
                // q6_K: the unit's lower 16 columns have their own scale.
                accumulatePairs(kind, &c0, l0, h0, f.dLo, f.dHi, f, scales[i0], sums[i0], withC: false)
                if count > 1 { accumulatePairs(kind, &c1, l1, h1, f.dLo, f.dHi, f, scales[i1], sums[i1], withC: false) }
                if count > 2 { accumulatePairs(kind, &c2, l2, h2, f.dLo, f.dHi, f, scales[i2], sums[i2], withC: false) }
                if count > 3 { accumulatePairs(kind, &c3, l3, h3, f.dLo, f.dHi, f, scales[i3], sums[i3], withC: false) }
                l0 = zero; h0 = zero; l1 = zero; h1 = zero; l2 = zero; h2 = zero; l3 = zero; h3 = zero
            }
        }
        accumulatePairs(kind, &c0, l0, h0, f.dHighLo, f.dHighHi, f, scales[i0], sums[i0], withC: true)
        if count > 1 { accumulatePairs(kind, &c1, l1, h1, f.dHighLo, f.dHighHi, f, scales[i1], sums[i1], withC: true) }
        if count > 2 { accumulatePairs(kind, &c2, l2, h2, f.dHighLo, f.dHighHi, f, scales[i2], sums[i2], withC: true) }
        if count > 3 { accumulatePairs(kind, &c3, l3, h3, f.dHighLo, f.dHighHi, f, scales[i3], sums[i3], withC: true) }
    }
    storeRows(y + t * ldy + g * 16, valid, joinPairs(c0), add: false)
    if count > 1 { storeRows(y + t1 * ldy + g * 16, valid, joinPairs(c1), add: false) }
    if count > 2 { storeRows(y + t2 * ldy + g * 16, valid, joinPairs(c2), add: false) }
    if count > 3 { storeRows(y + t3 * ldy + g * 16, valid, joinPairs(c3), add: false) }
}

/// Units decoded into L1 at once for a batch (16 units × 16 vectors × 64 bytes = 16 KiB).
private let chunkUnits = 16

@_transparent
private func wideKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, quants: UnsafePointer<Int16>,
    scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int, decoded: UnsafeMutablePointer<UnitPairs>, factors: UnsafeMutablePointer<UnitFactors>
) {
    let units = kind >= TileKind.q4_K ? 8 : 1
    let totalUnits = blocks * units
    let actBlocks = cols / 32

    for g in groups {
        let valid = rows - g * 16 < 16 ? rows - g * 16 : 16
        if batch == 1 {
            var f0 = SIMD16<Float>(), f1 = SIMD16<Float>()
            var ab = 0
            let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
            // Two independent sums so consecutive units' float chains overlap.
            while ab < totalUnits {
                let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
                hearth_prefetch(groupStart + ab * stride + prefetchDistance, 2 * stride)
                unitProduct(kind, &f0, unitFactors(kind, tile, u), quants + 32 * ab, scales[ab], sums[ab], tile: tile, unit: u)
                ab += 1
                if ab == totalUnits { break }
                let tile1 = tiles + (g * blocks + ab / units) * tileBytes, u1 = ab % units
                unitProduct(kind, &f1, unitFactors(kind, tile1, u1), quants + 32 * ab, scales[ab], sums[ab], tile: tile1, unit: u1)
                ab += 1
            }
            storeRows(y + g * 16, valid, f0 + f1, add: false)
            continue
        }
        if batch <= smallBatchLimit {
            var t = 0
            while t < batch {
                // Four tokens at a time, then two, then one (each count a constant in its copy).
                let left = batch - t
                if left >= 4 {
                    smallBatchGroup(
                        kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g, t: t, count: 4,
                        quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: valid)
                    t += 4
                } else if left >= 2 {
                    smallBatchGroup(
                        kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g, t: t, count: 2,
                        quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: valid)
                    t += 2
                } else {
                    smallBatchGroup(
                        kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g, t: t, count: 1,
                        quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: valid)
                    t += 1
                }
            }
            continue
        }
        // A batch: 16 units decoded once into pairs in L1 (16 KiB), then the tokens stream past
        // them four at a time (each weight vector loaded once for the four), each token's row
        // sums kept in registers across the units.
        var start = 0
        while start < totalUnits {
            let n = totalUnits - start < chunkUnits ? totalUnits - start : chunkUnits
            for k in 0..<n {
                let ab = start + k
                let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
                factors[k] = unitFactors(kind, tile, u)
                decoded[k] = unitPairs(kind, tile, u)
            }
            var t = 0
            while t + 4 <= batch {
                var c0 = SIMD16<Float>(), c1 = SIMD16<Float>(), c2 = SIMD16<Float>(), c3 = SIMD16<Float>()
                for k in 0..<n {
                    let ab = start + k, f = factors[k]
                    let w = UnsafeRawPointer(decoded + k).assumingMemoryBound(to: SIMD8<Int64>.self)
                    let i = t * actBlocks + ab
                    let a = UnsafeRawPointer(quants + t * cols + 32 * ab).assumingMemoryBound(to: Int32.self)
                    let lo = halfDots4(w, a, cols / 2, 0), hi = halfDots4(w, a, cols / 2, 8)
                    @inline(__always) func add(_ c: inout SIMD16<Float>, _ s0: SIMD8<Int64>, _ s1: SIMD8<Int64>, _ j: Int) {
                        let da = scales[i + j * actBlocks], sa = sums[i + j * actBlocks]
                        if kind == TileKind.q6_K {
                            accumulate(kind, &c, s0, f.d, f.c, da, sa)
                            accumulate(kind, &c, s1, f.dHigh, f.c, da, sa)
                        } else {
                            accumulate(kind, &c, _mm512_add_epi32(s0, s1), f.d, f.c, da, sa)
                        }
                    }
                    add(&c0, lo.0, hi.0, 0)
                    add(&c1, lo.1, hi.1, 1)
                    add(&c2, lo.2, hi.2, 2)
                    add(&c3, lo.3, hi.3, 3)
                }
                storeRows(y + t * ldy + g * 16, valid, c0, add: start > 0)
                storeRows(y + (t + 1) * ldy + g * 16, valid, c1, add: start > 0)
                storeRows(y + (t + 2) * ldy + g * 16, valid, c2, add: start > 0)
                storeRows(y + (t + 3) * ldy + g * 16, valid, c3, add: start > 0)
                t += 4
            }
            while t < batch {
                var c0 = SIMD16<Float>()
                for k in 0..<n {
                    let ab = start + k, i = t * actBlocks + ab
                    pairProduct(kind, &c0, decoded[k], factors[k], quants + t * cols + 32 * ab, scales[i], sums[i])
                }
                storeRows(y + t * ldy + g * 16, valid, c0, add: start > 0)
                t += 1
            }
            start += n
        }
    }
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 matrix of any ``TileKind``, all `batch` tokens of 16-bit activations
/// (arguments as `hearthQuantizedMatMul16AVX2`), with AVX-512 VNNI `vpdpwssd`.
@inline(never)
public func hearthQuantizedMatMul16AVX512VNNI(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ quants: UnsafePointer<Int16>, _ scales: UnsafePointer<Float>, _ sums: UnsafePointer<Float>, _ cols: Int,
    _ batch: Int, _ groupStart: Int, _ groupEnd: Int, _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    withUnsafeTemporaryAllocation(of: UnitPairs.self, capacity: chunkUnits) { buffer in
      withUnsafeTemporaryAllocation(of: UnitFactors.self, capacity: chunkUnits) { factorBuffer in
        guard let decoded = buffer.baseAddress, let factors = factorBuffer.baseAddress else { return }
        let groups = groupStart..<groupEnd
        // Written out per kind so that each call inlines a copy with the kind a constant.
        switch kind {
        case TileKind.q4_0:
            wideKernel(kind: TileKind.q4_0, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        case TileKind.q4_1:
            wideKernel(kind: TileKind.q4_1, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        case TileKind.q8_0:
            wideKernel(kind: TileKind.q8_0, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        case TileKind.q8_a:
            wideKernel(kind: TileKind.q8_a, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        case TileKind.q5_0:
            wideKernel(kind: TileKind.q5_0, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        case TileKind.q5_1:
            wideKernel(kind: TileKind.q5_1, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        case TileKind.q4_K:
            wideKernel(kind: TileKind.q4_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        case TileKind.q5_K:
            wideKernel(kind: TileKind.q5_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        default:
            wideKernel(kind: TileKind.q6_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, decoded: decoded, factors: factors)
        }
      }
    }
}
#endif
