#if arch(x86_64)
import CHearthCPU
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// The `amx` level's 8-bit product for the K-quants (q4_K, q5_K, q6_K) with activations in
// 256-column super-blocks (one scale D per token and super-block, HearthKernels'
// `QuantizedActivations.superQuants`): the sub-block scales are applied in integers, so each
// token, row and super-block ends in one exact integer sum and one float step — where the
// per-32-column form (AMXTiles.swift) needs 8 (q6_K: 16) float steps, each behind a tile store.
//
// Per super-block, row r and token t:
//   q6_K:        S = Σ_c a_c·sc_j(c)·(q_c − 32)                       y += (d·S)·D
//   q4_K, q5_K:  S = Σ_c a_c·sc_j(c)·q_c,  M = Σ_j m_j·A_j             y += (d·S − dmin·M)·D
// with a the token's 8-bit quants, A_j their sum over sub-block j (32 columns), sc, m, d, dmin
// the tile's sub-block scales, mins and row factors. The weights w' = sc·q (or sc·(q − 32)),
// |w'| ≤ 4096, are decoded once per token block into two byte planes, w' = 128·hi + lo with
// lo in 0…127 and hi in −32…32, and each plane is one `tdpbssd` operand: S = 128·S_hi + S_lo,
// exact in int32 (|S| ≤ 127·4096·256 < 2³¹), as is M (by `vpdpwssd` on the mins and the
// activation sums as 16-bit pairs). The float steps are fixed (`v = d·float(S)`,
// `v = v − dmin·float(M)` fused, `y = y + v·D` fused), so HearthKernels' scalar reference
// (`superBlockMatMulReference`) gives the same bits.
//
// Per worker call (its 16-row groups), per block of tokens: the block's activations are copied
// tile by tile (``fillSuperPanel``, 64 columns per tile row); each group is decoded once
// (``SuperGroup``) and run against two token tiles at a time (four accumulator tiles: two token
// tiles × two planes), a token tile left over alone; the products of one super-block are issued
// while the previous one's stored tiles are flushed.

/// A group's decoded super-blocks: per super-block four 64-column chunks, each the hi plane's
/// weight tile (16 rows of 64 bytes: row k holds columns 4k…4k + 3 of the 16 weight rows) then
/// the lo plane's (``chunkBytes`` = 2 KiB), then d and dmin as 16 floats each and four vectors
/// of the mins as 16-bit pairs (lane r: m_2p of row r, m_2p+1 above it).
private enum SuperGroup {
    static let chunkBytes = 2048
    static let d = 8192, dmin = 8256, mins = 8320
    static let bytes = 8576

    /// The 16-bit lanes of a vector of 16 row scales, each row's twice (lanes 2r and 2r + 1).
    @_transparent
    static func rowScales(_ p: UnsafeRawPointer, signed: Bool) -> SIMD8<Int64> {
        let bytes = _mm_loadu_si128(p.assumingMemoryBound(to: SIMD2<Int64>.self))
        let wide = signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes)
        let low = _mm512_and_si512(wide, _mm512_set1_epi32(0xffff))
        return _mm512_or_si512(low, _mm512_slli_epi32(low, 16))
    }

    /// Decodes every super-block of group `g` into `copy`.
    @_transparent
    static func decode(
        _ kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, g: Int, into copy: UnsafeMutableRawPointer
    ) {
        let q6 = kind == TileKind.q6_K
        let byteMask = _mm512_set1_epi16(0xff), lowMask = _mm512_set1_epi16(0x7f), zero = _mm512_set1_epi16(32)
        for sb in 0..<blocks {
            let tile = tiles + (g * blocks + sb) * tileBytes
            hearth_prefetch(tile + tileBytes, tileBytes)
            let out = copy + sb * bytes
            for u in 0..<8 {
                let chunk = out + (u >> 1) * chunkBytes + (u & 1) * 512
                let low = q6 ? rowScales(tile + KTile.q6Scales + 32 * u, signed: true)
                    : rowScales(tile + KTile.kScales + 16 * u, signed: false)
                let high = q6 ? rowScales(tile + KTile.q6Scales + 32 * u + 16, signed: true) : low
                for m in 0..<8 {
                    let v = weightVector(kind, tile, u, m)
                    let sc = m < 4 ? low : high
                    var even = _mm512_and_si512(v, byteMask), odd = _mm512_srli_epi16(v, 8)
                    if q6 {
                        even = _mm512_sub_epi16(even, zero)
                        odd = _mm512_sub_epi16(odd, zero)
                    }
                    let we = _mm512_mullo_epi16(even, sc), wo = _mm512_mullo_epi16(odd, sc)
                    let lo = _mm512_or_si512(_mm512_and_si512(we, lowMask), _mm512_slli_epi16(_mm512_and_si512(wo, lowMask), 8))
                    let hi = _mm512_or_si512(
                        _mm512_and_si512(_mm512_srai_epi16(we, 7), byteMask), _mm512_slli_epi16(_mm512_srai_epi16(wo, 7), 8))
                    _mm512_storeu_si512(chunk + 64 * m, hi)
                    _mm512_storeu_si512(chunk + 1024 + 64 * m, lo)
                }
            }
            let d = _mm512_cvtph_ps(_mm256_loadu_si256(tile.assumingMemoryBound(to: SIMD4<Int64>.self)))
            _mm512_storeu_ps(out + self.d, d)
            if q6 {
                _mm512_storeu_ps(out + dmin, SIMD16<Float>())
            } else {
                let dm = _mm512_cvtph_ps(_mm256_loadu_si256((tile + KTile.kDmin).assumingMemoryBound(to: SIMD4<Int64>.self)))
                _mm512_storeu_ps(out + dmin, dm)
                for p in 0..<4 {
                    @_transparent func mins(_ j: Int) -> SIMD8<Int64> {
                        _mm512_cvtepu8_epi32(_mm_loadu_si128((tile + KTile.kMins + 16 * j).assumingMemoryBound(to: SIMD2<Int64>.self)))
                    }
                    let pair = _mm512_or_si512(mins(2 * p), _mm512_slli_epi32(mins(2 * p + 1), 16))
                    _mm512_storeu_si512(out + self.mins + 64 * p, pair)
                }
            }
        }
    }
}

