#if arch(x86_64)
import CHearthCPU
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// The integer matmul with 16-bit activations at the AVX2 level, for every interleaved16 tile
// kind. Weights are decoded to bytes as in the 8-bit kernels, widened to int16 and multiplied
// with `vpmaddwd` against four activations broadcast to every row. On AVX2 this costs the same
// number of multiplies as the 8-bit path (`vpmaddubsw` + `vpmaddwd`), while the activations keep
// 16 bits instead of 8: a rounding error 1/32767 of the block's largest value instead of 1/127,
// which is what keeps small models' outputs on the exact math's argmax (docs/ACCURACY.md).


/// Four int16 vectors (rows 0–3, 4–7, 8–11, 12–15) of a unit's four weights per row.
private struct Wide4 {
    var w0, w1, w2, w3: SIMD4<Int64>
}

/// Vector m of unit `u` of a tile, widened to int16.
@_transparent
private func decodeWide(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int, _ m: Int) -> Wide4 {
    let signed = kind == TileKind.q8_0 || kind == TileKind.q6_K
    let (a, b) = widen(weightBytes(kind, tile, u, m, 0), signed: signed)
    let (c, d) = widen(weightBytes(kind, tile, u, m, 1), signed: signed)
    return Wide4(w0: a, w1: b, w2: c, w3: d)
}

/// acc += w · a (four `vpmaddwd` + adds) for the four row quarters.
@_transparent
private func accumulate(_ acc: inout Wide4, _ w: Wide4, _ a: SIMD4<Int64>) {
    acc.w0 = _mm256_add_epi32(acc.w0, _mm256_madd_epi16(w.w0, a))
    acc.w1 = _mm256_add_epi32(acc.w1, _mm256_madd_epi16(w.w1, a))
    acc.w2 = _mm256_add_epi32(acc.w2, _mm256_madd_epi16(w.w2, a))
    acc.w3 = _mm256_add_epi32(acc.w3, _mm256_madd_epi16(w.w3, a))
}

/// 32 bytes (8 rows × 4 weights) widened to two int16 vectors (rows 0–3, rows 4–7).
@_transparent
private func widen(_ v: SIMD4<Int64>, signed: Bool) -> (SIMD4<Int64>, SIMD4<Int64>) {
    let lo = v.lowHalf, hi = v.highHalf
    return signed ? (_mm256_cvtepi8_epi16(lo), _mm256_cvtepi8_epi16(hi)) : (_mm256_cvtepu8_epi16(lo), _mm256_cvtepu8_epi16(hi))
}

/// Row sums of two `vpmaddwd` accumulators (rows 0–3 and 4–7, two lanes per row) → rows 0–7.
@_transparent
private func rowSums(_ a: SIMD4<Int64>, _ b: SIMD4<Int64>) -> SIMD4<Int64> {
    _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(a, b), _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7))
}

/// Eight bytes at `p` as eight floats (unsigned or signed).
@_transparent
private func floats8(_ p: UnsafeRawPointer, signed: Bool) -> SIMD8<Float> {
    let bytes = _mm_loadu_si64(p)
    return _mm256_cvtepi32_ps(signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes))
}

/// The per-row factors of unit `u`: y += d·d_a·(Σ − zero·Σa) + m·d_a·Σa, with for q6_K a
/// second d for the unit's upper 16 columns (vectors 4–7). Each pair is (rows 0–7, rows 8–15).
private struct UnitFactors {
    var d: (SIMD8<Float>, SIMD8<Float>)
    var dHigh: (SIMD8<Float>, SIMD8<Float>)
    var m: (SIMD8<Float>, SIMD8<Float>)
}

@_transparent
private func unitFactors(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int) -> UnitFactors {
    @inline(__always) func halves(_ offset: Int) -> (SIMD8<Float>, SIMD8<Float>) {
        (_mm256_cvtph_ps(tile.loadUnaligned(fromByteOffset: offset, as: SIMD2<Int64>.self)),
         _mm256_cvtph_ps(tile.loadUnaligned(fromByteOffset: offset + 16, as: SIMD2<Int64>.self)))
    }
    let zero = (SIMD8<Float>(), SIMD8<Float>())
    let d = halves(0)
    switch kind {
    case TileKind.q4_1, TileKind.q8_a, TileKind.q5_1:
        return UnitFactors(d: d, dHigh: d, m: halves(32))
    case TileKind.q4_K, TileKind.q5_K:
        let dmin = halves(KTile.kDmin)
        let sc = tile + KTile.kScales + 16 * u, mn = tile + KTile.kMins + 16 * u
        let scaled = (d.0 * floats8(sc, signed: false), d.1 * floats8(sc + 8, signed: false))
        let mins = (-dmin.0 * floats8(mn, signed: false), -dmin.1 * floats8(mn + 8, signed: false))
        return UnitFactors(d: scaled, dHigh: scaled, m: mins)
    case TileKind.q6_K:
        let sc = tile + KTile.q6Scales + 32 * u
        return UnitFactors(
            d: (d.0 * floats8(sc, signed: true), d.1 * floats8(sc + 8, signed: true)),
            dHigh: (d.0 * floats8(sc + 16, signed: true), d.1 * floats8(sc + 24, signed: true)), m: zero)
    default:
        return UnitFactors(d: d, dHigh: d, m: zero)
    }
}

