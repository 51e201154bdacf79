#if arch(x86_64)
import _Builtin_intrinsics.intel

// The passes of the 8-bit K-quant register kernel (AVX512VNNI.swift) over a batch: tokens in
// blocks of `passBlock(cols:)`, and for each block every 16-row group of the thread in turn, eight
// tokens per pass over the group's weights, each token adding its products into its own
// register. The 16-bit kernel (Wide16VNNI.swift) runs the same scheme with its own copy: built
// from these shared pieces its entry point had 4293 stack operands against 367 (its speed was
// not measured apart from this host's noise), so it was left as it was.

/// Tokens per block of a batch with `cols` columns: each 16-row group is multiplied against one
/// block's activation panels (1.5 bytes per token and column) before the next group, so the
/// panels should stay in L2 beside the group's decoded copy (256 + 512 bytes per 32 columns):
/// as many tokens as fill 768 KiB (1 MiB L2 on Zen 4, 2 MiB on Sapphire Rapids), a multiple of
/// eight from 32 to 128. More tokens per block means fewer streams of the whole weight matrix
/// from memory and one decode of a group serving more passes: 32 → 64 → 128 tokens gave a
/// Phi-3-mini-shaped Q5_K_M pp512 about +22% and then +13% (benchmarks/history/2026-11-26-k-quant-prompts-at-8-bits-register-passes-over.md).
@_transparent
func passBlock(cols: Int) -> Int {
    let fit = 768 * 1024 / (cols * 3 / 2 + 1) / 8 * 8
    return fit < 32 ? 32 : fit > 128 ? 128 : fit
}

/// Lanes8 tokens' values, one register each (unused ones stay idle when the count is smaller).
struct Lanes8<Lane> {
    var l0, l1, l2, l3, l4, l5, l6, l7: Lane
    @_transparent init(_ v: Lane) { (l0, l1, l2, l3, l4, l5, l6, l7) = (v, v, v, v, v, v, v, v) }

    /// `f` of each lane.
    @_transparent func map<T>(_ f: (Lane) -> T) -> Lanes8<T> {
        var r = Lanes8<T>(f(l0))
        r.l1 = f(l1); r.l2 = f(l2); r.l3 = f(l3); r.l4 = f(l4); r.l5 = f(l5); r.l6 = f(l6); r.l7 = f(l7)
        return r
    }
}

/// The token indices of the pass from token `t`: t, t + 1, … capped at `last` (tokens past the
/// end repeat the last one; their results are dropped).
@_transparent
func tokenRows(_ t: Int, last: Int) -> Lanes8<Int> {
    // Written out: in these big kernels a call of the generic `min` was left out of line.
    @_transparent func capped(_ k: Int) -> Int { t + k < last ? t + k : last }
    var row = Lanes8<Int>(t)
    row.l1 = capped(1); row.l2 = capped(2); row.l3 = capped(3)
    row.l4 = capped(4); row.l5 = capped(5); row.l6 = capped(6); row.l7 = capped(7)
    return row
}

/// s(j) = `vpdpbusd`(s(j), w, token j's four activation bytes at `at`, broadcast) for the first
/// `count` tokens.
@_transparent
func stepPass(_ s: inout Lanes8<SIMD8<Int64>>, _ count: Int, _ w: SIMD8<Int64>, _ a: Lanes8<UnsafePointer<Int32>>, _ at: Int) {
    @_transparent func b(_ p: UnsafePointer<Int32>) -> SIMD8<Int64> { _mm512_set1_epi32(p[at]) }
    @_transparent func op(_ s: SIMD8<Int64>, _ w: SIMD8<Int64>, _ a: SIMD8<Int64>) -> SIMD8<Int64> {
        _mm512_dpbusd_epi32(s, w, a)
    }
    s.l0 = op(s.l0, w, b(a.l0))
    if count > 1 { s.l1 = op(s.l1, w, b(a.l1)) }
    if count > 2 { s.l2 = op(s.l2, w, b(a.l2)) }
    if count > 3 { s.l3 = op(s.l3, w, b(a.l3)) }
    if count > 4 { s.l4 = op(s.l4, w, b(a.l4)) }
    if count > 5 { s.l5 = op(s.l5, w, b(a.l5)) }
    if count > 6 { s.l6 = op(s.l6, w, b(a.l6)) }
    if count > 7 { s.l7 = op(s.l7, w, b(a.l7)) }
}

