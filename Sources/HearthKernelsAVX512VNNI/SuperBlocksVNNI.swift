#if arch(x86_64)
import CHearthCPU
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// The `amx` level's K-quant product over 256-column activation super-blocks for a few tokens
// (batches under 16, where decoding the weights into tile operands would cost more than the
// products): the same integer sums and float steps as AMXSuperBlocks.swift, so a token gets the
// same bits whatever its batch. Per sub-block (32 columns) the unsigned quants are multiplied
// in registers with `vpdpbusd` (q6_K: per 16 columns, less 32·Σa of the half), the sums scaled
// by the sub-block scales in integers (`vpmulld`) and added over the super-block; then, per
// super-block, the mins against the activations' 32-column sums (`vpdpwssd`) and the one float
// step y += (d·S − dmin·M)·D.

/// One 16-row group for `count` tokens (a constant, 1…4) from token `t`.
@_transparent
private func superGroupTokens(
    _ kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, g: Int, t: Int, count: Int,
    quants: UnsafePointer<Int8>, scales: UnsafePointer<Float>, sums: UnsafePointer<Int16>,
    halfSums: UnsafePointer<Int16>, cols: Int, y: UnsafeMutablePointer<Float>, ldy: Int, valid: Int
) {
    let q6 = kind == TileKind.q6_K
    var acc0 = SIMD16<Float>(), acc1 = SIMD16<Float>(), acc2 = SIMD16<Float>(), acc3 = SIMD16<Float>()
    let zero = _mm512_setzero_si512()
    for sb in 0..<blocks {
        let tile = tiles + (g &* blocks &+ sb) &* tileBytes
        hearth_prefetch(tile + tileBytes, tileBytes)
        var s0 = zero, s1 = zero, s2 = zero, s3 = zero
        for u in 0..<8 {
            @_transparent func rowScales(_ offset: Int, signed: Bool) -> SIMD8<Int64> {
                let bytes = _mm_loadu_si128((tile + offset).assumingMemoryBound(to: SIMD2<Int64>.self))
                return signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes)
            }
            let scLow = q6 ? rowScales(KTile.q6Scales &+ 32 &* u, signed: true) : rowScales(KTile.kScales &+ 16 &* u, signed: false)
            let scHigh = q6 ? rowScales(KTile.q6Scales &+ 32 &* u &+ 16, signed: true) : scLow
            let v0 = weightVector(kind, tile, u, 0), v1 = weightVector(kind, tile, u, 1)
            let v2 = weightVector(kind, tile, u, 2), v3 = weightVector(kind, tile, u, 3)
            let v4 = weightVector(kind, tile, u, 4), v5 = weightVector(kind, tile, u, 5)
            let v6 = weightVector(kind, tile, u, 6), v7 = weightVector(kind, tile, u, 7)
            @_transparent func token(_ k: Int, _ s: inout SIMD8<Int64>) {
                let token = t &+ k
                let a = UnsafeRawPointer(quants + (token &* cols &+ 256 &* sb &+ 32 &* u))
                @_transparent func at(_ m: Int) -> SIMD8<Int64> {
                    _mm512_set1_epi32((a + 4 &* m).assumingMemoryBound(to: Int32.self).pointee)
                }
                var low = _mm512_dpbusd_epi32(zero, v0, at(0))
                low = _mm512_dpbusd_epi32(low, v1, at(1))
                low = _mm512_dpbusd_epi32(low, v2, at(2))
                low = _mm512_dpbusd_epi32(low, v3, at(3))
                var high = _mm512_dpbusd_epi32(zero, v4, at(4))
                high = _mm512_dpbusd_epi32(high, v5, at(5))
                high = _mm512_dpbusd_epi32(high, v6, at(6))
                high = _mm512_dpbusd_epi32(high, v7, at(7))
                if q6 {
                    let half = halfSums + (token &* (cols / 16) &+ 16 &* sb &+ 2 &* u)
                    low = _mm512_sub_epi32(low, _mm512_set1_epi32(32 &* Int32(half[0])))
                    high = _mm512_sub_epi32(high, _mm512_set1_epi32(32 &* Int32(half[1])))
                    s = _mm512_add_epi32(s, _mm512_add_epi32(_mm512_mullo_epi32(low, scLow), _mm512_mullo_epi32(high, scHigh)))
                } else {
                    s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_add_epi32(low, high), scLow))
                }
            }
            token(0, &s0)
            if count > 1 { token(1, &s1) }
            if count > 2 { token(2, &s2) }
            if count > 3 { token(3, &s3) }
        }
        let d = _mm512_cvtph_ps(_mm256_loadu_si256(tile.assumingMemoryBound(to: SIMD4<Int64>.self)))
        var dmin = SIMD16<Float>(), m0 = zero, m1 = zero, m2 = zero, m3 = zero
        if !q6 {
            dmin = _mm512_cvtph_ps(_mm256_loadu_si256((tile + KTile.kDmin).assumingMemoryBound(to: SIMD4<Int64>.self)))
            @_transparent func mins(_ j: Int) -> SIMD8<Int64> {
                _mm512_cvtepu8_epi32(_mm_loadu_si128((tile + (KTile.kMins &+ 16 &* j)).assumingMemoryBound(to: SIMD2<Int64>.self)))
            }
            m0 = _mm512_or_si512(mins(0), _mm512_slli_epi32(mins(1), 16))
            m1 = _mm512_or_si512(mins(2), _mm512_slli_epi32(mins(3), 16))
            m2 = _mm512_or_si512(mins(4), _mm512_slli_epi32(mins(5), 16))
            m3 = _mm512_or_si512(mins(6), _mm512_slli_epi32(mins(7), 16))
        }
        @_transparent func flush(_ k: Int, _ s: SIMD8<Int64>, _ acc: inout SIMD16<Float>) {
            let token = t &+ k
            var v = _mm512_cvtepi32_ps(s) * d
            if !q6 {
                let pairs = sums + (token &* (cols / 32) &+ 8 &* sb)
                @_transparent func pairAt(_ p: Int) -> SIMD8<Int64> {
                    let low = Int32(UInt16(bitPattern: pairs[2 &* p])), high = Int32(pairs[2 &* p &+ 1])
                    return _mm512_set1_epi32(low | high << 16)
                }
                var mSum = _mm512_dpwssd_epi32(zero, m0, pairAt(0))
                mSum = _mm512_dpwssd_epi32(mSum, m1, pairAt(1))
                mSum = _mm512_dpwssd_epi32(mSum, m2, pairAt(2))
                mSum = _mm512_dpwssd_epi32(mSum, m3, pairAt(3))
                v = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(mSum), v)
            }
            acc = _mm512_fmadd_ps(v, SIMD16<Float>(repeating: scales[token &* (cols / 256) &+ sb]), acc)
        }
        flush(0, s0, &acc0)
        if count > 1 { flush(1, s1, &acc1) }
        if count > 2 { flush(2, s2, &acc2) }
        if count > 3 { flush(3, s3, &acc3) }
    }
    @_transparent func store(_ k: Int, _ acc: SIMD16<Float>) {
        let out = y + ((t &+ k) &* ldy &+ g &* 16)
        if valid == 16 {
            _mm512_storeu_ps(UnsafeMutableRawPointer(out), acc)
        } else {
            for j in 0..<valid { out[j] = acc[j] }
        }
    }
    store(0, acc0)
    if count > 1 { store(1, acc1) }
    if count > 2 { store(2, acc2) }
    if count > 3 { store(3, acc3) }
}

