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
//
// A batch (several sequences' decode step, or a prompt) takes the register path instead: per
// unit the weights are decoded once for eight tokens and permuted into pair vectors (one lane per
// row), each token accumulating into one register, so a unit costs 128 `vpdpwssd` and a flush of
// two float operations per token. Zen 4 issues two 512-bit `vpdpwssd` per cycle (measured: 4
// cycles latency, 8 independent chains reach 91% of that), so the eight chains keep both pipes
// busy; the flush's multiply and FMA share those pipes, the permutes and widenings mostly not.


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

/// out[0..<valid] = the 16 row values.
@_transparent
private func storeRows(_ out: UnsafeMutablePointer<Float>, valid: Int, _ v: SIMD16<Float>) {
    if valid == 16 {
        _mm512_storeu_ps(UnsafeMutableRawPointer(out), v)
        return
    }
    for r in 0..<valid { out[r] = v[r] }
}

/// Tokens per block of the batched path: each 16-row group is multiplied against one block's
/// activations (32 × `cols` int16, in L2) before the next group, eight tokens per pass.
private let tokenBlock = 32

/// Vector m of unit `u` widened to int16 with q4_0's and q5_0's zero point subtracted in the
/// bytes (so their offset term drops out of the flush; the other kinds as ``decodeWide``).
@_transparent
private func decodeCentred(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int, _ m: Int) -> WidePair {
    guard kind == TileKind.q4_0 || kind == TileKind.q5_0 else { return decodeWide(kind, tile, u, m) }
    let zero = _mm256_set1_epi8(kind == TileKind.q4_0 ? 8 : 16)
    let a = _mm256_sub_epi8(weightBytes(kind, tile, u, m, 0), zero)
    let b = _mm256_sub_epi8(weightBytes(kind, tile, u, m, 1), zero)
    return WidePair(lo: _mm512_cvtepi8_epi16(a), hi: _mm512_cvtepi8_epi16(b))
}

/// Whether the flush adds an offset term c·Σa (kinds with a per-row minimum; q4_0 and q5_0
/// are centred by ``decodeCentred``, q8_0 and q6_K are signed).
@_transparent
private func hasOffset(_ kind: Int32) -> Bool {
    kind == TileKind.q4_1 || kind == TileKind.q8_a || kind == TileKind.q5_1 || kind == TileKind.q4_K
        || kind == TileKind.q5_K
}

/// Eight tokens' values, one register each (unused ones stay idle when the count is smaller).
private struct Eight<Lane> {
    var l0, l1, l2, l3, l4, l5, l6, l7: Lane
    @_transparent init(_ v: Lane) { (l0, l1, l2, l3, l4, l5, l6, l7) = (v, v, v, v, v, v, v, v) }
}

/// Adds w·a(token j) for pair vector w: a(j) the token's activation pair `at` (two int16 as one int32).
@_transparent
private func pairStep(_ s: inout Eight<SIMD8<Int64>>, _ count: Int, _ w: SIMD8<Int64>, _ a: Eight<UnsafePointer<Int32>>, _ at: Int) {
    @_transparent func b(_ p: UnsafePointer<Int32>) -> SIMD8<Int64> { _mm512_set1_epi32(p[at]) }
    s.l0 = _mm512_dpwssd_epi32(s.l0, w, b(a.l0))
    if count > 1 { s.l1 = _mm512_dpwssd_epi32(s.l1, w, b(a.l1)) }
    if count > 2 { s.l2 = _mm512_dpwssd_epi32(s.l2, w, b(a.l2)) }
    if count > 3 { s.l3 = _mm512_dpwssd_epi32(s.l3, w, b(a.l3)) }
    if count > 4 { s.l4 = _mm512_dpwssd_epi32(s.l4, w, b(a.l4)) }
    if count > 5 { s.l5 = _mm512_dpwssd_epi32(s.l5, w, b(a.l5)) }
    if count > 6 { s.l6 = _mm512_dpwssd_epi32(s.l6, w, b(a.l6)) }
    if count > 7 { s.l7 = _mm512_dpwssd_epi32(s.l7, w, b(a.l7)) }
}

