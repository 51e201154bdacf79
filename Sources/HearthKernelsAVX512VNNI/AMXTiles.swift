#if arch(x86_64)
import CHearthCPU
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// The `amx` level's 8-bit product for prompts: Intel AMX tiles (`tdpbssd`/`tdpbsud`) do the
// integer multiply-adds, 16 tokens × 16 weight rows × 32 columns per instruction, where the
// `vpdpbusd` kernels (AVX512VNNI.swift, Tiles8VNNI.swift) take 128 instructions. The arithmetic
// is theirs — the same 8-bit activation blocks and scales, the same integer sums per 32 columns
// (per 16 for q6_K) of the same stored weights, then the same float steps in the same order
// (``flushStep``) — so the two levels give the same bits; only the float work per token and
// unit is left to the vector unit.
//
// Called only at the `amx` level (HearthKernels' KernelLevel, after CPUID and the OS's consent);
// this module is built with the amx-tile and amx-int8 features for these functions alone (LLVM
// emits AMX instructions only for the tile operations of CHearthCPU's hearth_amx.h).
//
// Per worker call (its 16-row groups), per block of tokens: the block's activations are copied
// tile by tile (``fillPanel``); groups go in pairs, each decoded once into a copy (``AMXGroup``:
// the weight bytes as the tile operand wants them and the units' row factors); then two token
// tiles × two groups per piece (``tileQuad``), the tokens and a group left over one tile at a
// time (``tokenTile``); each accumulator tile is stored to L1 and flushed into the tokens'
// float sums.

/// A group's decoded units for the tile kernel: per unit eight 64-byte weight vectors (vector m:
/// weights 4m…4m+3 of the 16 rows — rows of a weight tile, `tdpbssd`'s operand layout) and the
/// unit's factors d, c, dHigh (``ByteUnitFactors``).
private enum AMXGroup {
    static let unitBytes = 768

    /// Whether the copy holds q − z as signed bytes (no offset term left): q4_0, q8_0 and q6_K,
    /// whose VNNI kernels also end on the exact signed sums (q8_0's and q4_0's as s − z·Σa in
    /// floats, exact in integers below 2²⁴). q5_0 keeps its unsigned bytes and the float offset
    /// term of its VNNI kernel, so that both levels round alike (below).
    @_transparent
    static func signed(_ kind: Int32) -> Bool {
        kind == TileKind.q4_0 || kind == TileKind.q8_0 || kind == TileKind.q6_K
    }

    /// The zero point as a byte (q8_0's 128 wraps to −128: subtracting it is adding 128).
    @_transparent
    static func zeroPoint(_ kind: Int32) -> Int8 {
        kind == TileKind.q4_0 ? 8 : kind == TileKind.q6_K ? 32 : -128
    }

    /// Decodes every unit of group `g` into `copy`.
    @_transparent
    static func decode(
        _ kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, units: Int, g: Int,
        into copy: UnsafeMutableRawPointer
    ) {
        let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
        let zero = _mm512_set1_epi8(zeroPoint(kind))
        for ab in 0..<(blocks * units) {
            hearth_prefetch(groupStart + ab * stride + prefetchDistance, stride)
            let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
            let unit = copy + ab * unitBytes
            @_transparent func put(_ m: Int) {
                let v = weightVector(kind, tile, u, m)
                _mm512_storeu_si512(unit + 64 * m, signed(kind) ? _mm512_sub_epi8(v, zero) : v)
            }
            put(0); put(1); put(2); put(3); put(4); put(5); put(6); put(7)
            let f = byteUnitFactors(kind, tile, u)
            _mm512_storeu_ps(unit + 512, f.d)
            _mm512_storeu_ps(unit + 576, f.c)
            _mm512_storeu_ps(unit + 640, f.dHigh)
        }
    }
}

