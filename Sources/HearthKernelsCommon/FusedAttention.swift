/// Fused attention over key/value tiles (FlashAttention's online softmax, written for a CPU): the
/// body every kernel level compiles.
///
/// One call computes, for a *query tile* — `tokens` consecutive positions × the `groupHeads`
/// query heads that share one key/value head (GQA) — softmax(scale · q·Kᵀ, masked) · V over the
/// keys `keyStart..<keyEnd` a row may see. Keys and values arrive a tile at a time
/// (``fusedAttentionTileKeys(kvWidth:)`` positions) as Float rows (the caller's `load` converts
/// them from the cache, whatever its type), so no context-sized buffer exists: every row keeps a
/// running maximum m, a running sum l of e^(s − m) and an unnormalised output O, rescaled by
/// e^(m_old − m_new) when a tile raises the maximum. All query rows of the group multiply the same loaded tile.
///
/// Row r of the tile is token r / groupHeads, head r % groupHeads. Token t sits at position
/// `firstPosition + t` and sees key j when `keyStart ≤ j < keyEnd`, j ≤ its position (causal)
/// and, with a window w > 0, j > position − w.
///
/// A tile may also span several key/value heads (`kvHeads` > 1, a decode step over whole cache
/// rows): then `load` fills each key position's row of every head (`kvHeads · headDim` Floats,
/// head h at h·headDim) and query head g of a token reads KV head g / (groupHeads / kvHeads).
/// One pass over the keys then serves every head, so the cache streams row after row instead of
/// each head gathering a few cache lines from every row (a model with many KV heads, as
/// Phi-3's 32, spends most of a decode step at depth there otherwise). Tiles are shorter
/// (``fusedAttentionTileKeys(kvWidth:)``) so that a tile of whole rows stays near the core.
///
/// Two shapes of the score product:
/// - **wide** (more than ``fusedAttentionNarrowRows`` rows, prompts): the scaled queries are
///   packed once per call into panels of 16 rows (panel p, element d: 16 lanes, one per row),
///   so Sᵀ = K·Qᵀ is a register-tiled product, six keys × 16 rows per block of accumulators, and
///   the online softmax runs on 16 rows per vector.
/// - **narrow** (decode: a token's few heads): per key, the dot with each row over headDim lanes
///   (the key row is loaded once for four rows).
/// O += P·V is a 6-row × 16-column register tile either way.

/// Keys (and values) per tile, at most (one KV head's tiles).
public let fusedAttentionKeyTile = 64

/// Keys per tile when each loaded key row holds `kvWidth` Floats (every KV head's, or one):
/// ``fusedAttentionKeyTile``, fewer for rows wider than 256 so that a key tile takes at most
/// 64 KiB (at least 4 keys). Measured on the Phi-3.5 shape (rows of 3072, tg32 at depth 4096,
/// 2 threads): 21-key tiles 3.97 tokens/s, 8 keys 4.28–4.58, 4 keys 4.61, 2 keys 4.54.
@inlinable public func fusedAttentionTileKeys(kvWidth: Int) -> Int {
    max(4, min(fusedAttentionKeyTile, 16384 / max(1, kvWidth)))
}

/// Query rows at or below which the score product takes the narrow (per-key dot) shape.
public let fusedAttentionNarrowRows = 8

/// The shape of one fused-attention call (see ``fusedAttentionBody``).
public struct FusedAttentionShape: Sendable {
    /// Consecutive query positions in the tile.
    public var tokens: Int
    /// Query heads sharing the key/value head (rows per token).
    public var groupHeads: Int
    /// Elements per head.
    public var headDim: Int
    /// Position of the first token.
    public var firstPosition: Int
    /// First key position any row may see.
    public var keyStart: Int
    /// One past the last key position any row may see (rows see at most their own position).
    public var keyEnd: Int
    /// Sliding window (a row sees the last `window` positions up to its own); 0: none.
    public var window: Int
    /// Multiplies q·k.
    public var scale: Float
    /// Floats between tokens in the queries (head g of token t at `q + t·qStride + g·headDim`).
    public var qStride: Int
    /// Floats between tokens in the output (same layout as the queries).
    public var outStride: Int
    /// Key/value heads the rows span: 1, every row reads the same one; more, each loaded key row
    /// holds this many heads and query head g reads head g / (groupHeads / kvHeads) (a divisor
    /// of `groupHeads`). Always the narrow score shape.
    public var kvHeads: Int