/// Loads a tile configuration (palette 1) for `tokens` rows of activations (1…16), 64 columns
/// per multiply: tiles 0, 1, 6, 7 the accumulators (tokens × 16 int32), 2, 3 the activations
/// (tokens × 64 bytes), 4, 5 the weight planes (16 rows of 64 bytes).
@_transparent
private func configureSuperTiles(_ config: UnsafeMutableRawPointer, tokens: Int) {
    config.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
    config.storeBytes(of: 1, as: UInt8.self)
    @_transparent func tile(_ i: Int, rows: Int) {
        config.storeBytes(of: UInt16(64), toByteOffset: 16 + 2 * i, as: UInt16.self)
        config.storeBytes(of: UInt8(rows), toByteOffset: 48 + i, as: UInt8.self)
    }
    tile(0, rows: tokens); tile(1, rows: tokens); tile(2, rows: tokens); tile(3, rows: tokens)
    tile(6, rows: tokens); tile(7, rows: tokens)
    tile(4, rows: 16); tile(5, rows: 16)
    hearth_amx_configure(UnsafeRawPointer(config))
}

/// Copies the super-block quants of tokens `first..<end` into `panel`: per 16 tokens and 64
/// columns, the 16 rows' 64 bytes side by side (an activation tile, rows 64 bytes apart).
@_transparent
private func fillSuperPanel(_ panel: UnsafeMutableRawPointer, quants: UnsafePointer<Int8>, cols: Int, first: Int, end: Int) {
    let chunks = cols / 64
    for t in first..<end {
        let tile = (t - first) / 16, r = (t - first) % 16
        let src = UnsafeRawPointer(quants + t * cols), dst = panel + tile * chunks * 1024 + 64 * r
        for c in 0..<chunks {
            _mm512_storeu_si512(dst + 1024 * c, _mm512_loadu_si512(src + 64 * c))
        }
    }
}