/// acc(j) += d·(Σ(j)·d_a(j)) [+ c·o(j)] for the first `count` tokens: `scales[i(j)]` the
/// activation block's scale d_a, `offsets[o(j)]` its offset factor (d_a·Σa, when `withOffset`).
@_transparent
func flushPass(
    _ acc: inout Lanes8<SIMD16<Float>>, _ s: Lanes8<SIMD8<Int64>>, _ count: Int, _ d: SIMD16<Float>, _ c: SIMD16<Float>,
    _ i: Lanes8<Int>, _ scales: UnsafePointer<Float>, withOffset: Bool, _ o: Lanes8<Int>, _ offsets: UnsafePointer<Float>
) {
    @_transparent func one(_ a: inout SIMD16<Float>, _ sum: SIMD8<Int64>, _ k: Int, _ ko: Int) {
        a = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum) * SIMD16<Float>(repeating: scales[k]), a)
        if withOffset { a = _mm512_fmadd_ps(c, SIMD16<Float>(repeating: offsets[ko]), a) }
    }
    one(&acc.l0, s.l0, i.l0, o.l0)
    if count > 1 { one(&acc.l1, s.l1, i.l1, o.l1) }
    if count > 2 { one(&acc.l2, s.l2, i.l2, o.l2) }
    if count > 3 { one(&acc.l3, s.l3, i.l3, o.l3) }
    if count > 4 { one(&acc.l4, s.l4, i.l4, o.l4) }
    if count > 5 { one(&acc.l5, s.l5, i.l5, o.l5) }
    if count > 6 { one(&acc.l6, s.l6, i.l6, o.l6) }
    if count > 7 { one(&acc.l7, s.l7, i.l7, o.l7) }
}

/// The pass's integer sums before a q6_K half's dots: token j's Int32 at `z` + j, broadcast —
/// minus the half's zero point (the panel holds −32·Σa), so the dots that follow land on the
/// signed products and no subtraction is left for the flush.
@_transparent
func zeroPointPass(_ count: Int, _ z: UnsafePointer<Int32>) -> Lanes8<SIMD8<Int64>> {
    @_transparent func one(_ k: Int) -> SIMD8<Int64> { _mm512_set1_epi32(z[k]) }
    var s = Lanes8<SIMD8<Int64>>(one(0))
    if count > 1 { s.l1 = one(1) }
    if count > 2 { s.l2 = one(2) }
    if count > 3 { s.l3 = one(3) }
    if count > 4 { s.l4 = one(4) }
    if count > 5 { s.l5 = one(5) }
    if count > 6 { s.l6 = one(6) }
    if count > 7 { s.l7 = one(7) }
    return s
}

/// h(j) = Float(s(j))·d for the first `count` tokens: q6_K's lower half (its zero point already
/// in the sums, ``zeroPointPass``) with its rows' scale applied, kept as floats until the upper
/// half joins it (``flushHalvesPass``).
@_transparent
func scaledHalfPass(_ s: Lanes8<SIMD8<Int64>>, _ count: Int, _ d: SIMD16<Float>) -> Lanes8<SIMD16<Float>> {
    @_transparent func one(_ sum: SIMD8<Int64>) -> SIMD16<Float> { _mm512_cvtepi32_ps(sum) * d }
    var h = Lanes8<SIMD16<Float>>(one(s.l0))
    if count > 1 { h.l1 = one(s.l1) }
    if count > 2 { h.l2 = one(s.l2) }
    if count > 3 { h.l3 = one(s.l3) }
    if count > 4 { h.l4 = one(s.l4) }
    if count > 5 { h.l5 = one(s.l5) }
    if count > 6 { h.l6 = one(s.l6) }
    if count > 7 { h.l7 = one(s.l7) }
    return h
}

