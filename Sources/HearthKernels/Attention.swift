import CHearthCPU
import Foundation
import HearthKernelsCommon

/// Attention over the KV cache for one query head: scores against a range of cached keys,
/// and the score-weighted sum of the cached values. Keys and values are rows `stride` bytes
/// apart (position j at `base + j·stride`), stored as f16, f32, or one quantized record per
/// head (q8_0/q4_0: headDim/32 f16 scales, then the quants; HearthKernelsCommon's KVBlocks.swift).
/// f16 goes through the level's build of the kernel (``KernelTable``; AVX-512: sixteen lanes with
/// `vcvtph2ps`; AVX2 and portable: the HearthKernelsCommon loops compiled for each); f32 through
/// the float dot; q8_0/q4_0 keys through integer dot products with the query quantized once to
/// 8-bit blocks (AVX-512 VNNI: `vpdpbusd`), values through a float sum of s[j]·d·q per block.
/// `level` (default ``KernelLevel/current``) picks another level's kernels, for tests.

extension DType {
    /// Whether the KV cache can store this type: f16, f32, q8_0 or q4_0.
    package var isKVCacheType: Bool { self == .f16 || self == .f32 || self == .q8_0 || self == .q4_0 }

    /// The quantized KV record kind (`KVKind`) of q8_0 and q4_0; nil for the float types.
    var kvKind: Int32? { self == .q8_0 ? KVKind.q8_0 : self == .q4_0 ? KVKind.q4_0 : nil }

    /// Bytes the KV cache spends on one head of `headDim` elements of this type (a quantized
    /// head is headDim/32 blocks), or nil when the type is not a KV cache type or a quantized
    /// head is not a whole number of blocks.
    package func kvHeadBytes(headDim: Int) -> Int? {
        switch self {
        case .f32: return 4 * headDim
        case .f16: return 2 * headDim
        case .q8_0, .q4_0:
            guard headDim > 0, headDim % 32 == 0, let kind = kvKind else { return nil }
            return KVKind.recordBytes(kind, count: headDim)
        default: return nil
        }
    }
}

/// Runs `body` with `q` (headDim floats) quantized to 8-bit blocks: quants padded with zeros to a
/// multiple of 64 and scales padded with zeros to a multiple of 16, on the stack.
@inline(__always)
private func withQuantizedQuery<R>(
    _ q: UnsafePointer<Float>, headDim: Int, _ body: (UnsafePointer<Int8>, UnsafePointer<Float>) -> R
) -> R {
    let quantCount = FusedAttentionQueryQuants.quantBytes(headDim: headDim)
    let scaleCount = FusedAttentionQueryQuants.scaleFloats(headDim: headDim)
    return withUnsafeTemporaryAllocation(of: Int8.self, capacity: quantCount) { quants in
        withUnsafeTemporaryAllocation(of: Float.self, capacity: scaleCount) { scales in
            let qp = quants.baseAddress.unsafelyUnwrapped, sp = scales.baseAddress.unsafelyUnwrapped
            qp.initialize(repeating: 0, count: quantCount)
            sp.initialize(repeating: 0, count: scaleCount)
            quantizeKVQuery(q, count: headDim, quants: qp, scales: sp)
            return body(qp, sp)
        }
    }
}

/// s[j] = scale · (q · key j) for j in `positions`.
package func attentionScores(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    scale: Float, type: DType, into s: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    let kernels = KernelTable.at(level)
    if type == .f16 {
        kernels.attentionScoresF16(q, keys, stride, positions.lowerBound, positions.upperBound, headDim, scale, s)
        return
    }
    if let kind = type.kvKind {
        withQuantizedQuery(q, headDim: headDim) { quants, scales in
            kernels.attentionScoresKV(
                quants, scales, keys, stride, positions.lowerBound, positions.upperBound, headDim, scale, kind, s)
        }
        return
    }
    for j in positions { s[j] = kernels.dotFloats(q, (keys + j * stride).assumingMemoryBound(to: Float.self), headDim) * scale }
}