/// One or two token tiles (`pair`, a constant; tokens t…t + n − 1 and, paired, t + 16…t + 31) of
/// `n` rows (16 when paired) against group `g`'s decoded super-blocks in `copy`. `work` (16 KiB
/// + 2 KiB, 64-byte aligned): two sets of the four stored accumulator tiles, then the tokens'
/// float sums. Writes y[(t + r)·ldy + 16g …] for the `valid` weight rows.
@_transparent
private func superTiles(
    _ kind: Int32, pair: Bool, n: Int, t: Int, g: Int, blocks: Int, copy: UnsafeRawPointer, panel0: UnsafeRawPointer,
    panel1: UnsafeRawPointer, scales: UnsafePointer<Float>, sums: UnsafePointer<Int16>, cols: Int,
    work: UnsafeMutableRawPointer, y: UnsafeMutablePointer<Float>, ldy: Int, valid: Int
) {
    let acc = (work + 16384).assumingMemoryBound(to: SIMD16<Float>.self)
    let tokenTiles = pair ? 2 : 1
    for i in 0..<(16 * tokenTiles) { acc[i] = SIMD16<Float>() }
    let q6 = kind == TileKind.q6_K, subBlocks = cols / 32
    /// Super-block `sb`'s products into tiles 0 (first token tile, hi), 1 (its lo), 6, 7 (second).
    @_transparent func issue(_ sb: Int) {
        hearth_amx_zero0(); hearth_amx_zero1()
        if pair { hearth_amx_zero6(); hearth_amx_zero7() }
        let weights = copy + sb &* SuperGroup.bytes
        for c in 0..<4 {
            let column = (4 &* sb &+ c) &* 1024
            hearth_amx_load2(panel0 + column, 64)
            hearth_amx_load4(weights + c &* SuperGroup.chunkBytes, 64)
            hearth_amx_load5(weights + (c &* SuperGroup.chunkBytes &+ 1024), 64)
            if pair { hearth_amx_load3(panel1 + column, 64) }
            hearth_amx_dot_ss_0_2_4(); hearth_amx_dot_ss_1_2_5()
            if pair { hearth_amx_dot_ss_6_3_4(); hearth_amx_dot_ss_7_3_5() }
        }
    }
    @_transparent func store(_ sb: Int) {
        let set = work + 8192 &* (sb & 1)
        hearth_amx_store0(set, 64); hearth_amx_store1(set + 1024, 64)
        if pair { hearth_amx_store6(set + 2048, 64); hearth_amx_store7(set + 3072, 64) }
    }
    /// Super-block `sb`'s stored tiles into the tokens' sums.
    @_transparent func flush(_ sb: Int) {
        let set = work + 8192 &* (sb & 1), weights = copy + sb &* SuperGroup.bytes
        let d = _mm512_loadu_ps(weights + SuperGroup.d), dmin = _mm512_loadu_ps(weights + SuperGroup.dmin)
        let m0 = _mm512_loadu_si512(weights + SuperGroup.mins), m1 = _mm512_loadu_si512(weights + (SuperGroup.mins + 64))
        let m2 = _mm512_loadu_si512(weights + (SuperGroup.mins + 128)), m3 = _mm512_loadu_si512(weights + (SuperGroup.mins + 192))
        for k in 0..<tokenTiles {
            let hiRows = set + 2048 &* k, loRows = hiRows + 1024
            let rows = k == 0 ? n : 16
            for r in 0..<rows {
                let token = t &+ 16 &* k &+ r
                let hi = _mm512_loadu_si512(hiRows + 64 &* r), lo = _mm512_loadu_si512(loRows + 64 &* r)
                let s = _mm512_add_epi32(_mm512_slli_epi32(hi, 7), lo)
                var v = _mm512_cvtepi32_ps(s) * d
                if !q6 {
                    let pairs = sums + (token &* subBlocks &+ 8 &* sb)
                    @_transparent func pairAt(_ p: Int) -> SIMD8<Int64> {
                        let low = Int32(UInt16(bitPattern: pairs[2 &* p])), high = Int32(pairs[2 &* p &+ 1])
                        return _mm512_set1_epi32(low | high << 16)
                    }
                    var mSum = _mm512_dpwssd_epi32(_mm512_setzero_si512(), m0, pairAt(0))
                    mSum = _mm512_dpwssd_epi32(mSum, m1, pairAt(1))
                    mSum = _mm512_dpwssd_epi32(mSum, m2, pairAt(2))
                    mSum = _mm512_dpwssd_epi32(mSum, m3, pairAt(3))
                    v = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(mSum), v)
                }
                let i = 16 &* k &+ r
                acc[i] = _mm512_fmadd_ps(v, SIMD16<Float>(repeating: scales[token &* (cols / 256) &+ sb]), acc[i])
            }
        }
    }
    issue(0)
    store(0)
    var sb = 1
    while sb < blocks {
        issue(sb)
        flush(sb &- 1)
        store(sb)
        sb = sb &+ 1
    }
    flush(blocks &- 1)
    for k in 0..<tokenTiles {
        for r in 0..<(k == 0 ? n : 16) {
            let out = y + ((t &+ 16 &* k &+ r) &* ldy &+ g &* 16)
            let sum = acc[16 &* k &+ r]
            if valid == 16 {
                _mm512_storeu_ps(UnsafeMutableRawPointer(out), sum)
            } else {
                for j in 0..<valid { out[j] = sum[j] }
            }
        }
    }
}

