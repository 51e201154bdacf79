#if arch(x86_64)
import CHearthCPU
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// Built with -target-cpu cascadelake (the AVX-512 level plus AVX-512 VNNI): call only after
// run-time dispatch has checked the CPU (HearthKernels' KernelLevel). Entry points are
// non-generic and @inline(never), over raw pointers only.
//
// The 8-bit-activation matmul for the 5-bit and K-quant tile kinds with `vpdpbusd` (the
// 32-column q4/q8 kinds: Tiles8VNNI.swift). Every unit
// (32 columns × 16 rows; a K-quant tile has eight) is eight 64-byte vectors, vector m holding
// weights 4m…4m+3 of each of the 16 rows as unsigned bytes — exactly the operand `vpdpbusd`
// multiplies against four activation bytes broadcast to every lane, so one instruction gives
// the 16 rows' partial sums with no horizontal reduction. The stored quants keep their zero
// point (q4_0 8, q5_0 16, q6_K 32, q8_0 128), folded into a per-unit correction −z·d·Σa; the
// affine kinds add m·Σa instead. Both are one term c·(d_a·Σa) with c precomputed per unit.
//
// A single token's pass reads each unit's vectors straight from the tile. A batch takes the
// register passes of TokenTiles.swift (eight tokens per pass over a group's weights): before,
// 32 units were decoded into an L1 buffer and four tokens at a time streamed past them, each
// token's 32 activation bytes and its sums reached through its own pointer and block index.
// The register passes over activation panels took the Phi-3-mini-shaped Q5_K_M file's pp512
// from 0.86× to 0.99× llama.cpp in one run (2 threads; benchmarks/history/2026-11-26-k-quant-prompts-at-8-bits-register-passes-over.md).

/// The eight weight vectors of one unit.
typealias UnitBytes = (
    SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>
)

/// Vector m of unit `u` of a tile: 16 rows × 4 weights as unsigned bytes (the stored quants).
@_transparent
func weightVector(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int, _ m: Int) -> SIMD8<Int64> {
    @inline(__always) func load(_ offset: Int) -> SIMD8<Int64> {
        _mm512_loadu_si512(tile + offset)
    }
    @inline(__always) func nibble(_ base: Int) -> SIMD8<Int64> {
        let raw = load(base + 64 * (m & 3))
        let mask = _mm512_set1_epi8(0x0f)
        return m < 4 ? _mm512_and_si512(raw, mask) : _mm512_and_si512(_mm512_srli_epi64(raw, 4), mask)
    }
    // Shifts move whole 64-bit lanes, but every bit that lands in a kept position comes from
    // the same byte, so the masks make them per-byte shifts.
    @inline(__always) func fifthBit(_ plane: Int) -> SIMD8<Int64> {
        let v = load(plane)
        let moved = m < 4 ? _mm512_slli_epi64(v, UInt32(4 - m)) : m == 4 ? v : _mm512_srli_epi64(v, UInt32(m - 4))
        return _mm512_and_si512(moved, _mm512_set1_epi8(0x10))
    }
    switch kind {
    case TileKind.q4_0: return nibble(32)
    case TileKind.q4_1: return nibble(64)
    case TileKind.q8_0: return load(32 + 64 * m)
    case TileKind.q8_a: return load(64 + 64 * m)
    case TileKind.q5_0: return _mm512_or_si512(nibble(KTile.q5_0Nibbles), fifthBit(KTile.q5_0High))
    case TileKind.q5_1: return _mm512_or_si512(nibble(KTile.q5_1Nibbles), fifthBit(KTile.q5_1High))
    case TileKind.q4_K: return nibble(KTile.kNibbles + 256 * u)
    case TileKind.q5_K: return _mm512_or_si512(nibble(KTile.kNibbles + 256 * u), fifthBit(KTile.k5High + 64 * u))
    default:  // q6_K: the nibble plus bits 2k…2k+1 (k = m mod 4) of the 2-bit plane as bits 4…5.
        let v = load(KTile.q6High + 128 * u + (m < 4 ? 0 : 64))
        let k = m & 3
        let shifted = k == 0 ? _mm512_slli_epi64(v, 4) : k == 1 ? _mm512_slli_epi64(v, 2) : k == 2 ? v : _mm512_srli_epi64(v, 2)
        return _mm512_or_si512(nibble(KTile.q6Nibbles + 256 * u), _mm512_and_si512(shifted, _mm512_set1_epi8(0x30)))
    }
}