/// acc(j) += d·(Σ(j)·d_a(j)) [+ c·Σa(j)·d_a(j)] for each token, `i` its activation block.
@_transparent
private func flushEight(
    _ kind: Int32, _ acc: inout Eight<SIMD16<Float>>, _ s: Eight<SIMD8<Int64>>, _ count: Int, _ d: SIMD16<Float>,
    _ c: SIMD16<Float>, _ withOffset: Bool, _ i: Eight<Int>, _ scales: UnsafePointer<Float>, _ sums: UnsafePointer<Float>
) {
    @_transparent func one(_ a: inout SIMD16<Float>, _ sum: SIMD8<Int64>, _ k: Int) {
        let da = scales[k]
        a = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum) * SIMD16<Float>(repeating: da), a)
        if withOffset && hasOffset(kind) { a = _mm512_fmadd_ps(c, SIMD16<Float>(repeating: sums[k] * da), a) }
    }
    one(&acc.l0, s.l0, i.l0)
    if count > 1 { one(&acc.l1, s.l1, i.l1) }
    if count > 2 { one(&acc.l2, s.l2, i.l2) }
    if count > 3 { one(&acc.l3, s.l3, i.l3) }
    if count > 4 { one(&acc.l4, s.l4, i.l4) }
    if count > 5 { one(&acc.l5, s.l5, i.l5) }
    if count > 6 { one(&acc.l6, s.l6, i.l6) }
    if count > 7 { one(&acc.l7, s.l7, i.l7) }
}