/// Loads a tile configuration (palette 1) for `tokens` rows of activations (1…16) of `kBytes`
/// columns per multiply (32, or 16 for q6_K's halves): tiles 0–1 the accumulators (tokens × 16
/// int32) and 6–7 the second bank of them, 2–3 the activations (tokens × kBytes), 4–5 the
/// weights (kBytes/4 rows of 64 bytes).
@_transparent
private func configureTiles(_ config: UnsafeMutableRawPointer, tokens: Int, kBytes: Int) {
    config.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
    config.storeBytes(of: 1, as: UInt8.self)
    @_transparent func tile(_ i: Int, rows: Int, bytes: Int) {
        config.storeBytes(of: UInt16(bytes), toByteOffset: 16 + 2 * i, as: UInt16.self)
        config.storeBytes(of: UInt8(rows), toByteOffset: 48 + i, as: UInt8.self)
    }
    tile(0, rows: tokens, bytes: 64); tile(1, rows: tokens, bytes: 64)
    tile(6, rows: tokens, bytes: 64); tile(7, rows: tokens, bytes: 64)
    tile(2, rows: tokens, bytes: kBytes); tile(3, rows: tokens, bytes: kBytes)
    tile(4, rows: kBytes / 4, bytes: 64); tile(5, rows: kBytes / 4, bytes: 64)
    hearth_amx_configure(UnsafeRawPointer(config))
}

/// Tokens per block: the block's activation rows (`cols` bytes each) should stay in L2 while
/// every group of the worker runs through them, and each group's decoded copy serves all of them.
@_transparent
private func amxTokenBlock(cols: Int) -> Int {
    let fit = (1 << 20) / cols / 16 * 16
    return fit < 32 ? 32 : fit > 512 ? 512 : fit
}

/// One token's sums after one unit: `acc` + the unit's product, `c` its accumulator row as
/// floats (the integer sums; signed for q4_0, q8_0), `d`/`cf` the unit's row factors, `da` the
/// activation block's scale, `sa` its d_a·Σa and `raw` its Σa — in the float steps, and their
/// order, of the VNNI level's batch kernels, so both levels give a token the same bits (a token
/// must not depend on whether its batch was large enough for the tiles):
/// q4_0, q8_0 (Tiles8VNNI.swift): acc + (d·d_a)·s; q4_1, q8_a: (acc + (m·d_a)·Σa) + (d·d_a)·s;
/// the others (AVX512VNNI.swift's flush): (acc + d·(s·d_a)) + c·(d_a·Σa), no offset for q6_K.
@_transparent
private func flushStep(
    _ kind: Int32, _ acc: SIMD16<Float>, _ c: SIMD16<Float>, _ d: SIMD16<Float>, _ cf: SIMD16<Float>, _ da: Float,
    _ sa: Float, _ raw: Float
) -> SIMD16<Float> {
    let scale = SIMD16<Float>(repeating: da)
    if kind == TileKind.q4_0 || kind == TileKind.q8_0 { return _mm512_fmadd_ps(d * scale, c, acc) }
    if kind == TileKind.q4_1 || kind == TileKind.q8_a {
        return _mm512_fmadd_ps(d * scale, c, _mm512_fmadd_ps(cf * scale, SIMD16<Float>(repeating: raw), acc))
    }
    let sum = _mm512_fmadd_ps(d, c * scale, acc)
    return AMXGroup.signed(kind) ? sum : _mm512_fmadd_ps(cf, SIMD16<Float>(repeating: sa), sum)
}

/// q6_K's ``flushStep``: acc + (low·dLow + high·dHigh)·d_a, the two 16-column halves' sums as
/// floats — the VNNI kernel's flush of a q6_K unit, step for step.
@_transparent
private func halvesStep(
    _ acc: SIMD16<Float>, _ low: SIMD16<Float>, _ high: SIMD16<Float>, _ dLow: SIMD16<Float>, _ dHigh: SIMD16<Float>,
    _ da: Float
) -> SIMD16<Float> {
    _mm512_fmadd_ps(_mm512_fmadd_ps(high, dHigh, low * dLow), SIMD16<Float>(repeating: da), acc)
}