@_transparent
private func unitBytes(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int) -> UnitBytes {
    (weightVector(kind, tile, u, 0), weightVector(kind, tile, u, 1), weightVector(kind, tile, u, 2),
     weightVector(kind, tile, u, 3), weightVector(kind, tile, u, 4), weightVector(kind, tile, u, 5),
     weightVector(kind, tile, u, 6), weightVector(kind, tile, u, 7))
}

/// Σ over vectors 0–3 and over vectors 4–7 of w·a for the 16 rows (for q6_K, whose two
/// 16-column halves have their own scales); `a` is the unit's 32 activation bytes.
@_transparent
func halfDots(_ v: UnitBytes, _ a: UnsafeRawPointer) -> (SIMD8<Int64>, SIMD8<Int64>) {
    let zero = _mm512_setzero_si512()
    @inline(__always) func b(_ m: Int) -> SIMD8<Int64> { _mm512_set1_epi32(a.loadUnaligned(fromByteOffset: 4 * m, as: Int32.self)) }
    var i0 = _mm512_dpbusd_epi32(zero, v.0, b(0))
    var i1 = _mm512_dpbusd_epi32(zero, v.4, b(4))
    i0 = _mm512_dpbusd_epi32(i0, v.1, b(1))
    i1 = _mm512_dpbusd_epi32(i1, v.5, b(5))
    i0 = _mm512_dpbusd_epi32(i0, v.2, b(2))
    i1 = _mm512_dpbusd_epi32(i1, v.6, b(6))
    i0 = _mm512_dpbusd_epi32(i0, v.3, b(3))
    i1 = _mm512_dpbusd_epi32(i1, v.7, b(7))
    return (i0, i1)
}

/// A unit's per-row factors: y += d·(Σ·d_a) + c·(d_a·Σa) with c = m (affine kinds) or −z·d
/// (zero-point kinds); q6_K has a second (d, c) for its upper 16 columns.
struct ByteUnitFactors {
    var d, c, dHigh, cHigh: SIMD16<Float>
}

/// Sixteen bytes at `p` as sixteen floats (unsigned or signed).
@_transparent
private func floats16(_ p: UnsafeRawPointer, signed: Bool) -> SIMD16<Float> {
    // The intrinsic loads (here and in this file's other vector loads): a generic `loadUnaligned`
    // was left out of line in these big kernels — a specialization of a standard-library
    // function, compiled for this module's CPU, that the linker may share with baseline code.
    let bytes = _mm_loadu_si128(p.assumingMemoryBound(to: SIMD2<Int64>.self))
    return _mm512_cvtepi32_ps(signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes))
}

@_transparent
func byteUnitFactors(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int) -> ByteUnitFactors {
    @inline(__always) func halves(_ offset: Int) -> SIMD16<Float> {
        _mm512_cvtph_ps(_mm256_loadu_si256((tile + offset).assumingMemoryBound(to: SIMD4<Int64>.self)))
    }
    let d = halves(0)
    @inline(__always) func zeroPoint(_ z: Float) -> ByteUnitFactors {
        let c = d * SIMD16<Float>(repeating: -z)
        return ByteUnitFactors(d: d, c: c, dHigh: d, cHigh: c)
    }
    switch kind {
    case TileKind.q4_0: return zeroPoint(8)
    case TileKind.q5_0: return zeroPoint(16)
    case TileKind.q8_0: return zeroPoint(128)
    case TileKind.q4_1, TileKind.q8_a, TileKind.q5_1:
        let m = halves(32)
        return ByteUnitFactors(d: d, c: m, dHigh: d, cHigh: m)
    case TileKind.q4_K, TileKind.q5_K:
        let scaled = d * floats16(tile + KTile.kScales + 16 * u, signed: false)
        let mins = -halves(KTile.kDmin) * floats16(tile + KTile.kMins + 16 * u, signed: false)
        return ByteUnitFactors(d: scaled, c: mins, dHigh: scaled, cHigh: mins)
    default:  // q6_K
        let sc = tile + KTile.q6Scales + 32 * u
        let low = d * floats16(sc, signed: true), high = d * floats16(sc + 16, signed: true)
        let minus32 = SIMD16<Float>(repeating: -32)
        return ByteUnitFactors(d: low, c: low * minus32, dHigh: high, cHigh: high * minus32)
    }
}