/// ``hearthSuperBlockMatMulAMX`` in registers, for a few tokens (the `amx` level runs it for
/// batches under 16): the same arguments (plus `halfSums`, Σq per 16 columns), the same integer
/// sums and float steps, so the same bits. Tokens go four at a time over each group (each
/// weight vector decoded once for the four).
@inline(never)
public func hearthSuperBlockMatMulAVX512VNNI(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ quants: UnsafePointer<Int8>, _ scales: UnsafePointer<Float>, _ sums: UnsafePointer<Int16>,
    _ halfSums: UnsafePointer<Int16>, _ cols: Int, _ batch: Int, _ groupStart: Int, _ groupEnd: Int,
    _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    @_transparent func run(_ k: Int32) {
        for g in groupStart..<groupEnd {
            let valid = rows - g * 16 < 16 ? rows - g * 16 : 16
            var t = 0
            @_transparent func pass(_ count: Int) {
                superGroupTokens(
                    k, tiles: tiles, tileBytes: tileBytes, blocks: blocks, g: g, t: t, count: count, quants: quants,
                    scales: scales, sums: sums, halfSums: halfSums, cols: cols, y: y, ldy: ldy, valid: valid)
            }
            while t + 4 <= batch {
                pass(4)
                t += 4
            }
            switch batch - t {
            case 3: pass(3)
            case 2: pass(2)
            case 1: pass(1)
            default: break
            }
        }
    }
    switch kind {
    case TileKind.q4_K: run(TileKind.q4_K)
    case TileKind.q5_K: run(TileKind.q5_K)
    default: run(TileKind.q6_K)
    }
}
#endif