/// out = Σ_{j in positions} s[j] · value j (`headDim` floats, overwritten).
package func attentionValues(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    type: DType, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    if type == .f16 {
        let kernels = KernelTable.at(level)
        kernels.attentionValuesF16(s, values, stride, positions.lowerBound, positions.upperBound, headDim, out)
        return
    }
    if let kind = type.kvKind {
        KernelTable.at(level).attentionValuesKV(s, values, stride, positions.lowerBound, positions.upperBound, headDim, kind, out)
        return
    }
    out.update(repeating: 0, count: headDim)
    for j in positions {
        let v = (values + j * stride).assumingMemoryBound(to: Float.self)
        for i in 0..<headDim { out[i] += s[j] * v[i] }
    }
}

/// Converts `count` cached elements of `type` to Float. For q8_0 and q4_0, `src` is one record
/// of `count` elements (a head: `count` a multiple of 32; ``KVCache``'s `headOffset`).
package func loadCached(
    _ src: UnsafeRawPointer, type: DType, count: Int, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    if type == .f32 {
        out.update(from: src.assumingMemoryBound(to: Float.self), count: count)
        return
    }
    let kernels = KernelTable.at(level)
    if let kind = type.kvKind {
        kernels.dequantizeKV(src, count, kind, out)
        return
    }
    kernels.halfToFloats(src, count, out)
}

/// Stores `count` floats as `type` (f32; f16, round to nearest even; q8_0/q4_0, one record of
/// `count` elements, a multiple of 32: see HearthKernelsCommon's `quantizeKVRecord`).
@inline(__always)
package func storeCached(
    _ x: UnsafePointer<Float>, type: DType, count: Int, into dst: UnsafeMutableRawPointer, level: KernelLevel = .current
) {
    if type == .f32 {
        dst.assumingMemoryBound(to: Float.self).update(from: x, count: count)
    } else if let kind = type.kvKind {
        KernelTable.at(level).quantizeKV(x, count, kind, dst)
    } else {
        let h = dst.assumingMemoryBound(to: UInt16.self)
        for i in 0..<count { h[i] = floatToHalf(x[i]) }
    }
}

/// Scalar reference of ``attentionScores(_:keys:stride:positions:headDim:scale:type:into:level:)``:
/// each score the dot product of the Float query with the stored keys as the cache holds them
/// (f32, f16, q8_0 or q4_0 decoded from their definitions), summed in Double, written from the
/// definition (not through any kernel), the twin the level kernels are tested against. For a
/// quantized cache the kernels also round the query to 8 bits, which this reference does not:
/// tests bound that difference separately (half a query step per element).
package func attentionScoresReference(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    scale: Float, type: DType, into s: UnsafeMutablePointer<Float>
) {
    for j in positions {
        let row = keys + j * stride
        var sum: Double = 0
        for i in 0..<headDim { sum += Double(q[i]) * Double(cachedElementReference(row, i, type: type, headDim: headDim)) }
        s[j] = Float(sum * Double(scale))
    }
}

/// Scalar reference of ``attentionValues(_:values:stride:positions:headDim:type:into:level:)``:
/// every output element Σ_j s[j]·v[j][i] summed in Double.
package func attentionValuesReference(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    type: DType, into out: UnsafeMutablePointer<Float>
) {
    for i in 0..<headDim {
        var sum: Double = 0
        for j in positions {
            sum += Double(s[j]) * Double(cachedElementReference(values + j * stride, i, type: type, headDim: headDim))
        }
        out[i] = Float(sum)
    }
}

/// Element `i` of a cached row of `type` (f16 decoded bit by bit from its IEEE fields, so the
/// references share no code with the kernels' conversion; q8_0/q4_0 from the record layout:
/// headDim/32 f16 scales, then the quants), as Float.
package func cachedElementReference(_ row: UnsafeRawPointer, _ i: Int, type: DType, headDim: Int) -> Float {
    if type == .f32 { return row.loadUnaligned(fromByteOffset: 4 * i, as: Float.self) }
    let blocks = headDim / 32, b = i / 32, e = i % 32
    if type == .q8_0 {
        let d = cachedElementReference(row, b, type: .f16, headDim: headDim)
        let stored = row.load(fromByteOffset: 2 * blocks + i, as: UInt8.self)
        return d * Float(Int(stored) - 128)
    }
    if type == .q4_0 {
        let d = cachedElementReference(row, b, type: .f16, headDim: headDim)
        let byte = row.load(fromByteOffset: 2 * blocks + 16 * b + e % 16, as: UInt8.self)
        let nibble = e < 16 ? byte % 16 : byte / 16
        return d * Float(Int(nibble) - 8)
    }
    let bits = row.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)
    let sign: Float = bits & 0x8000 != 0 ? -1 : 1
    let exponent = Int((bits >> 10) & 0x1f), fraction = Float(bits & 0x3ff)
    switch exponent {
    case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)  // subnormal: f·2⁻²⁴
    case 31: return fraction == 0 ? sign * .infinity : .nan
    default: return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
    }
}