/// `n` tokens from `t` (n a constant: 16, or the block's last few) against group `g`'s decoded
/// units in `copy`, their activations the tile's panel (``fillPanel``); writes y[(t + r)·ldy + 16g …] for the `valid` rows. `work` (5 KiB, 64-byte
/// aligned): four accumulator tiles as stored, then the tokens' float sums.
///
/// The units go in steps (q6_K: one unit, its two halves; the other kinds: two units), each on
/// one bank of two accumulator tiles (0, 1 or 6, 7), the banks alternating: a step's products
/// are issued before the previous step's tiles are stored and flushed, so the tile unit works
/// while the vector unit converts and scales.
@_transparent
private func tokenTile(
    _ kind: Int32, n: Int, t: Int, g: Int, totalUnits: Int, copy: UnsafeRawPointer, panel a: UnsafeRawPointer,
    scales: UnsafePointer<Float>, scaledSums: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int,
    work: UnsafeMutableRawPointer, y: UnsafeMutablePointer<Float>, ldy: Int, valid: Int
) {
    let blocksA = cols / 32
    let rowScales = scales + t &* blocksA, rowSums = scaledSums + t &* blocksA, rowRawSums = sums + t &* blocksA
    let acc = (work + 4096).assumingMemoryBound(to: SIMD16<Float>.self)
    for r in 0..<n { acc[r] = SIMD16<Float>() }
    let half = kind == TileKind.q6_K, su = !AMXGroup.signed(kind)
    let steps = half ? totalUnits : (totalUnits + 1) / 2
    @_transparent func integer(_ p: UnsafeRawPointer, _ r: Int) -> SIMD16<Float> {
        _mm512_cvtepi32_ps(_mm512_loadu_si512(p + 64 &* r))
    }
    /// The products of step `s` into bank `bank` (a constant).
    @_transparent func issue(_ s: Int, _ bank: Int) {
        let first = half ? s : 2 &* s
        let unit = copy + first &* AMXGroup.unitBytes
        let two = !half && first &+ 1 < totalUnits
        if bank == 0 { hearth_amx_zero0() } else { hearth_amx_zero6() }
        if half || two { if bank == 0 { hearth_amx_zero1() } else { hearth_amx_zero7() } }
        if half {
            hearth_amx_load2(a + 512 &* first, 32)
            hearth_amx_load4(unit, 64)
            hearth_amx_load3(a + (512 &* first &+ 16), 32)
            hearth_amx_load5(unit + 256, 64)
        } else {
            hearth_amx_load2(a + 512 &* first, 32)
            hearth_amx_load4(unit, 64)
            if two {
                hearth_amx_load3(a + (512 &* first &+ 512), 32)
                hearth_amx_load5(unit + AMXGroup.unitBytes, 64)
            }
        }
        switch (bank, su) {
        case (0, false): hearth_amx_dot_ss_0_2_4()
        case (0, true): hearth_amx_dot_su_0_2_4()
        case (_, false): hearth_amx_dot_ss_6_2_4()
        default: hearth_amx_dot_su_6_2_4()
        }
        if half || two {
            switch (bank, su) {
            case (0, false): hearth_amx_dot_ss_1_3_5()
            case (0, true): hearth_amx_dot_su_1_3_5()
            case (_, false): hearth_amx_dot_ss_7_3_5()
            default: hearth_amx_dot_su_7_3_5()
            }
        }
    }
    /// acc(r) += d·(C(r)·d_a) [+ c·(d_a·Σa)] for unit `ab` from the accumulator tile at `p`.
    @_transparent func flush(_ p: UnsafeRawPointer, _ ab: Int) {
        let unit = copy + ab &* AMXGroup.unitBytes
        let d = _mm512_loadu_ps(unit + 512)
        let cf = _mm512_loadu_ps(unit + 576)
        for r in 0..<n {
            let i = r &* blocksA &+ ab
            acc[r] = flushStep(kind, acc[r], integer(p, r), d, cf, rowScales[i], rowSums[i], rowRawSums[i])
        }
    }
    /// Stores bank `bank`'s tiles and flushes step `s` into the sums.
    @_transparent func drain(_ s: Int, _ bank: Int) {
        let c0 = work + 2048 &* bank, c1 = c0 + 1024
        let first = half ? s : 2 &* s
        let two = !half && first &+ 1 < totalUnits
        if bank == 0 { hearth_amx_store0(c0, 64) } else { hearth_amx_store6(c0, 64) }
        if half || two { if bank == 0 { hearth_amx_store1(c1, 64) } else { hearth_amx_store7(c1, 64) } }
        if half {
            // The unit's lower and upper 16 columns, each with its rows' own scale.
            let unit = copy + first &* AMXGroup.unitBytes
            let dLow = _mm512_loadu_ps(unit + 512)
            let dHigh = _mm512_loadu_ps(unit + 640)
            for r in 0..<n {
                acc[r] = halvesStep(acc[r], integer(c0, r), integer(c1, r), dLow, dHigh, rowScales[r &* blocksA &+ first])
            }
        } else {
            flush(c0, first)
            if two { flush(c1, first &+ 1) }
        }
    }
    issue(0, 0)
    var s = 0
    while s < steps {
        if s &+ 1 < steps { issue(s &+ 1, 1) }
        drain(s, 0)
        if s &+ 1 < steps {
            if s &+ 2 < steps { issue(s &+ 2, 0) }
            drain(s &+ 1, 1)
        }
        s = s &+ 2
    }
    for r in 0..<n {
        let out = y + ((t &+ r) &* ldy &+ g &* 16)
        if valid == 16 {
            _mm512_storeu_ps(UnsafeMutableRawPointer(out), acc[r])
        } else {
            for k in 0..<valid { out[k] = acc[r][k] }
        }
    }
}