@_transparent
private func superKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, quants: UnsafePointer<Int8>,
    scales: UnsafePointer<Float>, sums: UnsafePointer<Int16>, cols: Int, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let fit = (1 << 20) / cols / 16 * 16
    let block = fit < 32 ? 32 : fit > 512 ? 512 : fit
    let copyBytes = blocks * SuperGroup.bytes, panelBytes = (block + 15) / 16 * 16 * cols
    // Pages of its own, returned when done: from the C heap, a MiB per worker and call stayed
    // resident in each worker's arena (13 MB more peak RSS on a Phi-3-mini Q5_K_M prompt).
    let scratchBytes = 64 + 18432 + copyBytes + panelBytes
    let mapped = hearth_map_scratch(UInt(scratchBytes))
    let scratch = mapped ?? UnsafeMutableRawPointer.allocate(byteCount: scratchBytes, alignment: 64)
    defer { if mapped != nil { hearth_unmap_scratch(scratch, UInt(scratchBytes)) } else { scratch.deallocate() } }
    let config = scratch, work = scratch + 64, copy = work + 18432, panel = copy + copyBytes
    configureSuperTiles(config, tokens: 16)
    var first = 0
    while first < batch {
        let end = first + block < batch ? first + block : batch
        fillSuperPanel(panel, quants: quants, cols: cols, first: first, end: end)
        @_transparent func panelOf(_ t: Int) -> UnsafeRawPointer { UnsafeRawPointer(panel + (t - first) / 16 * 16 * cols) }
        for g in groups {
            SuperGroup.decode(kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, g: g, into: copy)
            let valid = rows - g * 16 < 16 ? rows - g * 16 : 16
            var t = first
            while t + 32 <= end {
                superTiles(
                    kind, pair: true, n: 16, t: t, g: g, blocks: blocks, copy: UnsafeRawPointer(copy), panel0: panelOf(t),
                    panel1: panelOf(t + 16), scales: scales, sums: sums, cols: cols, work: work, y: y, ldy: ldy, valid: valid)
                t += 32
            }
            if t + 16 <= end {
                superTiles(
                    kind, pair: false, n: 16, t: t, g: g, blocks: blocks, copy: UnsafeRawPointer(copy), panel0: panelOf(t),
                    panel1: panelOf(t), scales: scales, sums: sums, cols: cols, work: work, y: y, ldy: ldy, valid: valid)
                t += 16
            }
            if t < end {
                // The block's last few tokens: tiles of fewer rows (the loads read only those).
                configureSuperTiles(config, tokens: end - t)
                superTiles(
                    kind, pair: false, n: end - t, t: t, g: g, blocks: blocks, copy: UnsafeRawPointer(copy),
                    panel0: panelOf(t), panel1: panelOf(t), scales: scales, sums: sums, cols: cols, work: work, y: y,
                    ldy: ldy, valid: valid)
                configureSuperTiles(config, tokens: 16)
            }
        }
        first = end
    }
    hearth_amx_release()
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 q4_K, q5_K or q6_K matrix (tiles of `tileBytes`, `blocks` super-blocks per
/// row), all `batch` tokens of 8-bit activations in 256-column super-blocks (`quants`,
/// row-major `cols` per token; `scales` D per token and super-block; `sums` Σq per token and 32
/// columns, 16-bit; HearthKernels' `QuantizedActivations.superQuants`), with AMX tiles: the
/// sub-block scales applied in integers, one float step per token, row and super-block (the
/// arithmetic at the top of this file).
///
/// Only at the `amx` kernel level: the CPU has AMX-INT8 and this process may use it.
@inline(never)
public func hearthSuperBlockMatMulAMX(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ quants: UnsafePointer<Int8>, _ scales: UnsafePointer<Float>, _ sums: UnsafePointer<Int16>, _ cols: Int,
    _ batch: Int, _ groupStart: Int, _ groupEnd: Int, _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    @_transparent func run(_ k: Int32) {
        superKernel(
            kind: k, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants, scales: scales,
            sums: sums, cols: cols, batch: batch, groups: groupStart..<groupEnd, y: y, ldy: ldy)
    }
    switch kind {
    case TileKind.q4_K: run(TileKind.q4_K)
    case TileKind.q5_K: run(TileKind.q5_K)
    default: run(TileKind.q6_K)
    }
}
#endif