/// How fused attention dots a q8_0/q4_0 cache's keys with the queries.
package enum QuantizedKeyDots: String, Sendable, CaseIterable {
    /// Integer dots for narrow query tiles (a decode step: at most ``fusedAttentionNarrowRows``
    /// rows), keys converted to Float for wide ones (prompts), where the Float register-tiled
    /// product is faster — as measured (benchmarks/history/2026-11-26-long-context-fused-attention.md: Gemma 3 270M,
    /// q8_0 at depth 8192, tg64 94.4 integer vs 83.4 Float tokens/s, pp4096 390.6 vs 479.8).
    case automatic = "auto"
    /// Integer dots against 8-bit queries for every tile.
    case integer
    /// Every key tile converted to Float (`dequantizeKV`).
    case float

    /// Whether a call of `rows` query rows takes the integer dots.
    @inlinable package func integer(rows: Int) -> Bool {
        switch self {
        case .automatic: return rows <= fusedAttentionNarrowRows
        case .integer: return true
        case .float: return false
        }
    }
}

/// Fused attention of one query tile straight from the cache (``fusedAttentionBody``: online
/// softmax over tiles of ``fusedAttentionTileKeys(kvWidth:)`` keys, no score row as long as the context):
/// for row r = t·groupHeads + g, out = softmax(scale · q_r·Kᵀ over the keys it sees) · V.
/// `keys`/`values` point at position 0 of the key/value head's rows, `stride` bytes apart, of
/// `type`; with `shape.kvHeads` > 1, at the first of that many heads, each `type.kvHeadBytes`
/// after the one before (a KV cache row), and every head of a row is read in one pass. f16 and
/// f32 tiles are converted to Float and multiplied in Float. q8_0/q4_0 keys
/// (one record per head) are, as `keyDots` says (``QuantizedKeyDots``), dotted with integer
/// kernels against the queries quantized once per call to 8-bit blocks (`attentionScoresKV`,
/// AVX-512 VNNI: `vpdpbusd`), or converted to Float per tile like the values always are; the
/// cache is never converted as a whole. `logSumExp` (optional, `shape.rows` floats) receives
/// m + ln Σe^(s−m) per row, for merging partial results over disjoint key ranges
/// (``mergeAttention``). `scratch` holds ``fusedAttentionScratchFloats(rows:headDim:kvHeads:)`` floats for
/// `shape.rows` and `shape.kvHeads`.
package func fusedAttention(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, values: UnsafeRawPointer, stride: Int, type: DType,
    shape: FusedAttentionShape, into out: UnsafeMutablePointer<Float>, logSumExp: UnsafeMutablePointer<Float>? = nil,
    scratch: UnsafeMutablePointer<Float>, keyDots: QuantizedKeyDots = .automatic, level: KernelLevel = .current
) {
    let hd = shape.headDim
    let kernels = KernelTable.at(level)
    // A head's slice of each cached row is a few cache lines, rows `stride` apart (a row holds
    // every KV head): while one tile is read, the next tile's slices are asked for, so a decode
    // step does not wait on each strided row in turn. (Past the last tile this asks for lines
    // nobody reads; a prefetch never faults.)
    let headBytes = type.kvHeadBytes(headDim: hd) ?? 0
    let kvHeads = shape.kvHeads, kvWidth = shape.kvWidth
    let sliceBytes = kvHeads * headBytes
    @inline(__always) func prefetchTile(after first: Int, _ count: Int) {
        // Whole rows (every KV head) are one contiguous stream the hardware prefetchers follow;
        // asking for a tile of them at once measured slower (Phi-3.5 shape, tg32 at depth 4096:
        // 3.61 with, 3.97 without, 2 threads).
        guard kvHeads == 1 else { return }
        for j in (first + count)..<(first + 2 * count) {
            hearth_prefetch(keys + j * stride, sliceBytes)
            hearth_prefetch(values + j * stride, sliceBytes)
        }
    }
    // Each conversion kernel is fetched once here (a table lookup per row cost more than the
    // conversion of an f16 row).
    if let kind = type.kvKind {
        let dequantize = kernels.dequantizeKV
        // Rows first..<first + count of `base` (each head's record) as Float rows of kvWidth.
        @inline(__always) func dequantizeTile(
            _ base: UnsafeRawPointer, _ first: Int, _ count: Int, into dst: UnsafeMutablePointer<Float>
        ) {
            for j in 0..<count {
                for h in 0..<kvHeads {
                    dequantize(base + (first + j) * stride + h * headBytes, hd, kind, dst + j * kvWidth + h * hd)
                }
            }
        }
        guard keyDots.integer(rows: shape.rows) else {
            kernels.fusedAttention(q, out, logSumExp, shape, scratch, false, { _, _, _, _ in }) { first, count, k, v in
                prefetchTile(after: first, count)
                dequantizeTile(keys, first, count, into: k)
                dequantizeTile(values, first, count, into: v)
            }
            return
        }
        // The queries as 8-bit blocks, once per call, in the caller's part of the scratch
        // (``FusedAttentionQueryQuants``): per row quants and block scales, then one tile of
        // scores. Per key tile and row the level's integer dots fill the tile, scattered into Sᵀ.
        let rows = shape.rows, g = shape.groupHeads, headsPerKV = g / kvHeads
        let quantBytes = FusedAttentionQueryQuants.quantBytes(headDim: hd)
        let scaleFloats = FusedAttentionQueryQuants.scaleFloats(headDim: hd)
        let region = scratch + fusedAttentionBodyScratchFloats(rows: rows, headDim: hd, kvHeads: kvHeads)
        let scales = region + rows * quantBytes / 4, tile = scales + rows * scaleFloats
        let scoresKV = kernels.attentionScoresKV
        region.withMemoryRebound(to: Int8.self, capacity: rows * quantBytes) { quants in
            quants.update(repeating: 0, count: rows * quantBytes)
            scales.update(repeating: 0, count: rows * scaleFloats)
            for r in 0..<rows {
                quantizeKVQuery(
                    q + (r / g) * shape.qStride + (r % g) * hd, count: hd, quants: quants + r * quantBytes,
                    scales: scales + r * scaleFloats)
            }
            kernels.fusedAttention(
                q, out, logSumExp, shape, scratch, true,
                { first, count, s, ldS in
                    prefetchTile(after: first, count)
                    let tileKeys = keys + first * stride
                    for r in 0..<rows {
                        scoresKV(
                            quants + r * quantBytes, scales + r * scaleFloats,
                            tileKeys + (r % g) / headsPerKV * headBytes, stride, 0, count - 1, hd, shape.scale, kind, tile)
                        for j in 0..<count { s[j * ldS + r] = tile[j] }
                    }
                }
            ) { first, count, _, v in dequantizeTile(values, first, count, into: v) }
        }
        return
    }
    let halfToFloats = kernels.halfToFloats
    kernels.fusedAttention(q, out, logSumExp, shape, scratch, false, { _, _, _, _ in }) { first, count, k, v in
        prefetchTile(after: first, count)
        // The float types' heads lie side by side in a row: a tile row converts in one call.
        if type == .f16 {
            for j in 0..<count {
                halfToFloats(keys + (first + j) * stride, kvWidth, k + j * kvWidth)
                halfToFloats(values + (first + j) * stride, kvWidth, v + j * kvWidth)
            }
        } else {
            for j in 0..<count {
                (k + j * kvWidth).update(
                    from: (keys + (first + j) * stride).assumingMemoryBound(to: Float.self), count: kvWidth)
                (v + j * kvWidth).update(
                    from: (values + (first + j) * stride).assumingMemoryBound(to: Float.self), count: kvWidth)
            }
        }
    }
}