/// Two full token tiles (`t`, `t` + 16) against two groups (`g`, `g` + 1; decoded in `copy0`,
/// `copy1`): the four accumulator tiles 0 (tokens t…, group g), 1 (t…, g + 1), 6 (t + 16…, g)
/// and 7 (t + 16…, g + 1), from two activation tiles and two weight tiles per piece — a unit
/// (q6_K: half a unit) — so each tile loaded serves two products. `work` (24 KiB, 64-byte
/// aligned): the four tiles' float sums, then two sets of stored accumulator tiles.
///
/// Software-pipelined: a piece's products are issued, the previous unit's stored tiles flushed
/// (converted and scaled by the vector unit while the tile unit multiplies), then the piece's
/// tiles stored into the other set. (Before this, the activation tile of the next products had
/// to wait for the previous products to finish reading it, each round.)
@_transparent
private func tileQuad(
    _ kind: Int32, t: Int, g: Int, totalUnits: Int, copy0: UnsafeRawPointer, copy1: UnsafeRawPointer,
    panel0: UnsafeRawPointer, panel1: UnsafeRawPointer, scales: UnsafePointer<Float>,
    scaledSums: UnsafePointer<Float>, rawSums: UnsafePointer<Float>, cols: Int, work: UnsafeMutableRawPointer,
    y: UnsafeMutablePointer<Float>,
    ldy: Int, valid1: Int
) {
    let blocksA = cols / 32
    let acc = work.assumingMemoryBound(to: SIMD16<Float>.self)
    for i in 0..<64 { acc[i] = SIMD16<Float>() }
    let sets = work + 4096
    let half = kind == TileKind.q6_K, su = !AMXGroup.signed(kind)
    let perUnit = half ? 2 : 1, pieces = totalUnits &* perUnit
    @_transparent func integer(_ p: UnsafeRawPointer, _ r: Int) -> SIMD16<Float> {
        _mm512_cvtepi32_ps(_mm512_loadu_si512(p + 64 &* r))
    }
    /// Piece `p`'s products into tiles 0, 1, 6, 7.
    @_transparent func issue(_ p: Int) {
        let ab = half ? p >> 1 : p
        let column = half ? 512 &* ab &+ 16 &* (p & 1) : 512 &* ab
        let weights = half ? ab &* AMXGroup.unitBytes &+ 256 &* (p & 1) : ab &* AMXGroup.unitBytes
        hearth_amx_zero0(); hearth_amx_zero1(); hearth_amx_zero6(); hearth_amx_zero7()
        hearth_amx_load2(panel0 + column, 32)
        hearth_amx_load4(copy0 + weights, 64)
        hearth_amx_load5(copy1 + weights, 64)
        hearth_amx_load3(panel1 + column, 32)
        if su {
            hearth_amx_dot_su_0_2_4(); hearth_amx_dot_su_1_2_5(); hearth_amx_dot_su_6_3_4(); hearth_amx_dot_su_7_3_5()
        } else {
            hearth_amx_dot_ss_0_2_4(); hearth_amx_dot_ss_1_2_5(); hearth_amx_dot_ss_6_3_4(); hearth_amx_dot_ss_7_3_5()
        }
    }
    /// Piece `p`'s tiles into its unit's set (slots 0–3; q6_K's upper half 4–7).
    @_transparent func store(_ p: Int) {
        let ab = half ? p >> 1 : p
        let base = sets + 8192 &* (ab & 1) + (half ? 4096 &* (p & 1) : 0)
        hearth_amx_store0(base, 64); hearth_amx_store1(base + 1024, 64)
        hearth_amx_store6(base + 2048, 64); hearth_amx_store7(base + 3072, 64)
    }
    /// Slot `q` (token tile q >> 1, group q & 1) of unit `ab`'s set into its sums.
    @_transparent func flushSlot(_ ab: Int, _ q: Int) {
        let set = sets + 8192 &* (ab & 1)
        let unit = (q & 1 == 0 ? copy0 : copy1) + ab &* AMXGroup.unitBytes
        let tokenFirst: Int = t &+ 16 &* (q >> 1)
        let offset: Int = tokenFirst &* blocksA &+ ab
        let rowScales = scales + offset
        let sums = acc + 16 &* q
        let low = set + 1024 &* q
        let d = _mm512_loadu_ps(unit + 512)
        if half {
            let high = low + 4096
            let dHigh = _mm512_loadu_ps(unit + 640)
            for r in 0..<16 {
                sums[r] = halvesStep(sums[r], integer(low, r), integer(high, r), d, dHigh, rowScales[r &* blocksA])
            }
        } else {
            let cf = _mm512_loadu_ps(unit + 576)
            let rowSums = scaledSums + offset, rowRawSums = rawSums + offset
            for r in 0..<16 {
                let i = r &* blocksA
                sums[r] = flushStep(kind, sums[r], integer(low, r), d, cf, rowScales[i], rowSums[i], rowRawSums[i])
            }
        }
    }
    /// Part k of the flushes: unit k / perUnit, all four slots (q6_K: one token tile's two).
    @_transparent func flush(_ k: Int) {
        if half {
            let ab = k >> 1, tile = k & 1
            flushSlot(ab, 2 &* tile)
            flushSlot(ab, 2 &* tile &+ 1)
        } else {
            flushSlot(k, 0); flushSlot(k, 1); flushSlot(k, 2); flushSlot(k, 3)
        }
    }
    issue(0)
    store(0)
    var p = 0
    while p &+ 1 < pieces {
        issue(p &+ 1)
        // Part p + 1 − perUnit: its unit's pieces were all stored by the end of step p.
        if p &+ 1 >= perUnit { flush(p &+ 1 &- perUnit) }
        store(p &+ 1)
        p = p &+ 1
    }
    for k in (pieces - perUnit)..<pieces { flush(k) }
    for q in 0..<4 {
        let valid = q & 1 == 0 ? 16 : valid1
        let sums = acc + 16 &* q
        for r in 0..<16 {
            let token: Int = t &+ 16 &* (q >> 1) &+ r
            let column: Int = (g &+ (q & 1)) &* 16
            let out = y + (token &* ldy &+ column)
            if valid == 16 {
                _mm512_storeu_ps(UnsafeMutableRawPointer(out), sums[r])
            } else {
                for k in 0..<valid { out[k] = sums[r][k] }
            }
        }
    }
}