/// Four int16 activations at `p` broadcast to every 64-bit lane.
@_transparent
private func broadcast(_ p: UnsafePointer<Int16>) -> SIMD4<Int64> {
    _mm256_broadcastq_epi64(_mm_loadu_si64(UnsafeRawPointer(p)))
}

/// The float contribution of one unit (or, for q6_K, one 16-column half of it) to 16 rows:
/// d_a·(d·(Σ − zero·Σa) + m·Σa), from the `vpmaddwd` accumulators; (rows 0–7, rows 8–15).
@_transparent
private func contribution(
    _ kind: Int32, _ acc: Wide4, _ d: (SIMD8<Float>, SIMD8<Float>), _ m: (SIMD8<Float>, SIMD8<Float>), _ da: Float,
    _ sa: Float
) -> (SIMD8<Float>, SIMD8<Float>) {
    let hasMin = kind == TileKind.q4_1 || kind == TileKind.q8_a || kind == TileKind.q5_1 || kind == TileKind.q4_K
        || kind == TileKind.q5_K
    let zero: Float = kind == TileKind.q4_0 ? 8 : kind == TileKind.q5_0 ? 16 : 0
    var r0 = _mm256_cvtepi32_ps(rowSums(acc.w0, acc.w1)), r1 = _mm256_cvtepi32_ps(rowSums(acc.w2, acc.w3))
    if zero != 0 {
        r0 = r0 - SIMD8<Float>(repeating: zero * sa)
        r1 = r1 - SIMD8<Float>(repeating: zero * sa)
    }
    var v0 = d.0 * r0, v1 = d.1 * r1
    if hasMin {
        let sav = SIMD8<Float>(repeating: sa)
        v0 = _mm256_fmadd_ps(m.0, sav, v0)
        v1 = _mm256_fmadd_ps(m.1, sav, v1)
    }
    let dav = SIMD8<Float>(repeating: da)
    return (v0 * dav, v1 * dav)
}

/// out[0..<valid] (+)= the 16 row values (`add`: accumulate into what is there).
@_transparent
private func storeRows(_ out: UnsafeMutablePointer<Float>, _ valid: Int, _ v: (SIMD8<Float>, SIMD8<Float>), add: Bool) {
    if valid == 16 {
        let p = UnsafeMutableRawPointer(out)
        let old0 = add ? p.loadUnaligned(as: SIMD8<Float>.self) : SIMD8<Float>()
        let old1 = add ? p.loadUnaligned(fromByteOffset: 32, as: SIMD8<Float>.self) : SIMD8<Float>()
        p.storeBytes(of: old0 + v.0, as: SIMD8<Float>.self)
        p.storeBytes(of: old1 + v.1, toByteOffset: 32, as: SIMD8<Float>.self)
        return
    }
    for r in 0..<valid {
        let x = r < 8 ? v.0[r] : v.1[r - 8]
        out[r] = add ? out[r] + x : x
    }
}

/// Units decoded into L1 at once for a batch (16 KiB of int16 weights).
private let chunkUnits = 16

/// One unit's contribution for one token: vectors 0–3, then vectors 4–7 (for q6_K a separate
/// contribution with the upper 16 columns' scale). Weights decoded from the tile in registers
/// (`tile` non-nil) or read from `buffered` (eight vectors in L1).
@_transparent
private func unitProduct(
    _ kind: Int32, _ f: UnitFactors, _ a: UnsafePointer<Int16>, _ da: Float, _ sa: Float, tile: UnsafeRawPointer?,
    unit u: Int, buffered: UnsafePointer<Wide4>
) -> (SIMD8<Float>, SIMD8<Float>) {
    let zeros = Wide4(w0: _mm256_setzero_si256(), w1: _mm256_setzero_si256(), w2: _mm256_setzero_si256(), w3: _mm256_setzero_si256())
    var acc = zeros
    var v = (SIMD8<Float>(), SIMD8<Float>())
    if let tile {
        for m in 0..<4 { accumulate(&acc, decodeWide(kind, tile, u, m), broadcast(a + 4 * m)) }
    } else {
        for m in 0..<4 { accumulate(&acc, buffered[m], broadcast(a + 4 * m)) }
    }
    if kind == TileKind.q6_K {
        v = contribution(kind, acc, f.d, f.m, da, sa)
        acc = zeros
    }
    if let tile {
        for m in 4..<8 { accumulate(&acc, decodeWide(kind, tile, u, m), broadcast(a + 4 * m)) }
    } else {
        for m in 4..<8 { accumulate(&acc, buffered[m], broadcast(a + 4 * m)) }
    }
    let last = contribution(kind, acc, kind == TileKind.q6_K ? f.dHigh : f.d, f.m, da, sa)
    return (v.0 + last.0, v.1 + last.1)
}