/// acc += d·(Σ·d_a) + c·sa, with sa = d_a·Σa.
@_transparent
private func accumulate(_ acc: inout SIMD16<Float>, _ sum: SIMD8<Int64>, _ d: SIMD16<Float>, _ c: SIMD16<Float>, _ da: Float, _ sa: Float) {
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum) * SIMD16<Float>(repeating: da), acc)
    acc = _mm512_fmadd_ps(c, SIMD16<Float>(repeating: sa), acc)
}

/// One unit's contribution for one token: `a` its 32 activation bytes, `da` their scale,
/// `sums` the token's d_a·Σa per 32 columns and `halfSums` per 16 (q6_K), at unit index `ab`.
@_transparent
private func unitProduct(
    _ kind: Int32, _ acc: inout SIMD16<Float>, _ v: UnitBytes, _ f: ByteUnitFactors, _ a: UnsafeRawPointer, _ da: Float,
    _ sums: UnsafePointer<Float>, _ halfSums: UnsafePointer<Float>, _ ab: Int
) {
    let (s0, s1) = halfDots(v, a)
    if kind == TileKind.q6_K {
        accumulate(&acc, s0, f.d, f.c, da, halfSums[2 * ab])
        accumulate(&acc, s1, f.dHigh, f.cHigh, da, halfSums[2 * ab + 1])
    } else {
        accumulate(&acc, _mm512_add_epi32(s0, s1), f.d, f.c, da, sums[ab])
    }
}

/// out[0..<valid] = the 16 row values.
@_transparent
private func storeRows(_ out: UnsafeMutablePointer<Float>, _ valid: Int, _ v: SIMD16<Float>) {
    if valid == 16 {
        _mm512_storeu_ps(UnsafeMutableRawPointer(out), v)
        return
    }
    for r in 0..<valid { out[r] = v[r] }
}

/// How far ahead of the unit being multiplied a single token's pass prefetches the weights.
let prefetchDistance = 4096

/// A 16-row group's weights decoded once for all the passes of a block of tokens: per unit its
/// eight weight vectors (the bytes `vpdpbusd` takes, as ``weightVector`` gives them) and its
/// four factor vectors (``ByteUnitFactors``), `unitBytes` per unit, in unit order. A pass then reads
/// each vector with one load instead of decoding it again (two to five shifts, masks and ORs
/// per vector for the 5- and 6-bit kinds, and the factors' conversions per unit).
private enum DecodedGroup {
    /// Bytes per unit: eight weight vectors and four factor vectors of 64 bytes.
    static let unitBytes = 12 * 64

    /// Writes unit `u` of `tile` (unit index `ab` of its group) into `copy`.
    @_transparent
    static func store(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int, _ ab: Int, into copy: UnsafeMutableRawPointer) {
        let unit = copy + ab * unitBytes
        @_transparent func put(_ m: Int) { _mm512_storeu_si512(unit + 64 * m, weightVector(kind, tile, u, m)) }
        put(0); put(1); put(2); put(3); put(4); put(5); put(6); put(7)
        let f = byteUnitFactors(kind, tile, u)
        _mm512_storeu_ps(unit + 512, f.d)
        _mm512_storeu_ps(unit + 576, f.c)
        _mm512_storeu_ps(unit + 640, f.dHigh)
        _mm512_storeu_ps(unit + 704, f.cHigh)
    }