/// acc(j) += (h(j) + Float(s(j))·d)·d_a(j) for the first `count` tokens: q6_K's unit in one
/// flush, `h` its lower half (``scaledHalfPass``), `s` the upper half's integer dots (zero point
/// included, ``zeroPointPass``) and d_a(j) token j's Float at `scales` + j.
@_transparent
func flushHalvesPass(
    _ acc: inout Lanes8<SIMD16<Float>>, _ h: Lanes8<SIMD16<Float>>, _ s: Lanes8<SIMD8<Int64>>, _ count: Int,
    _ d: SIMD16<Float>, _ scales: UnsafePointer<Float>
) {
    @_transparent func one(_ a: inout SIMD16<Float>, _ low: SIMD16<Float>, _ sum: SIMD8<Int64>, _ k: Int) {
        let unit = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), d, low)
        a = _mm512_fmadd_ps(unit, SIMD16<Float>(repeating: scales[k]), a)
    }
    one(&acc.l0, h.l0, s.l0, 0)
    if count > 1 { one(&acc.l1, h.l1, s.l1, 1) }
    if count > 2 { one(&acc.l2, h.l2, s.l2, 2) }
    if count > 3 { one(&acc.l3, h.l3, s.l3, 3) }
    if count > 4 { one(&acc.l4, h.l4, s.l4, 4) }
    if count > 5 { one(&acc.l5, h.l5, s.l5, 5) }
    if count > 6 { one(&acc.l6, h.l6, s.l6, 6) }
    if count > 7 { one(&acc.l7, h.l7, s.l7, 7) }
}

/// Stores the pass's token values: token j's 16 row values (`valid` of them) at
/// `y + row(j)·ldy + g·16`, for the tokens the pass really holds (not the repeats).
@_transparent
func storePass(
    _ acc: Lanes8<SIMD16<Float>>, rows row: Lanes8<Int>, t: Int, last: Int, count: Int, y: UnsafeMutablePointer<Float>,
    ldy: Int, g: Int, valid: Int
) {
    @_transparent func store(_ r: Int, _ v: SIMD16<Float>) {
        let out = y + r * ldy + g * 16
        if valid == 16 {
            _mm512_storeu_ps(UnsafeMutableRawPointer(out), v)
        } else {
            for k in 0..<valid { out[k] = v[k] }
        }
    }
    store(row.l0, acc.l0)
    if count > 1 && t + 1 <= last { store(row.l1, acc.l1) }
    if count > 2 && t + 2 <= last { store(row.l2, acc.l2) }
    if count > 3 && t + 3 <= last { store(row.l3, acc.l3) }
    if count > 4 && t + 4 <= last { store(row.l4, acc.l4) }
    if count > 5 && t + 5 <= last { store(row.l5, acc.l5) }
    if count > 6 && t + 6 <= last { store(row.l6, acc.l6) }
    if count > 7 && t + 7 <= last { store(row.l7, acc.l7) }
}

/// The passes of a batch, in order: blocks of ``passBlock(cols:)`` tokens; for each, every group of
/// `groups` in turn, eight tokens per pass (five to seven padded to eight, three to four to
/// four, one or two to two). A kernel switches on `count` to call its pass with a literal, so
/// each call is specialised for it (a closure taking the pass was compiled once for all
/// counts and kinds, not inlined).
struct TokenPasses {
    private let batch: Int, groups: Range<Int>, block: Int
    private var first = 0, g: Int, t = 0

    /// Passes over `batch` tokens of `cols` columns (blocks of ``passBlock(cols:)`` tokens).
    @_transparent init(batch: Int, groups: Range<Int>, cols: Int) {
        self.batch = batch
        self.groups = groups
        block = passBlock(cols: cols)
        g = groups.lowerBound
    }

    /// The next pass: group `g`, tokens from `t` (`count` of them, those at or past `end` repeats)
    /// of the block `first..<end`.
    @_transparent mutating func next() -> (g: Int, t: Int, count: Int, end: Int, first: Int)? {
        guard groups.lowerBound < groups.upperBound else { return nil }
        while first < batch {
            let end = first + block < batch ? first + block : batch
            if t < end {
                let left = end - t
                let count = left > 4 ? 8 : left > 2 ? 4 : 2
                let pass = (g: g, t: t, count: count, end: end, first: first)
                t += count
                return pass
            }
            // This group is done with the block: the next group, or the next block.
            g += 1
            t = first
            if g == groups.upperBound {
                g = groups.lowerBound
                first = end
                t = first
            }
        }
        return nil
    }
}
#endif