/// Joins `parts` partial attention results of the same `rows` over disjoint key ranges: part p's
/// normalised output row r at `outputs + (p·rows + r)·headDim`, its log-sum-exp at
/// `logSumExps[p·rows + r]`. Row r of the whole is Σ_p w_p·O_p with w_p = e^(lse_p − lse),
/// lse = ln Σ_p e^(lse_p), written to `out + (r / groupHeads)·outStride + (r % groupHeads)·headDim`.
package func mergeAttention(
    _ outputs: UnsafePointer<Float>, logSumExps: UnsafePointer<Float>, parts: Int, rows: Int, headDim: Int,
    groupHeads: Int, into out: UnsafeMutablePointer<Float>, outStride: Int
) {
    for r in 0..<rows {
        var top = -Float.infinity
        for p in 0..<parts { top = max(top, logSumExps[p * rows + r]) }
        let dst = out + (r / groupHeads) * outStride + (r % groupHeads) * headDim
        dst.update(repeating: 0, count: headDim)
        guard top > -.infinity else { continue }
        var total: Float = 0
        for p in 0..<parts { total += expf(logSumExps[p * rows + r] - top) }
        for p in 0..<parts {
            let w = expf(logSumExps[p * rows + r] - top) / total
            guard w > 0 else { continue }
            let src = outputs + (p * rows + r) * headDim
            for d in 0..<headDim { dst[d] += w * src[d] }
        }
    }
}