    /// Weight vector `m` of the unit at `unit`.
    @_transparent
    static func vector(_ unit: UnsafeRawPointer, _ m: Int) -> SIMD8<Int64> {
        _mm512_loadu_si512(unit + 64 * m)
    }

    /// The factors of the unit at `unit`.
    @_transparent
    static func factors(_ unit: UnsafeRawPointer) -> ByteUnitFactors {
        @_transparent func at(_ offset: Int) -> SIMD16<Float> { _mm512_loadu_ps(unit + offset) }
        return ByteUnitFactors(d: at(512), c: at(576), dHigh: at(640), cHigh: at(704))
    }
}

/// Decodes every unit of group `g` into `copy` (``DecodedGroup``).
@_transparent
private func decodeGroup(
    _ kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, units: Int, g: Int,
    into copy: UnsafeMutableRawPointer
) {
    let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
    for ab in 0..<(blocks * units) {
        hearth_prefetch(groupStart + ab * stride + prefetchDistance, stride)
        DecodedGroup.store(kind, tiles + (g * blocks + ab / units) * tileBytes, ab % units, ab, into: copy)
    }
}

/// One 16-row group for `count` (a constant: 2, 4 or 8) tokens from token `t` (a multiple of
/// eight: the passes of TokenTiles.swift), their activations the panel of `t` (``ActivationPanel``):
/// per unit, each of the eight weight vectors is decoded in registers once and multiplied by
/// every token (one `vpdpbusd` into the token's own register, eight independent chains), then
/// each token's row sums are flushed into its float sums — convert, multiply by d_a, FMA with
/// the unit's d, FMA of the offset c·(d_a·Σa) — once per unit (q6_K: each half's sums start at
/// its zero point's share, the halves are joined as floats, then one FMA with d_a).
/// Every activation operand is one pointer per unit plus a constant.
///
/// With `decoded` (a constant at each call), the weight vectors and factors come from the
/// group's copy that ``decodeGroup`` wrote, not from the tiles.
@_transparent
private func registerGroup(
    _ kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, units: Int, g: Int, t: Int, count: Int,
    end: Int, panels: UnsafeRawPointer, cols: Int, y: UnsafeMutablePointer<Float>, ldy: Int, valid: Int,
    decoded: Bool, copy: UnsafeRawPointer
) {
    let totalUnits = blocks * units, record = ActivationPanel.recordBytes
    let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
    let last = end - 1
    let panel = panels + t / ActivationPanel.tokens * (cols / 32) * record
    var lane = Lanes8<Int>(0)
    lane.l1 = 1; lane.l2 = 2; lane.l3 = 3; lane.l4 = 4; lane.l5 = 5; lane.l6 = 6; lane.l7 = 7
    var acc = Lanes8<SIMD16<Float>>(SIMD16<Float>())
    for ab in 0..<totalUnits {
        let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
        let unitCopy = copy + ab * DecodedGroup.unitBytes
        if !decoded { hearth_prefetch(groupStart + ab * stride + prefetchDistance, stride) }
        let f = decoded ? DecodedGroup.factors(unitCopy) : byteUnitFactors(kind, tile, u)
        let r = panel + ab * record
        let a = lane.map { r.assumingMemoryBound(to: Int32.self) + $0 }
        @_transparent func floats(_ offset: Int) -> UnsafePointer<Float> {
            (r + offset).assumingMemoryBound(to: Float.self)
        }
        @_transparent func ints(_ offset: Int) -> UnsafePointer<Int32> {
            (r + offset).assumingMemoryBound(to: Int32.self)
        }
        if kind == TileKind.q6_K {
            // q6_K: the unit's lower 16 columns have their own scale. Each half's sums start at
            // its zero point's share, −32·Σa from the panel, so its dots end on the signed
            // products; the lower half is scaled by its rows' d·scale as floats and the upper
            // half joins it before the one multiply by d_a: one flush per unit of five float
            // operations per token (two flushes took eight, subtracting the zero points seven).
            var s = zeroPointPass(count, ints(ActivationPanel.halfSums))
            // Written out per vector, so each one's shifts and offsets are constants.
            @_transparent func step(_ m: Int) {
                let w = decoded ? DecodedGroup.vector(unitCopy, m) : weightVector(kind, tile, u, m)
                stepPass(&s, count, w, a, 8 * m)
            }
            step(0); step(1); step(2); step(3)
            let low = scaledHalfPass(s, count, f.d)
            s = zeroPointPass(count, ints(ActivationPanel.halfSums + 32))
            step(4); step(5); step(6); step(7)
            flushHalvesPass(&acc, low, s, count, f.dHigh, floats(ActivationPanel.scales))
            continue
        }
        var s = Lanes8<SIMD8<Int64>>(_mm512_setzero_si512())
        @_transparent func step(_ m: Int) {
            let w = decoded ? DecodedGroup.vector(unitCopy, m) : weightVector(kind, tile, u, m)
            stepPass(&s, count, w, a, 8 * m)
        }
        step(0); step(1); step(2); step(3)
        step(4); step(5); step(6); step(7)
        flushPass(
            &acc, s, count, f.d, f.c, lane, floats(ActivationPanel.scales), withOffset: true, lane,
            floats(ActivationPanel.sums))
    }
    storePass(acc, rows: tokenRows(t, last: last), t: t, last: last, count: count, y: y, ldy: ldy, g: g, valid: valid)
}

