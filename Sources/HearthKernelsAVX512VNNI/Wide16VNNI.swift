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

/// acc += d·(Σ·d_a) + c·sa for 16 rows, Σ the row sums as int32 lanes and sa = d_a·Σa.
@_transparent
private func accumulate(
    _ kind: Int32, _ acc: inout SIMD16<Float>, _ sum: SIMD8<Int64>, _ d: SIMD16<Float>, _ c: SIMD16<Float>, _ da: Float,
    _ sa: Float
) {
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum) * SIMD16<Float>(repeating: da), acc)
    if kind != TileKind.q8_0 && kind != TileKind.q6_K {
        acc = _mm512_fmadd_ps(c, SIMD16<Float>(repeating: sa), acc)
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
    let row = tokenRows(t, last: last)
    // Each token's activations as int16 pairs (rows of `cols`, a multiple of 32, so aligned).
    let a = row.map { UnsafeRawPointer(quants + $0 * cols).assumingMemoryBound(to: Int32.self) }
    let blockIndex = row.map { $0 * actBlocks }

    let evenLanes = SIMD16<Int32>(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
    let even = unsafeBitCast(evenLanes, to: SIMD8<Int64>.self)
    let odd = unsafeBitCast(evenLanes &+ 1, to: SIMD8<Int64>.self)
    var acc = Eight<SIMD16<Float>>(SIMD16<Float>())
    for ab in 0..<totalUnits {
        let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
        hearth_prefetch(groupStart + ab * stride + prefetchDistance, stride)
        let f = unitFactors(kind, tile, u)
        let i = blockIndex.map { $0 + ab }
        var s = Eight<SIMD8<Int64>>(_mm512_setzero_si512())
        for m in 0..<8 {
            let w = decodeCentred(kind, tile, u, m)
            let at = 16 * ab + 2 * m  // the pair index of columns 4m, 4m + 1 of unit ab
            stepEight(&s, count, _mm512_permutex2var_epi32(w.lo, even, w.hi), a, at, bytes: false)
            stepEight(&s, count, _mm512_permutex2var_epi32(w.lo, odd, w.hi), a, at + 1, bytes: false)
            if kind == TileKind.q6_K && m == 3 {
                // q6_K: the unit's lower 16 columns have their own scale.
                flushEight(&acc, s, count, f.d, f.c, i, scales, withOffset: false, i, sums)
                s = Eight<SIMD8<Int64>>(_mm512_setzero_si512())
            }
        }
        flushEight(
            &acc, s, count, kind == TileKind.q6_K ? f.dHigh : f.d, f.c, i, scales, withOffset: hasOffset(kind), i, sums)
    }
    storeEight(acc, rows: row, t: t, last: last, count: count, y: y, ldy: ldy, g: g, valid: valid)
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
    // A batch (several sequences' decode step, or a prompt): the passes of TokenTiles.swift.
    var passes = TokenPasses(batch: batch, groups: groups)
    while let p = passes.next() {
        switch p.count {
        case 8:
            registerGroup(
                kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: p.g, t: p.t, count: 8,
                end: p.end, quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: validRows(p.g))
        case 4:
            registerGroup(
                kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: p.g, t: p.t, count: 4,
                end: p.end, quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: validRows(p.g))
        default:
            registerGroup(
                kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: p.g, t: p.t, count: 2,
                end: p.end, quants: quants, scales: scales, sums: sums, cols: cols, y: y, ldy: ldy, valid: validRows(p.g))
        }
    }
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 matrix of any ``TileKind``, all `batch` tokens of 16-bit activations
/// (arguments as `hearthQuantizedMatMul16AVX2`, except that `sums` holds d_a·Σa per block,
/// HearthKernels' `QuantizedActivations.scaledSums`), with AVX-512 VNNI `vpdpwssd`.
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