/// One 16-row group for `count` (a constant: 1, 2, 4 or 8) tokens from token `t`, the weights
/// decoded in registers once for all of them (the decode step of several sequences): each
/// vector of four weights per row is permuted into two pair vectors (weights 2p, 2p + 1 of
/// every row), and each token adds one `vpdpwssd` per pair vector into a single register with
/// one lane per row, so a unit's flush is one convert, multiply and FMA per token. Tokens at or
/// past `end` repeat token `end − 1` (their results are dropped).
@_transparent
private func registerGroup(
    _ kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, units: Int, g: Int, t: Int, count: Int,
    end: Int, quants: UnsafePointer<Int16>, scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int,
    y: UnsafeMutablePointer<Float>, ldy: Int, valid: Int
) {
    let totalUnits = blocks * units, actBlocks = cols / 32
    let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
    let last = end - 1
    var row = Eight<Int>(t)
    row.l1 = min(t + 1, last); row.l2 = min(t + 2, last); row.l3 = min(t + 3, last)
    row.l4 = min(t + 4, last); row.l5 = min(t + 5, last); row.l6 = min(t + 6, last); row.l7 = min(t + 7, last)
    // Each token's activations as int16 pairs (rows of `cols`, a multiple of 32, so aligned).
    @_transparent func rowStart(_ r: Int) -> UnsafePointer<Int32> {
        UnsafeRawPointer(quants + r * cols).assumingMemoryBound(to: Int32.self)
    }
    var a = Eight<UnsafePointer<Int32>>(rowStart(row.l0))
    a.l1 = rowStart(row.l1); a.l2 = rowStart(row.l2); a.l3 = rowStart(row.l3)
    a.l4 = rowStart(row.l4); a.l5 = rowStart(row.l5); a.l6 = rowStart(row.l6); a.l7 = rowStart(row.l7)
    var blockIndex = row
    blockIndex.l0 *= actBlocks; blockIndex.l1 *= actBlocks; blockIndex.l2 *= actBlocks; blockIndex.l3 *= actBlocks
    blockIndex.l4 *= actBlocks; blockIndex.l5 *= actBlocks; blockIndex.l6 *= actBlocks; blockIndex.l7 *= actBlocks

    let evenLanes = SIMD16<Int32>(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
    let even = unsafeBitCast(evenLanes, to: SIMD8<Int64>.self)
    let odd = unsafeBitCast(evenLanes &+ 1, to: SIMD8<Int64>.self)
    var acc = Eight<SIMD16<Float>>(SIMD16<Float>())
    for ab in 0..<totalUnits {
        let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
        hearth_prefetch(groupStart + ab * stride + prefetchDistance, stride)
        let f = unitFactors(kind, tile, u)
        var i = blockIndex
        i.l0 += ab; i.l1 += ab; i.l2 += ab; i.l3 += ab; i.l4 += ab; i.l5 += ab; i.l6 += ab; i.l7 += ab
        var s = Eight<SIMD8<Int64>>(_mm512_setzero_si512())
        for m in 0..<8 {
            let w = decodeCentred(kind, tile, u, m)
            let at = 16 * ab + 2 * m  // the pair index of columns 4m, 4m + 1 of unit ab
            pairStep(&s, count, _mm512_permutex2var_epi32(w.lo, even, w.hi), a, at)
            pairStep(&s, count, _mm512_permutex2var_epi32(w.lo, odd, w.hi), a, at + 1)
            if kind == TileKind.q6_K && m == 3 {
                // q6_K: the unit's lower 16 columns have their own scale.
                flushEight(kind, &acc, s, count, f.d, f.c, false, i, scales, sums)
                s = Eight<SIMD8<Int64>>(_mm512_setzero_si512())
            }
        }
        flushEight(kind, &acc, s, count, kind == TileKind.q6_K ? f.dHigh : f.d, f.c, true, i, scales, sums)
    }
    storeRows(y + row.l0 * ldy + g * 16, valid: valid, acc.l0)
    if count > 1 && t + 1 <= last { storeRows(y + row.l1 * ldy + g * 16, valid: valid, acc.l1) }
    if count > 2 && t + 2 <= last { storeRows(y + row.l2 * ldy + g * 16, valid: valid, acc.l2) }
    if count > 3 && t + 3 <= last { storeRows(y + row.l3 * ldy + g * 16, valid: valid, acc.l3) }
    if count > 4 && t + 4 <= last { storeRows(y + row.l4 * ldy + g * 16, valid: valid, acc.l4) }
    if count > 5 && t + 5 <= last { storeRows(y + row.l5 * ldy + g * 16, valid: valid, acc.l5) }
    if count > 6 && t + 6 <= last { storeRows(y + row.l6 * ldy + g * 16, valid: valid, acc.l6) }
    if count > 7 && t + 7 <= last { storeRows(y + row.l7 * ldy + g * 16, valid: valid, acc.l7) }
}

@_transparent
private func wideKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, quants: UnsafePointer<Int16>,
    scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let units = kind >= TileKind.q4_K ? 8 : 1
    let totalUnits = blocks * units
    @_transparent func validRows(_ g: Int) -> Int { rows - g * 16 < 16 ? rows - g * 16 : 16 }

    if batch == 1 {
        // One token (a single sequence's decode step): bound by reading the weights.
        for g in groups {
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
            storeRows(y + g * 16, valid: validRows(g), f0 + f1)
        }
        return
    }
    // A batch (several sequences' decode step, or a prompt): blocks of `tokenBlock` tokens; for
    // each, every group of this thread in turn, eight tokens per pass over the group's weights
    // (five to seven padded to eight, three to four, two).
    var first = 0
    while first < batch {
        let end = min(first + tokenBlock, batch)
        for g in groups {
            var t = first
            while t < end {
                let left = end - t
                if left > 4 {
                    registerGroup(
                        kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g, t: t, count: 8,
                        end: end, quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: validRows(g))
                    t += 8
                } else if left > 2 {
                    registerGroup(
                        kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g, t: t, count: 4,
                        end: end, quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: validRows(g))
                    t += 4
                } else {
                    registerGroup(
                        kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g, t: t, count: 2,
                        end: end, quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: validRows(g))
                    t += 2
                }
            }
        }
        first = end
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
    let groups = groupStart..<groupEnd
    // One inlined copy per kind, the kind a constant in each.
    @_transparent func run(_ k: Int32) {
        wideKernel(kind: k, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants, scales: scales,
                   sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy)
    }
    withConstantTileKind(kind, run)
}
#endif