@_transparent
private func byteKernel(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, quants: UnsafePointer<Int8>,
    scales: UnsafePointer<Float>, sums: UnsafePointer<Float>, halfSums: UnsafePointer<Float>, panels: UnsafeRawPointer,
    cols: Int, batch: Int, groups: Range<Int>, y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let units = kind >= TileKind.q4_K ? 8 : 1
    let totalUnits = blocks * units
    let a0 = UnsafeRawPointer(quants)
    @_transparent func validRows(_ g: Int) -> Int { rows - g * 16 < 16 ? rows - g * 16 : 16 }

    if batch == 1 {
        for g in groups {
            // Decode: each unit's weights straight from the tile into registers; two sums so
            // consecutive units' float chains overlap.
            var f0 = SIMD16<Float>(), f1 = SIMD16<Float>()
            var ab = 0
            let stride = tileBytes / units, groupStart = tiles + g * blocks * tileBytes
            while ab < totalUnits {
                let tile = tiles + (g * blocks + ab / units) * tileBytes, u = ab % units
                hearth_prefetch(groupStart + ab * stride + prefetchDistance, 2 * stride)
                unitProduct(kind, &f0, unitBytes(kind, tile, u), byteUnitFactors(kind, tile, u), a0 + 32 * ab, scales[ab], sums, halfSums, ab)
                ab += 1
                if ab == totalUnits { break }
                let tile1 = tiles + (g * blocks + ab / units) * tileBytes, u1 = ab % units
                unitProduct(kind, &f1, unitBytes(kind, tile1, u1), byteUnitFactors(kind, tile1, u1), a0 + 32 * ab, scales[ab], sums, halfSums, ab)
                ab += 1
            }
            storeRows(y + g * 16, validRows(g), f0 + f1)
        }
        return
    }
    // A batch: the register passes of TokenTiles.swift. A block of more than eight tokens makes
    // several passes over each group: the group is decoded once (DecodedGroup) and its passes
    // read the copy, which stays in L2 (16 rows × cols bytes plus 256 bytes per unit).
    let copy = UnsafeMutableRawPointer.allocate(
        byteCount: batch > 8 ? totalUnits * DecodedGroup.unitBytes : 64, alignment: 64)
    defer { copy.deallocate() }
    var passes = TokenPasses(batch: batch, groups: groups, cols: cols)
    while let p = passes.next() {
        let decoded = p.end - p.first > 8
        if decoded && p.t == p.first {
            decodeGroup(kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: p.g, into: copy)
        }
        @_transparent func pass(_ count: Int, _ decoded: Bool) {
            registerGroup(
                kind, tiles: tiles, tileBytes: tileBytes, blocks: blocks, units: units, g: p.g, t: p.t, count: count,
                end: p.end, panels: panels, cols: cols, y: y, ldy: ldy, valid: validRows(p.g), decoded: decoded,
                copy: copy)
        }
        switch (p.count, decoded) {
        case (8, true): pass(8, true)
        case (8, false): pass(8, false)
        case (4, true): pass(4, true)
        case (4, false): pass(4, false)
        case (_, true): pass(2, true)
        default: pass(2, false)
        }
    }
}