    public init(
        tokens: Int, groupHeads: Int, headDim: Int, firstPosition: Int, keyStart: Int, keyEnd: Int, window: Int,
        scale: Float, qStride: Int, outStride: Int, kvHeads: Int = 1
    ) {
        self.tokens = tokens
        self.groupHeads = groupHeads
        self.headDim = headDim
        self.firstPosition = firstPosition
        self.keyStart = keyStart
        self.keyEnd = keyEnd
        self.window = window
        self.scale = scale
        self.qStride = qStride
        self.outStride = outStride
        self.kvHeads = kvHeads
    }

    /// Query rows (tokens × groupHeads).
    @inlinable public var rows: Int { tokens * groupHeads }

    /// Floats of one loaded key (or value) row: `kvHeads · headDim`.
    @inlinable public var kvWidth: Int { kvHeads * headDim }

    /// The first key token `t` sees (before `keyStart` is applied).
    @inlinable public func firstVisible(_ t: Int) -> Int {
        window > 0 ? max(keyStart, firstPosition + t - window + 1) : keyStart
    }

    /// One past the last key token `t` sees.
    @inlinable public func endVisible(_ t: Int) -> Int { min(keyEnd, firstPosition + t + 1) }
}

/// Floats of scratch one call with up to `rows` query rows of `headDim` over `kvHeads` KV heads
/// needs: what ``fusedAttentionBody`` uses (``fusedAttentionBodyScratchFloats(rows:headDim:kvHeads:)``),
/// then room for the queries quantized to 8 bits when the keys are a quantized cache's
/// (``FusedAttentionQueryQuants``).
@inlinable
public func fusedAttentionScratchFloats(rows: Int, headDim: Int, kvHeads: Int = 1) -> Int {
    fusedAttentionBodyScratchFloats(rows: rows, headDim: headDim, kvHeads: kvHeads)
        + FusedAttentionQueryQuants.floats(rows: rows, headDim: headDim)
}

/// Floats of scratch ``fusedAttentionBody`` itself uses for `rows` query rows of `headDim` over
/// `kvHeads` KV heads (packed queries, O, a K and a V tile of whole rows, Sᵀ, m, l); the caller's
/// part of the scratch follows.
@inlinable
public func fusedAttentionBodyScratchFloats(rows: Int, headDim: Int, kvHeads: Int = 1) -> Int {
    let padded = (rows + 15) / 16 * 16
    let kvWidth = kvHeads * headDim, tileKeys = fusedAttentionTileKeys(kvWidth: kvWidth)
    return 2 * padded * headDim + 2 * tileKeys * kvWidth + tileKeys * padded + 2 * padded
}

/// Where a fused-attention call over a quantized cache keeps its queries as 8-bit blocks (one
/// quantization per call, for the integer key dots; HearthKernelsCommon's `quantizeKVQuery`):
/// per row, `quantBytes(headDim)` quants (zero-padded to a multiple of 64, as the VNNI kernel
/// loads 64 at a time) and `scaleFloats(headDim)` block scales (zero-padded to a multiple of 16:
/// one vector), then one key tile of scores for the row being computed.
public enum FusedAttentionQueryQuants {
    /// Bytes of one row's quants.
    @inlinable public static func quantBytes(headDim: Int) -> Int { (headDim + 63) / 64 * 64 }
    /// Floats of one row's block scales.
    @inlinable public static func scaleFloats(headDim: Int) -> Int { max(16, (headDim / 32 + 15) / 16 * 16) }
    /// Floats the region takes for `rows` rows.
    @inlinable public static func floats(rows: Int, headDim: Int) -> Int {
        rows * (quantBytes(headDim: headDim) / 4 + scaleFloats(headDim: headDim)) + fusedAttentionKeyTile
    }
}

