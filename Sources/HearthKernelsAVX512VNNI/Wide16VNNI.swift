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

/// The 16 row sums (as floats) of two `vpdpwssd` accumulators with two lanes per row.
@_transparent
private func rowSums(_ lo: SIMD8<Int64>, _ hi: SIMD8<Int64>) -> SIMD16<Float> {
    let evenLanes = SIMD16<Int32>(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
    let even = unsafeBitCast(evenLanes, to: SIMD8<Int64>.self)
    let odd = unsafeBitCast(evenLanes &+ 1, to: SIMD8<Int64>.self)
    let sum = _mm512_add_epi32(_mm512_permutex2var_epi32(lo, even, hi), _mm512_permutex2var_epi32(lo, odd, hi))
    return _mm512_cvtepi32_ps(sum)
}

/// Sixteen bytes at `p` as sixteen floats (unsigned or signed).
@_transparent
private func floats16(_ p: UnsafeRawPointer, signed: Bool) -> SIMD16<Float> {
    // The intrinsic load: a generic `loadUnaligned` was left out of line in these big kernels.
    let bytes = _mm_loadu_si128(p.assumingMemoryBound(to: SIMD2<Int64>.self))
    return _mm512_cvtepi32_ps(signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes))
}

/// The per-row factors of unit `u`: y += d_a·(d·(Σ − zero·Σa) + m·Σa), with for q6_K a second
/// d for the unit's upper 16 columns (vectors 4–7).
private struct UnitFactors {
    var d: SIMD16<Float>
    var dHigh: SIMD16<Float>
    var m: SIMD16<Float>
}

@_transparent
private func unitFactors(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int) -> UnitFactors {
    @inline(__always) func halves(_ offset: Int) -> SIMD16<Float> {
        _mm512_cvtph_ps(tile.loadUnaligned(fromByteOffset: offset, as: SIMD4<Int64>.self))
    }
    let d = halves(0)
    switch kind {
    case TileKind.q4_1, TileKind.q8_a, TileKind.q5_1:
        return UnitFactors(d: d, dHigh: d, m: halves(32))
    case TileKind.q4_K, TileKind.q5_K:
        let scaled = d * floats16(tile + KTile.kScales + 16 * u, signed: false)
        let mins = -halves(KTile.kDmin) * floats16(tile + KTile.kMins + 16 * u, signed: false)
        return UnitFactors(d: scaled, dHigh: scaled, m: mins)
    case TileKind.q6_K:
        let sc = tile + KTile.q6Scales + 32 * u
        return UnitFactors(d: d * floats16(sc, signed: true), dHigh: d * floats16(sc + 16, signed: true), m: SIMD16<Float>())
    default:
        return UnitFactors(d: d, dHigh: d, m: SIMD16<Float>())
    }
}

/// d_a·(d·(Σ − zero·Σa) + m·Σa) for 16 rows from the accumulators of one unit (or q6_K half).
@_transparent
private func contribution(
    _ kind: Int32, _ lo: SIMD8<Int64>, _ hi: SIMD8<Int64>, _ d: SIMD16<Float>, _ m: SIMD16<Float>, _ da: Float, _ sa: Float
) -> SIMD16<Float> {
    let hasMin = kind == TileKind.q4_1 || kind == TileKind.q8_a || kind == TileKind.q5_1 || kind == TileKind.q4_K
        || kind == TileKind.q5_K
    let zero: Float = kind == TileKind.q4_0 ? 8 : kind == TileKind.q5_0 ? 16 : 0
    var r = rowSums(lo, hi)
    if zero != 0 { r = r - SIMD16<Float>(repeating: zero * sa) }
    var v = d * r
    if hasMin { v = _mm512_fmadd_ps(m, SIMD16<Float>(repeating: sa), v) }
    return v * SIMD16<Float>(repeating: da)
}

/// One unit's contribution for one token; weights decoded from `tile` in registers (non-nil)
/// or read from `buffered` (eight decoded vectors in L1).
@_transparent
private func unitProduct(
    _ kind: Int32, _ f: UnitFactors, _ a: UnsafePointer<Int16>, _ da: Float, _ sa: Float, tile: UnsafeRawPointer?,
    unit u: Int, buffered: UnsafePointer<WidePair>
) -> SIMD16<Float> {
    var lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512()
    for m in 0..<4 {
        let w = tile != nil ? decodeWide(kind, tile.unsafelyUnwrapped, u, m) : buffered[m]
        let b = broadcast(a + 4 * m)
        lo = _mm512_dpwssd_epi32(lo, w.lo, b)
        hi = _mm512_dpwssd_epi32(hi, w.hi, b)
    }
    var v = SIMD16<Float>()
    if kind == TileKind.q6_K {
        v = contribution(kind, lo, hi, f.d, f.m, da, sa)
        lo = _mm512_setzero_si512()
        hi = _mm512_setzero_si512()
    }
    for m in 4..<8 {
        let w = tile != nil ? decodeWide(kind, tile.unsafelyUnwrapped, u, m) : buffered[m]
        let b = broadcast(a + 4 * m)
        lo = _mm512_dpwssd_epi32(lo, w.lo, b)
        hi = _mm512_dpwssd_epi32(hi, w.hi, b)
    }
    return v + contribution(kind, lo, hi, kind == TileKind.q6_K ? f.dHigh : f.d, f.m, da, sa)
}