/// The kernel for one tile `kind` (a constant once inlined). A single token multiplies each
/// unit's weights straight from registers; a batch decodes 16 units at a time into 32 int16
/// vectors each (16 KiB, in L1) and streams the tokens past them two at a time. Each token's
/// row sums stay in registers across the units and reach `y` once per 16 units (once per row
/// group for a single token).
@_transparent
private func wideKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, quants: UnsafePointer<Int16>,
    scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int, unpacked: UnsafeMutablePointer<SIMD4<Int64>>,
    factors: UnsafeMutablePointer<UnitFactors>
) {
    let units = kind >= TileKind.q4_K ? 8 : 1
    let totalUnits = blocks * units
    let actBlocks = cols / 32
    let wide = UnsafeMutableRawPointer(unpacked).assumingMemoryBound(to: Wide4.self)

    for g in groups {
        let valid = lesser(16, rows - g * 16)
        if batch == 1 {
            var f0 = SIMD8<Float>(), f1 = SIMD8<Float>()
            let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
            for ab in 0..<totalUnits {
                let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
                // Weights a few KiB ahead, towards L1: the hardware prefetcher alone left a
                // single token's pass waiting on memory at a third of the bandwidth.
                hearth_prefetch(groupStart + ab * stride + 4096, stride)
                let v = unitProduct(
                    kind, unitFactors(kind, tile, u), quants + 32 * ab, scales[ab], sums[ab], tile: tile, unit: u,
                    buffered: wide)
                f0 += v.0
                f1 += v.1
            }
            storeRows(y + g * 16, valid, (f0, f1), add: false)
            continue
        }
        var start = 0
        while start < totalUnits {
            let n = lesser(chunkUnits, totalUnits - start)
            for k in 0..<n {
                let ab = start + k
                let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
                factors[k] = unitFactors(kind, tile, u)
                for m in 0..<8 { wide[8 * k + m] = decodeWide(kind, tile, u, m) }
            }
            var t = 0
            while t + 2 <= batch {
                var a0 = SIMD8<Float>(), a1 = SIMD8<Float>(), b0 = SIMD8<Float>(), b1 = SIMD8<Float>()
                for k in 0..<n {
                    let ab = start + k, f = factors[k], w = wide + 8 * k
                    let i = t * actBlocks + ab, j = i + actBlocks
                    let va = unitProduct(kind, f, quants + t * cols + 32 * ab, scales[i], sums[i], tile: nil, unit: 0, buffered: w)
                    let vb = unitProduct(kind, f, quants + (t + 1) * cols + 32 * ab, scales[j], sums[j], tile: nil, unit: 0, buffered: w)
                    a0 += va.0
                    a1 += va.1
                    b0 += vb.0
                    b1 += vb.1
                }
                storeRows(y + t * ldy + g * 16, valid, (a0, a1), add: start > 0)
                storeRows(y + (t + 1) * ldy + g * 16, valid, (b0, b1), add: start > 0)
                t += 2
            }
            if t < batch {
                var a0 = SIMD8<Float>(), a1 = SIMD8<Float>()
                for k in 0..<n {
                    let ab = start + k, w = wide + 8 * k, i = t * actBlocks + ab
                    let va = unitProduct(kind, factors[k], quants + t * cols + 32 * ab, scales[i], sums[i], tile: nil, unit: 0, buffered: w)
                    a0 += va.0
                    a1 += va.1
                }
                storeRows(y + t * ldy + g * 16, valid, (a0, a1), add: start > 0)
            }
            start += n
        }
    }
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 matrix of any ``TileKind`` (tiles of `tileBytes`, `blocks` per group), all
/// `batch` tokens of 16-bit activations (`quants`, per-32-column `scales` and `sums`).
@inline(never)
public func hearthQuantizedMatMul16AVX2(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ quants: UnsafePointer<Int16>, _ scales: UnsafePointer<Float>, _ sums: UnsafePointer<Float>, _ cols: Int,
    _ batch: Int, _ groupStart: Int, _ groupEnd: Int, _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    withUnsafeTemporaryAllocation(of: SIMD4<Int64>.self, capacity: 32 * chunkUnits) { buffer in
      withUnsafeTemporaryAllocation(of: UnitFactors.self, capacity: chunkUnits) { factorBuffer in
        guard let unpacked = buffer.baseAddress, let factors = factorBuffer.baseAddress else { return }
        let groups = groupStart..<groupEnd
        // One inlined copy per kind, the kind a constant in each.
        @_transparent func run(_ k: Int32) {
            wideKernel(kind: k, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants, scales: scales,
                       sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, unpacked: unpacked, factors: factors)
        }
        withConstantTileKind(kind, run)
      }
    }
}

/// 16-bit activation quantization (``quantizeActivationRows16``) compiled for AVX2.
@inline(never)
public func hearthQuantizeActivations16AVX2(
    _ x: UnsafePointer<Float>, rowStart: Int, rowEnd: Int, cols: Int, quants: UnsafeMutablePointer<Int16>,
    scales: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>
) {
    quantizeActivationRows16(x, rows: rowStart..<rowEnd, cols: cols, quants: quants, scales: scales, sums: sums)
}
#endif