/// e^x for sixteen lanes (``exp8`` on each half); lanes below −87 (and −∞) give exactly 0, so
/// masked scores and empty rows contribute nothing.
@_transparent  // forced inline: an out-of-line copy would run baseline code inside a level's kernel
public func exp16(_ x: SIMD16<Float>) -> SIMD16<Float> {
    var e = SIMD16<Float>(lowHalf: exp8(x.lowHalf), highHalf: exp8(x.highHalf))
    e.replace(with: 0, where: x .< -87)
    return e
}

/// The fused attention of one query tile (see the file's comment): writes each row's normalised
/// output to `out` (rows with no visible key: zeros) and, when `logSumExp` is given, m + ln l
/// per row (−∞ for an empty row) at index r = t·groupHeads + g, so that partial results over
/// disjoint key ranges can be merged. `load(first, count, keys, values)` fills `count` rows of
/// `headDim` Floats each for the positions `first…`. `scratch` holds
/// ``fusedAttentionBodyScratchFloats(rows:headDim:)`` floats. `fused`: use FMA (`addProduct`), as
/// ``sgemmBody``.
///
/// With `scoresKeys`, `keyScores` computes each tile's scores instead of the Float products:
/// `keyScores(first, count, s, ldS)` writes scale · q_r·k_j to `s[j·ldS + r]` for the tile's
/// keys j (`first + j`) and every row r (how a quantized cache's keys are dotted with integer
/// kernels); `load` then only needs to fill the values. Without, `keyScores` is not called.
@inlinable @inline(__always)
public func fusedAttentionBody(
    _ q: UnsafePointer<Float>, out: UnsafeMutablePointer<Float>, logSumExp: UnsafeMutablePointer<Float>?,
    shape: FusedAttentionShape, scratch: UnsafeMutablePointer<Float>,
    scoresKeys: Bool, keyScores: (Int, Int, UnsafeMutablePointer<Float>, Int) -> Void,
    load: (Int, Int, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void, fused: Bool
) {
    let rows = shape.rows, hd = shape.headDim, g = shape.groupHeads
    let kvHeads = shape.kvHeads, kvWidth = shape.kvWidth
    guard rows > 0, hd > 0, kvHeads > 0, g % kvHeads == 0 else { return }
    let padded = (rows + 15) / 16 * 16
    let tileKeys = fusedAttentionTileKeys(kvWidth: kvWidth)
    // Scratch: packed queries | O | K tile | V tile | Sᵀ (keys × padded) | m | l.
    let qp = scratch
    let o = qp + padded * hd
    let kt = o + padded * hd
    let vt = kt + tileKeys * kvWidth
    let st = vt + tileKeys * kvWidth
    let mRun = st + tileKeys * padded
    let lRun = mRun + padded
    let narrow = kvHeads > 1 || rows <= fusedAttentionNarrowRows
    // Rows that read the same KV head come in runs: all rows (one KV head), or each token's
    // groupHeads / kvHeads heads of one KV head (run k: token k / kvHeads, KV head k % kvHeads).
    let runRows = kvHeads == 1 ? rows : g / kvHeads
    let runs = rows / runRows

    // Queries, scaled: narrow, row after row; wide, in panels of 16 rows (padding rows zero).
    if scoresKeys {
        // The caller scores the keys from its own form of the queries.
    } else if narrow {
        for r in 0..<rows {
            let src = q + (r / g) * shape.qStride + (r % g) * hd
            for d in 0..<hd { qp[r * hd + d] = src[d] * shape.scale }
        }
    } else {
        qp.update(repeating: 0, count: padded * hd)
        for r in 0..<rows {
            let src = q + (r / g) * shape.qStride + (r % g) * hd
            let panel = qp + (r / 16) * hd * 16 + r % 16
            for d in 0..<hd { panel[d * 16] = src[d] * shape.scale }
        }
    }
    o.update(repeating: 0, count: rows * hd)
    mRun.update(repeating: -.infinity, count: padded)
    lRun.update(repeating: 0, count: padded)
    st.update(repeating: 0, count: tileKeys * padded)

    // The keys any row sees, and the range every row sees.
    let lo = shape.firstVisible(0), hi = shape.endVisible(shape.tokens - 1)
    let allFrom = shape.firstVisible(shape.tokens - 1), allTo = shape.endVisible(0)
    var j0 = lo
    while j0 < hi {
        let count = min(tileKeys, hi - j0)
        load(j0, count, kt, vt)

        // Sᵀ[j][r] = q_r · k_j (scaled queries).
        if scoresKeys {
            keyScores(j0, count, st, padded)
        } else if narrow {
            for run in 0..<runs {
                let first = run * runRows
                narrowScores(
                    qp + first * hd, rows: runRows, keys: kt + (run % kvHeads) * hd, keyStride: kvWidth, count: count,
                    headDim: hd, into: st + first, ldS: padded, fused: fused)
            }
        } else {
            var pb = 0
            while pb < padded {
                var jb = 0
                while jb < count {
                    scoreBlock(
                        keys: kt + jb * hd, keyCount: min(6, count - jb), panel: qp + pb * hd, headDim: hd,
                        into: st + jb * padded + pb, ldS: padded, fused: fused)
                    jb += 6
                }
                pb += 16
            }
        }
        // Mask the keys a row does not see (only tiles on the diagonal or the window's edge).
        if j0 < allFrom || j0 + count > allTo {
            for r in 0..<rows {
                let t = r / g
                let first = shape.firstVisible(t), end = shape.endVisible(t)
                for j in 0..<count where j0 + j < first || j0 + j >= end { st[j * padded + r] = -.infinity }
            }
        }

        // Online softmax, 16 rows per vector: new maxima, rescale factors, P = e^(S − m), l.
        let raw = UnsafeMutableRawPointer(st)
        let rawM = UnsafeMutableRawPointer(mRun), rawL = UnsafeMutableRawPointer(lRun)
        var pb = 0
        while pb < padded {
            let mOld = rawM.loadUnaligned(fromByteOffset: 4 * pb, as: SIMD16<Float>.self)
            var mNew = mOld
            for j in 0..<count {
                // Not `pointwiseMax`: the stdlib's specialization is emitted under a shared symbol
                // that a level module's copy (AVX-512 code) could stand in for on every CPU.
                let s = raw.loadUnaligned(fromByteOffset: 4 * (j * padded + pb), as: SIMD16<Float>.self)
                mNew.replace(with: s, where: s .> mNew)
            }
            // A row that has seen nothing yet subtracts 0 (its scores are all −∞).
            var reference = mNew
            reference.replace(with: 0, where: mNew .== -.infinity)
            let correction = exp16(mOld - reference)
            var sum = SIMD16<Float>()
            for j in 0..<count {
                let offset = 4 * (j * padded + pb)
                let p = exp16(raw.loadUnaligned(fromByteOffset: offset, as: SIMD16<Float>.self) - reference)
                raw.storeBytes(of: p, toByteOffset: offset, as: SIMD16<Float>.self)
                sum += p
            }
            let l = rawL.loadUnaligned(fromByteOffset: 4 * pb, as: SIMD16<Float>.self)
            rawL.storeBytes(of: l * correction + sum, toByteOffset: 4 * pb, as: SIMD16<Float>.self)
            rawM.storeBytes(of: mNew, toByteOffset: 4 * pb, as: SIMD16<Float>.self)
            for lane in 0..<16 where pb + lane < rows && correction[lane] != 1 {
                let row = o + (pb + lane) * hd
                let c = correction[lane]
                for d in 0..<hd { row[d] *= c }
            }
            pb += 16
        }

        // O += P · V, six rows (of one run) × sixteen columns per block of accumulators.
        for run in 0..<runs {
            let values = vt + (run % kvHeads) * hd
            var ib = run * runRows
            let runEnd = ib + runRows
            while ib < runEnd {
                let mr = min(6, runEnd - ib)
                var jb = 0
                while jb + 16 <= hd {
                    valueBlock(
                        probabilities: st + ib, ldS: padded, rows: mr, values: values + jb, valueStride: kvWidth,
                        headDim: hd, count: count, into: o + ib * hd + jb, fused: fused)
                    jb += 16
                }
                if jb < hd {
                    for i in 0..<mr {
                        for j in 0..<count {
                            let p = st[j * padded + ib + i]
                            for d in jb..<hd { o[(ib + i) * hd + d] += p * values[j * kvWidth + d] }
                        }
                    }
                }
                ib += 6
            }
        }
        j0 += count
    }

    // Normalise and write out: O / l, m + ln l.
    for r in 0..<rows {
        let dst = out + (r / g) * shape.outStride + (r % g) * hd
        let l = lRun[r]
        let inv: Float = l > 0 ? 1 / l : 0
        for d in 0..<hd { dst[d] = o[r * hd + d] * inv }
        if let logSumExp {
            logSumExp[r] = l > 0 ? mRun[r] + logApproximation(l) : -.infinity
        }
    }
}

/// ln x for x > 0, to Float precision (the exponent split off, ln of the mantissa in [√½, √2)
/// by the series 2·atanh((m−1)/(m+1)) to the 13th power: error below 1e-7 relative).
@inlinable @inline(__always)
public func logApproximation(_ x: Float) -> Float {
    var e = Int(x.exponent)
    var m = Double(x.significand)
    if m > 1.414_213_562 {
        m /= 2
        e += 1
    }
    let z = (m - 1) / (m + 1), z2 = z * z
    var series = 1.0 / 13
    for k in stride(from: 11, through: 1, by: -2) { series = series * z2 + 1.0 / Double(k) }
    return Float(2 * z * series + Double(e) * 0.693_147_180_559_945_3)
}

/// Sᵀ block: `keyCount` ≤ 6 keys (rows `headDim` apart) against one 16-row query panel.
@_transparent
public func scoreBlock(
    keys: UnsafePointer<Float>, keyCount: Int, panel: UnsafePointer<Float>, headDim: Int,
    into s: UnsafeMutablePointer<Float>, ldS: Int, fused: Bool
) {
    // Keys past the end repeat the last one (computed, never stored).
    let k0 = keys, k1 = keys + min(1, keyCount - 1) * headDim, k2 = keys + min(2, keyCount - 1) * headDim
    let k3 = keys + min(3, keyCount - 1) * headDim, k4 = keys + min(4, keyCount - 1) * headDim
    let k5 = keys + min(5, keyCount - 1) * headDim
    var c0 = SIMD16<Float>(), c1 = SIMD16<Float>(), c2 = SIMD16<Float>()
    var c3 = SIMD16<Float>(), c4 = SIMD16<Float>(), c5 = SIMD16<Float>()
    let rp = UnsafeRawPointer(panel)
    for d in 0..<headDim {
        let v = rp.loadUnaligned(fromByteOffset: d * 64, as: SIMD16<Float>.self)
        if fused {
            c0.addProduct(k0[d], v)
            c1.addProduct(k1[d], v)
            c2.addProduct(k2[d], v)
            c3.addProduct(k3[d], v)
            c4.addProduct(k4[d], v)
            c5.addProduct(k5[d], v)
        } else {
            c0 += v * k0[d]
            c1 += v * k1[d]
            c2 += v * k2[d]
            c3 += v * k3[d]
            c4 += v * k4[d]
            c5 += v * k5[d]
        }
    }
    let raw = UnsafeMutableRawPointer(s)
    raw.storeBytes(of: c0, as: SIMD16<Float>.self)
    if keyCount > 1 { raw.storeBytes(of: c1, toByteOffset: 4 * ldS, as: SIMD16<Float>.self) }
    if keyCount > 2 { raw.storeBytes(of: c2, toByteOffset: 8 * ldS, as: SIMD16<Float>.self) }
    if keyCount > 3 { raw.storeBytes(of: c3, toByteOffset: 12 * ldS, as: SIMD16<Float>.self) }
    if keyCount > 4 { raw.storeBytes(of: c4, toByteOffset: 16 * ldS, as: SIMD16<Float>.self) }
    if keyCount > 5 { raw.storeBytes(of: c5, toByteOffset: 20 * ldS, as: SIMD16<Float>.self) }
}

/// Sᵀ[j][r] = q_r · k_j for a few rows (row-major scaled queries), four rows per pass over a key;
/// key j at `keys + j·keyStride`.
@_transparent
public func narrowScores(
    _ q: UnsafePointer<Float>, rows: Int, keys: UnsafePointer<Float>, keyStride: Int, count: Int, headDim hd: Int,
    into s: UnsafeMutablePointer<Float>, ldS: Int, fused: Bool
) {
    let rq = UnsafeRawPointer(q)
    var r0 = 0
    while r0 < rows {
        let n = min(4, rows - r0)
        if n == 1 {
            // The last (or only) row alone: one accumulator, not the four-row pass repeating it
            // (a whole-row call of a model without grouped heads has only such runs).
            for j in 0..<count {
                let rk = UnsafeRawPointer(keys + j * keyStride)
                var a = SIMD16<Float>()
                var d = 0
                while d + 16 <= hd {
                    let k = rk.loadUnaligned(fromByteOffset: 4 * d, as: SIMD16<Float>.self)
                    let x = rq.loadUnaligned(fromByteOffset: 4 * (r0 * hd + d), as: SIMD16<Float>.self)
                    if fused { a.addProduct(x, k) } else { a += x * k }
                    d += 16
                }
                var sum = a.sum()
                while d < hd {
                    sum += q[r0 * hd + d] * keys[j * keyStride + d]
                    d += 1
                }
                s[j * ldS + r0] = sum
            }
            return
        }
        let q0 = r0 * hd, q1 = (r0 + min(1, n - 1)) * hd, q2 = (r0 + min(2, n - 1)) * hd, q3 = (r0 + min(3, n - 1)) * hd
        for j in 0..<count {
            let rk = UnsafeRawPointer(keys + j * keyStride)
            var a0 = SIMD16<Float>(), a1 = SIMD16<Float>(), a2 = SIMD16<Float>(), a3 = SIMD16<Float>()
            var d = 0
            while d + 16 <= hd {
                let k = rk.loadUnaligned(fromByteOffset: 4 * d, as: SIMD16<Float>.self)
                let x0 = rq.loadUnaligned(fromByteOffset: 4 * (q0 + d), as: SIMD16<Float>.self)
                let x1 = rq.loadUnaligned(fromByteOffset: 4 * (q1 + d), as: SIMD16<Float>.self)
                let x2 = rq.loadUnaligned(fromByteOffset: 4 * (q2 + d), as: SIMD16<Float>.self)
                let x3 = rq.loadUnaligned(fromByteOffset: 4 * (q3 + d), as: SIMD16<Float>.self)
                if fused {
                    a0.addProduct(x0, k)
                    a1.addProduct(x1, k)
                    a2.addProduct(x2, k)
                    a3.addProduct(x3, k)
                } else {
                    a0 += x0 * k
                    a1 += x1 * k
                    a2 += x2 * k
                    a3 += x3 * k
                }
                d += 16
            }
            var sums = (a0.sum(), a1.sum(), a2.sum(), a3.sum())
            while d < hd {
                let k = keys[j * keyStride + d]
                sums.0 += q[q0 + d] * k
                sums.1 += q[q1 + d] * k
                sums.2 += q[q2 + d] * k
                sums.3 += q[q3 + d] * k
                d += 1
            }
            let row = s + j * ldS + r0
            row[0] = sums.0
            if n > 1 { row[1] = sums.1 }
            if n > 2 { row[2] = sums.2 }
            if n > 3 { row[3] = sums.3 }
        }
        r0 += 4
    }
}

/// O block += P · V: `rows` ≤ 6 query rows (P element (i, j) at `probabilities[j·ldS + i]`) ×
/// 16 columns of V (rows `valueStride` apart), over `count` keys; O rows `headDim` apart.
@_transparent
public func valueBlock(
    probabilities p: UnsafePointer<Float>, ldS: Int, rows: Int, values: UnsafePointer<Float>, valueStride: Int,
    headDim: Int, count: Int,
    into o: UnsafeMutablePointer<Float>, fused: Bool
) {
    let ro = UnsafeMutableRawPointer(o)
    let rv = UnsafeRawPointer(values)
    if rows == 1 {
        // One row: one accumulator (the six-row block would repeat it six times).
        var c = ro.loadUnaligned(as: SIMD16<Float>.self)
        for j in 0..<count {
            let v = rv.loadUnaligned(fromByteOffset: 4 * j * valueStride, as: SIMD16<Float>.self)
            if fused { c.addProduct(p[j * ldS], v) } else { c += v * p[j * ldS] }
        }
        ro.storeBytes(of: c, as: SIMD16<Float>.self)
        return
    }
    let i1 = min(1, rows - 1), i2 = min(2, rows - 1), i3 = min(3, rows - 1), i4 = min(4, rows - 1), i5 = min(5, rows - 1)
    var c0 = ro.loadUnaligned(as: SIMD16<Float>.self)
    var c1 = ro.loadUnaligned(fromByteOffset: 4 * i1 * headDim, as: SIMD16<Float>.self)
    var c2 = ro.loadUnaligned(fromByteOffset: 4 * i2 * headDim, as: SIMD16<Float>.self)
    var c3 = ro.loadUnaligned(fromByteOffset: 4 * i3 * headDim, as: SIMD16<Float>.self)
    var c4 = ro.loadUnaligned(fromByteOffset: 4 * i4 * headDim, as: SIMD16<Float>.self)
    var c5 = ro.loadUnaligned(fromByteOffset: 4 * i5 * headDim, as: SIMD16<Float>.self)
    for j in 0..<count {
        let v = rv.loadUnaligned(fromByteOffset: 4 * j * valueStride, as: SIMD16<Float>.self)
        let row = p + j * ldS
        if fused {
            c0.addProduct(row[0], v)
            c1.addProduct(row[i1], v)
            c2.addProduct(row[i2], v)
            c3.addProduct(row[i3], v)
            c4.addProduct(row[i4], v)
            c5.addProduct(row[i5], v)
        } else {
            c0 += v * row[0]
            c1 += v * row[i1]
            c2 += v * row[i2]
            c3 += v * row[i3]
            c4 += v * row[i4]
            c5 += v * row[i5]
        }
    }
    ro.storeBytes(of: c0, as: SIMD16<Float>.self)
    if rows > 1 { ro.storeBytes(of: c1, toByteOffset: 4 * headDim, as: SIMD16<Float>.self) }
    if rows > 2 { ro.storeBytes(of: c2, toByteOffset: 8 * headDim, as: SIMD16<Float>.self) }
    if rows > 3 { ro.storeBytes(of: c3, toByteOffset: 12 * headDim, as: SIMD16<Float>.self) }
    if rows > 4 { ro.storeBytes(of: c4, toByteOffset: 16 * headDim, as: SIMD16<Float>.self) }
    if rows > 5 { ro.storeBytes(of: c5, toByteOffset: 20 * headDim, as: SIMD16<Float>.self) }
}