/// y[t·ldy + row] = W[row] · a[t] for the 16-row groups `groupStart..<groupEnd` of an
/// interleaved16 matrix of a 5-bit or K-quant ``TileKind`` (q5_0, q5_1, q4_K, q5_K, q6_K; tiles of
/// `tileBytes`, `blocks` per group), all `batch` tokens of 8-bit activations (`quants`;
/// per-32-column `scales` d_a; `sums` = d_a·Σa per 32 columns and `halfSums` = d_a·Σa per 16,
/// HearthKernels' `QuantizedActivations.scaledSums` / `.scaledHalfSums`; for a batch the same
/// in `panels`, ``ActivationPanel``), with AVX-512 VNNI `vpdpbusd`.
/// q4_0, q4_1, q8_0 and q8_a take `hearthQuantizedMatMulAVX512VNNI` (Tiles8VNNI.swift).
@inline(never)
public func hearthQuantizedMatMul8AVX512VNNI(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ quants: UnsafePointer<Int8>, _ scales: UnsafePointer<Float>, _ sums: UnsafePointer<Float>,
    _ halfSums: UnsafePointer<Float>, _ panels: UnsafeRawPointer, _ cols: Int, _ batch: Int, _ groupStart: Int,
    _ groupEnd: Int, _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    let groups = groupStart..<groupEnd
    // One inlined copy per kind, the kind a constant in each.
    @_transparent func run(_ k: Int32) {
        byteKernel(
            kind: k, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, quants: quants, scales: scales,
            sums: sums, halfSums: halfSums, panels: panels, cols: cols, batch: batch, groups: groups, y: y, ldy: ldy)
    }
    withConstantTileKind(kind, run)
}

/// y[t·ldy + row] += Σ over token t's outlier picks (column c, value v) of v · W[row][c], for
/// the rows of the 16-row groups `groupStart..<groupEnd` of an interleaved16 matrix of any
/// ``TileKind`` and tokens 0..<`batch`: the f32 share of an 8-bit product whose quantization left
/// each token's `perRow` largest activations out (HearthKernels' `OutlierPicks`: token t's picks
/// at `t·perRow…` of `columns` and `values`; the `slots` picked columns ascending in `slotColumns`,
/// column c's place among them at `columnSlots[c]`). `table` (`tableFloats` floats, at least
/// 16·(`slots` + 1)) is the worker's scratch (any alignment).
///
/// Groups go in tiles of up to eight (as many as the table holds). Per tile and group, each
/// weight vector holding picked columns (four columns of the 16 rows, as the 8-bit kernel
/// decodes it) is decoded in registers once, and each unit's factors once; a picked column is
/// then one shift, mask and convert of its vector —
/// lane r holding row r — and one multiply-add with the unit's row factors, w = d·q + c, stored
/// in the table beside the same column's weights of the tile's other groups. Each token then
/// sums v·w over its picks in one register per group and adds them to its outputs, the tile's
/// rows side by side. (Adding per group instead touched one 64-byte line per token `ldy` floats
/// apart — a power of two on most models, so the lines fell into a few cache sets: 8% of a
/// Phi-3-mini-shaped Q6_K pp512, 43% of it on that store.)
@inline(never)
public func hearthAddOutlierProductsAVX512VNNI(
    _ tiles: UnsafeRawPointer, _ tileBytes: Int, _ blocks: Int, _ rows: Int, _ kind: Int32,
    _ slotColumns: UnsafePointer<Int32>, _ slots: Int, _ columnSlots: UnsafePointer<Int32>, _ columns: UnsafePointer<Int32>,
    _ values: UnsafePointer<Float>, _ perRow: Int, _ batch: Int, _ groupStart: Int, _ groupEnd: Int,
    _ y: UnsafeMutablePointer<Float>, _ ldy: Int, _ table: UnsafeMutablePointer<Float>, _ tableFloats: Int
) {
    @_transparent func run(_ k: Int32) {
        outlierProducts(
            kind: k, tiles: tiles, tileBytes: tileBytes, blocks: blocks, rows: rows, slotColumns: slotColumns, slots: slots,
            columnSlots: columnSlots, columns: columns, values: values, perRow: perRow, batch: batch,
            groups: groupStart..<groupEnd, y: y, ldy: ldy, scratch: table, scratchFloats: tableFloats)
    }
    withConstantTileKind(kind, run)
}