/// Copies the 8-bit activations of tokens `first..<end` into `panel` tile by tile: for each 16
/// tokens and each 32 columns, the 16 rows' 32 bytes side by side (512 bytes, an activation
/// tile's rows 32 bytes apart). Read from the row-major quants, a tile's rows lay `cols` bytes
/// apart — for 8192 columns all in one L1 set, evicting each other (the tile loads stalled).
@_transparent
private func fillPanel(_ panel: UnsafeMutableRawPointer, quants: UnsafePointer<Int8>, cols: Int, first: Int, end: Int) {
    let blocksA = cols / 32
    for t in first..<end {
        let tile = (t - first) / 16, r = (t - first) % 16
        let src = UnsafeRawPointer(quants + t * cols), dst = panel + tile * blocksA * 512 + 32 * r
        for b in 0..<blocksA {
            // Intrinsic loads and stores throughout: a generic `loadUnaligned` specialized and left
            // out of line would be compiled for this module's CPU under a standard-library name.
            let bytes = _mm256_loadu_si256((src + 32 * b).assumingMemoryBound(to: SIMD4<Int64>.self))
            _mm256_storeu_si256((dst + 512 * b).assumingMemoryBound(to: SIMD4<Int64>.self), bytes)
        }
    }
}

@_transparent
private func amxKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, quants: UnsafePointer<Int8>,
    scales: UnsafePointer<Float>, scaledSums: UnsafePointer<Float>, sums: UnsafePointer<Float>, cols: Int, batch: Int,
    groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let units = kind >= TileKind.q4_K ? 8 : 1
    let totalUnits = blocks * units
    let kBytes = kind == TileKind.q6_K ? 16 : 32
    let block = amxTokenBlock(cols: cols)
    // Scratch: the tile configuration, the work area of ``tileQuad`` and ``tokenTile``, two groups'
    // decoded copies, the block's activation panel.
    let copyBytes = totalUnits * AMXGroup.unitBytes, panelBytes = (block + 15) / 16 * (cols / 32) * 512
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: 64 + 24576 + 2 * copyBytes + panelBytes, alignment: 64)
    defer { scratch.deallocate() }
    let config = scratch, work = scratch + 64, copy = work + 24576, copy1 = copy + copyBytes
    let panel = copy1 + copyBytes
    configureTiles(config, tokens: 16, kBytes: kBytes)
    var first = 0
    while first < batch {
        let end = first + block < batch ? first + block : batch
        fillPanel(panel, quants: quants, cols: cols, first: first, end: end)
        var g = groups.lowerBound
        while g < groups.upperBound {
            // Groups in pairs (their copies side by side), a last one alone.
            let pair = g + 1 < groups.upperBound
            AMXGroup.decode(kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g, into: copy)
            if pair {
                AMXGroup.decode(kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: g + 1, into: copy1)
            }
            @_transparent func validRows(_ g: Int) -> Int { rows - g * 16 < 16 ? rows - g * 16 : 16 }
            @_transparent func panelOf(_ t: Int) -> UnsafeRawPointer {
                UnsafeRawPointer(panel + (t - first) / 16 * (cols / 32) * 512)
            }
            var t = first
            if pair {
                while t + 32 <= end {
                    tileQuad(
                        kind, t: t, g: g, totalUnits: totalUnits, copy0: UnsafeRawPointer(copy),
                        copy1: UnsafeRawPointer(copy1), panel0: panelOf(t), panel1: panelOf(t + 16), scales: scales,
                        scaledSums: scaledSums, rawSums: sums, cols: cols, work: work, y: y, ldy: ldy, valid1: validRows(g + 1))
                    t += 32
                }
            }
            // The tokens left (fewer than 32), one tile of 16 and the last few, group by group.
            let rest = t
            for k in 0..<(pair ? 2 : 1) {
                let group = g + k
                let groupCopy = UnsafeRawPointer(k == 0 ? copy : copy1)
                @_transparent func run(_ n: Int, _ t: Int) {
                    tokenTile(
                        kind, n: n, t: t, g: group, totalUnits: totalUnits, copy: groupCopy, panel: panelOf(t),
                        scales: scales, scaledSums: scaledSums, sums: sums, cols: cols, work: work, y: y, ldy: ldy,
                        valid: validRows(group))
                }
                t = rest
                while t + 16 <= end {
                    run(16, t)
                    t += 16
                }
                if t < end {
                    // The block's last few tokens: tiles of fewer rows (the loads read only those).
                    configureTiles(config, tokens: end - t, kBytes: kBytes)
                    run(end - t, t)
                    configureTiles(config, tokens: 16, kBytes: kBytes)
                }
            }
            g += pair ? 2 : 1
        }
        first = end
    }
    hearth_amx_release()
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 matrix of any ``TileKind`` (tiles of `tileBytes`, `blocks` per group), all
/// `batch` tokens of 8-bit activations (`quants`, row-major `cols` per token; per-32-column
/// `scales` d_a, `scaledSums` d_a·Σa and `sums` Σa, HearthKernels' `QuantizedActivations`), with
/// AMX tiles.
/// The same arithmetic as ``hearthQuantizedMatMul8AVX512VNNI`` and
/// ``hearthQuantizedMatMulAVX512VNNI``; for batches of 16 tokens and more.
///
/// Only at the `amx` kernel level: the CPU has AMX-INT8 and this process may use it.
@inline(never)
public func hearthQuantizedMatMulAMX(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ quants: UnsafePointer<Int8>, _ scales: UnsafePointer<Float>, _ scaledSums: UnsafePointer<Float>,
    _ sums: UnsafePointer<Float>, _ cols: Int,
    _ batch: Int, _ groupStart: Int, _ groupEnd: Int, _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    @_transparent func run(_ k: Int32) {
        amxKernel(
            kind: k, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants, scales: scales,
            scaledSums: scaledSums, sums: sums, cols: cols, batch: batch, groups: groupStart..<groupEnd, y: y, ldy: ldy)
    }
    withConstantTileKind(kind, run)
}
#endif