/// Scalar reference of ``fusedAttention(_:keys:values:stride:type:shape:into:logSumExp:scratch:keyDots:level:)``,
/// written from the definition: per row, every visible score in Double, the softmax in Double,
/// the weighted sum of the values in Double (f16 decoded from its bit fields, q8_0/q4_0 from
/// their record layout). Rows that see no key get zeros (and −∞ as log-sum-exp). With
/// `eightBitQueries`, each query is first rounded as the integer key dots round it — per block of
/// 32, d = max|q|/127 and q = round(q · (1/d)) in Float — so the kernels' one deliberate
/// approximation is modelled rather than hidden in the tolerance.
package func fusedAttentionReference(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, values: UnsafeRawPointer, stride: Int, type: DType,
    shape: FusedAttentionShape, into out: UnsafeMutablePointer<Float>, logSumExp: UnsafeMutablePointer<Float>? = nil,
    eightBitQueries: Bool = false
) {
    let hd = shape.headDim
    // Element d of query row `qr`, as the score uses it.
    func query(_ qr: UnsafePointer<Float>, _ d: Int) -> Double {
        guard eightBitQueries else { return Double(qr[d]) }
        let block = qr + d / 32 * 32
        var amax: Float = 0
        for i in 0..<32 { amax = max(amax, abs(block[i])) }
        let step = amax / 127
        guard step != 0 else { return 0 }
        return Double(step) * Double(max(-127, min(127, (qr[d] * (1 / step)).rounded())))
    }
    for t in 0..<shape.tokens {
        let position = shape.firstPosition + t
        var first = shape.keyStart
        if shape.window > 0 { first = max(first, position - shape.window + 1) }
        let end = min(shape.keyEnd, position + 1)
        for g in 0..<shape.groupHeads {
            let qr = q + t * shape.qStride + g * hd
            let dst = out + t * shape.outStride + g * hd
            let r = t * shape.groupHeads + g
            // The KV head this query head reads, as the cache lays heads out in a row.
            let head = g / (shape.groupHeads / shape.kvHeads) * (type.kvHeadBytes(headDim: hd) ?? 0)
            guard first < end else {
                for d in 0..<hd { dst[d] = 0 }
                logSumExp?[r] = -.infinity
                continue
            }
            var scores: [Double] = []
            for j in first..<end {
                var dot: Double = 0
                for d in 0..<hd {
                    dot += query(qr, d) * Double(cachedElementReference(keys + j * stride + head, d, type: type, headDim: hd))
                }
                scores.append(dot * Double(shape.scale))
            }
            let top = scores.max() ?? 0
            let weights = scores.map { Foundation.exp($0 - top) }
            let total = weights.reduce(0, +)
            for d in 0..<hd {
                var sum: Double = 0
                for (i, j) in (first..<end).enumerated() {
                    sum += weights[i] * Double(cachedElementReference(values + j * stride + head, d, type: type, headDim: hd))
                }
                dst[d] = Float(sum / total)
            }
            logSumExp?[r] = Float(top + Foundation.log(total))
        }
    }
}