/// Groups per tile of the outlier products (see ``hearthAddOutlierProductsAVX512VNNI``).
let outlierGroupTile = 8

@_transparent
private func outlierProducts(
    kind: Int32, tiles: UnsafeRawPointer, tileBytes: Int, blocks: Int, rows: Int, slotColumns: UnsafePointer<Int32>,
    slots: Int, columnSlots: UnsafePointer<Int32>, columns: UnsafePointer<Int32>, values: UnsafePointer<Float>,
    perRow: Int, batch: Int, groups: Range<Int>, y: UnsafeMutablePointer<Float>, ldy: Int,
    scratch: UnsafeMutablePointer<Float>, scratchFloats: Int
) {
    let units = kind >= TileKind.q4_K ? 8 : 1
    // Aligned to 64 bytes (the vector stores below need it), less what that costs.
    let skip = (64 - Int(bitPattern: scratch) & 63) & 63
    let base = UnsafeMutableRawPointer(scratch) + skip
    let fit = (scratchFloats - skip / 4) / 16 / (slots > 0 ? slots : 1)
    let tile = fit < outlierGroupTile ? (fit < 1 ? 1 : fit) : outlierGroupTile
    // The table: slot s, group i of the tile at s·tile + i.
    let table = base.assumingMemoryBound(to: SIMD16<Float>.self)
    let byteMask = _mm512_set1_epi32(0xff)
    /// Weight vector `m` (a variable) of unit `u` of `t`, each case with its constant shifts.
    @_transparent func vector(_ t: UnsafeRawPointer, _ u: Int, _ m: Int) -> SIMD8<Int64> {
        switch m {
        case 0: return weightVector(kind, t, u, 0)
        case 1: return weightVector(kind, t, u, 1)
        case 2: return weightVector(kind, t, u, 2)
        case 3: return weightVector(kind, t, u, 3)
        case 4: return weightVector(kind, t, u, 4)
        case 5: return weightVector(kind, t, u, 5)
        case 6: return weightVector(kind, t, u, 6)
        default: return weightVector(kind, t, u, 7)
        }
    }
    var first = groups.lowerBound
    while first < groups.upperBound {
        let count = groups.upperBound - first < tile ? groups.upperBound - first : tile
        for i in 0..<count {
            let g = first + i
            // Only the weight vectors holding picked columns are decoded (one per run of picks
            // in the same four columns) and the factors once per unit, not each picked unit
            // whole. (Fewer operations; not faster measurably: this kernel's 9–11% of a
            // Phi-3-mini-shaped Q6_K pp512, cpu-clock samples, is mostly waiting on memory.)
            var currentUnit = -1, currentVector = -1
            var f = ByteUnitFactors(d: SIMD16<Float>(), c: SIMD16<Float>(), dHigh: SIMD16<Float>(), cHigh: SIMD16<Float>())
            var t = tiles, u = 0
            var v = _mm512_setzero_si512()
            var fetched = -1  // the last tile prefetched
            for s in 0..<slots {
                let c = Int(slotColumns[s]), ab = c >> 5
                let e = c & 31, m = e >> 2
                if ab != currentUnit {
                    currentUnit = ab
                    currentVector = -1
                    // The picked units lie scattered over the group's tiles, out of cache by
                    // now: the tile of the pick eight slots on is fetched while this one is decoded.
                    let ahead = Int(slotColumns[s + 8 < slots ? s + 8 : slots - 1]) >> 5 / units
                    if ahead != fetched {
                        fetched = ahead
                        hearth_prefetch(tiles + (g * blocks + ahead) * tileBytes, tileBytes)
                    }
                    t = tiles + (g * blocks + ab / units) * tileBytes
                    u = ab % units
                    f = byteUnitFactors(kind, t, u)
                }
                if m != currentVector {
                    currentVector = m
                    v = vector(t, u, m)
                }
                let shift = _mm512_set1_epi32(Int32(8 * (e & 3)))
                let q = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srlv_epi32(v, shift), byteMask))
                table[s * tile + i] = m < 4 ? _mm512_fmadd_ps(f.d, q, f.c) : _mm512_fmadd_ps(f.dHigh, q, f.cHigh)
            }
        }
        let lastValid = rows - (first + count - 1) * 16 < 16 ? rows - (first + count - 1) * 16 : 16
        for t in 0..<batch {
            let picked = columns + t * perRow, value = values + t * perRow
            let out = y + t * ldy + first * 16
            if count == outlierGroupTile && lastValid == 16 {
                // A whole tile: eight sums in registers.
                var acc = Lanes8<SIMD16<Float>>(SIMD16<Float>())
                for p in 0..<perRow {
                    let v = SIMD16<Float>(repeating: value[p])
                    let w = table + Int(columnSlots[Int(picked[p])]) * outlierGroupTile
                    acc.l0 = _mm512_fmadd_ps(v, w[0], acc.l0); acc.l1 = _mm512_fmadd_ps(v, w[1], acc.l1)
                    acc.l2 = _mm512_fmadd_ps(v, w[2], acc.l2); acc.l3 = _mm512_fmadd_ps(v, w[3], acc.l3)
                    acc.l4 = _mm512_fmadd_ps(v, w[4], acc.l4); acc.l5 = _mm512_fmadd_ps(v, w[5], acc.l5)
                    acc.l6 = _mm512_fmadd_ps(v, w[6], acc.l6); acc.l7 = _mm512_fmadd_ps(v, w[7], acc.l7)
                }
                @_transparent func add(_ i: Int, _ sum: SIMD16<Float>) {
                    let o = UnsafeMutableRawPointer(out + 16 * i)
                    _mm512_storeu_ps(o, _mm512_add_ps(_mm512_loadu_ps(UnsafeRawPointer(o)), sum))
                }
                add(0, acc.l0); add(1, acc.l1); add(2, acc.l2); add(3, acc.l3)
                add(4, acc.l4); add(5, acc.l5); add(6, acc.l6); add(7, acc.l7)
                continue
            }
            for i in 0..<count {
                var sum = SIMD16<Float>()
                for p in 0..<perRow {
                    sum = _mm512_fmadd_ps(
                        SIMD16<Float>(repeating: value[p]), table[Int(columnSlots[Int(picked[p])]) * tile + i], sum)
                }
                let o = out + 16 * i
                let valid = i == count - 1 ? lastValid : 16
                if valid == 16 {
                    _mm512_storeu_ps(UnsafeMutableRawPointer(o), _mm512_add_ps(_mm512_loadu_ps(UnsafeRawPointer(o)), sum))
                } else {
                    for r in 0..<valid { o[r] += sum[r] }
                }
            }
        }
        first += count
    }
}
#endif