/// out[0..<valid] (+)= the 16 row values.
@_transparent
private func storeRows(_ out: UnsafeMutablePointer<Float>, _ valid: Int, _ v: SIMD16<Float>, add: Bool) {
    if valid == 16 {
        let p = UnsafeMutableRawPointer(out)
        let old = add ? p.loadUnaligned(as: SIMD16<Float>.self) : SIMD16<Float>()
        p.storeBytes(of: old + v, as: SIMD16<Float>.self)
        return
    }
    for r in 0..<valid { out[r] = add ? out[r] + v[r] : v[r] }
}

/// Units decoded into L1 at once for a batch (16 units × 8 vectors × 128 bytes = 16 KiB).
private let chunkUnits = 16

@_transparent
private func wideKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, quants: UnsafePointer<Int16>,
    scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int, wide: UnsafeMutablePointer<WidePair>, factors: UnsafeMutablePointer<UnitFactors>
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
                f0 += unitProduct(
                    kind, unitFactors(kind, tile, u), quants + 32 * ab, scales[ab], sums[ab], tile: tile, unit: u,
                    buffered: wide)
                ab += 1
                if ab == totalUnits { break }
                let tile1 = tiles + (g * blocks + ab / units) * tileBytes, u1 = ab % units
                f1 += unitProduct(
                    kind, unitFactors(kind, tile1, u1), quants + 32 * ab, scales[ab], sums[ab], tile: tile1, unit: u1,
                    buffered: wide)
                ab += 1
            }
            storeRows(y + g * 16, valid, f0 + f1, add: false)
            continue
        }
        var start = 0
        while start < totalUnits {
            let n = totalUnits - start < chunkUnits ? totalUnits - start : chunkUnits
            for k in 0..<n {
                let ab = start + k
                let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
                factors[k] = unitFactors(kind, tile, u)
                for m in 0..<8 { wide[8 * k + m] = decodeWide(kind, tile, u, m) }
            }
            var t = 0
            while t + 2 <= batch {
                var a = SIMD16<Float>(), b = SIMD16<Float>()
                for k in 0..<n {
                    let ab = start + k, f = factors[k], w = wide + 8 * k
                    let i = t * actBlocks + ab, j = i + actBlocks
                    a += unitProduct(kind, f, quants + t * cols + 32 * ab, scales[i], sums[i], tile: nil, unit: 0, buffered: w)
                    b += unitProduct(kind, f, quants + (t + 1) * cols + 32 * ab, scales[j], sums[j], tile: nil, unit: 0, buffered: w)
                }
                storeRows(y + t * ldy + g * 16, valid, a, add: start > 0)
                storeRows(y + (t + 1) * ldy + g * 16, valid, b, add: start > 0)
                t += 2
            }
            if t < batch {
                var a = SIMD16<Float>()
                for k in 0..<n {
                    let ab = start + k, i = t * actBlocks + ab
                    a += unitProduct(kind, factors[k], quants + t * cols + 32 * ab, scales[i], sums[i], tile: nil, unit: 0, buffered: wide + 8 * k)
                }
                storeRows(y + t * ldy + g * 16, valid, a, add: start > 0)
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
    withUnsafeTemporaryAllocation(of: WidePair.self, capacity: 8 * chunkUnits) { buffer in
      withUnsafeTemporaryAllocation(of: UnitFactors.self, capacity: chunkUnits) { factorBuffer in
        guard let wide = buffer.baseAddress, let factors = factorBuffer.baseAddress else { return }
        let groups = groupStart..<groupEnd
        // Written out per kind so that each call inlines a copy with the kind a constant.
        switch kind {
        case TileKind.q4_0:
            wideKernel(kind: TileKind.q4_0, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        case TileKind.q4_1:
            wideKernel(kind: TileKind.q4_1, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        case TileKind.q8_0:
            wideKernel(kind: TileKind.q8_0, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        case TileKind.q8_a:
            wideKernel(kind: TileKind.q8_a, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        case TileKind.q5_0:
            wideKernel(kind: TileKind.q5_0, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        case TileKind.q5_1:
            wideKernel(kind: TileKind.q5_1, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        case TileKind.q4_K:
            wideKernel(kind: TileKind.q4_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        case TileKind.q5_K:
            wideKernel(kind: TileKind.q5_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        default:
            wideKernel(kind: TileKind.q6_K, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants,
                       scales: scales, sums: sums, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy, wide: wide, factors: factors)
        }
      }
    }
}
#endif
