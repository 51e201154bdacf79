import Foundation
import HearthKernelsCommon

/// Attention over the KV cache for one query head: scores against a range of cached keys,
/// and the score-weighted sum of the cached values. Keys and values are rows `stride` bytes
/// apart (position j at `base + j·stride`), stored as f16 or f32. f16 goes through the level's
/// build of the kernel (``KernelTable``; AVX-512: sixteen lanes with `vcvtph2ps`; AVX2 and
/// portable: the HearthKernelsCommon loops compiled for each); f32 through the float dot.
/// `level` (default ``KernelLevel/current``) picks another level's kernels, for tests.

/// s[j] = scale · (q · key j) for j in `positions`.
public func attentionScores(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    scale: Float, type: DType, into s: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    let kernels = KernelTable.at(level)
    if type == .f16 {
        kernels.attentionScoresF16(q, keys, stride, positions.lowerBound, positions.upperBound, headDim, scale, s)
        return
    }
    for j in positions { s[j] = kernels.dotFloats(q, (keys + j * stride).assumingMemoryBound(to: Float.self), headDim) * scale }
}

/// out = Σ_{j in positions} s[j] · value j (`headDim` floats, overwritten).
public func attentionValues(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    type: DType, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    if type == .f16 {
        let kernels = KernelTable.at(level)
        kernels.attentionValuesF16(s, values, stride, positions.lowerBound, positions.upperBound, headDim, out)
        return
    }
    out.update(repeating: 0, count: headDim)
    for j in positions {
        let v = (values + j * stride).assumingMemoryBound(to: Float.self)
        for i in 0..<headDim { out[i] += s[j] * v[i] }
    }
}

/// Converts `count` cached elements of `type` (f32 or f16) to Float.
public func loadCached(
    _ src: UnsafeRawPointer, type: DType, count: Int, into out: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    if type == .f32 {
        out.update(from: src.assumingMemoryBound(to: Float.self), count: count)
        return
    }
    let kernels = KernelTable.at(level)
    kernels.halfToFloats(src, count, out)
}

/// Stores `count` floats as `type` (f32 or f16, round to nearest even).
@inline(__always)
public func storeCached(_ x: UnsafePointer<Float>, type: DType, count: Int, into dst: UnsafeMutableRawPointer) {
    if type == .f32 {
        dst.assumingMemoryBound(to: Float.self).update(from: x, count: count)
    } else {
        let h = dst.assumingMemoryBound(to: UInt16.self)
        for i in 0..<count { h[i] = floatToHalf(x[i]) }
    }
}

/// Scalar reference of ``attentionScores(_:keys:stride:positions:headDim:scale:type:into:level:)``
/// for an f16 or f32 cache: each score a dot product summed in Double from the stored values,
/// written from the definition (not through any kernel), the twin the level kernels are tested against.
public func attentionScoresReference(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    scale: Float, type: DType, into s: UnsafeMutablePointer<Float>
) {
    for j in positions {
        let row = keys + j * stride
        var sum: Double = 0
        for i in 0..<headDim { sum += Double(q[i]) * Double(cachedElement(row, i, type: type)) }
        s[j] = Float(sum * Double(scale))
    }
}

/// Scalar reference of ``attentionValues(_:values:stride:positions:headDim:type:into:level:)``:
/// every output element Σ_j s[j]·v[j][i] summed in Double.
public func attentionValuesReference(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    type: DType, into out: UnsafeMutablePointer<Float>
) {
    for i in 0..<headDim {
        var sum: Double = 0
        for j in positions { sum += Double(s[j]) * Double(cachedElement(values + j * stride, i, type: type)) }
        out[i] = Float(sum)
    }
}

/// Element `i` of a cached row of `type` (f16 decoded bit by bit from its IEEE fields, so the
/// references share no code with the kernels' conversion), as Float.
private func cachedElement(_ row: UnsafeRawPointer, _ i: Int, type: DType) -> Float {
    if type == .f32 { return row.loadUnaligned(fromByteOffset: 4 * i, as: Float.self) }
    let bits = row.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)
    let sign: Float = bits & 0x8000 != 0 ? -1 : 1
    let exponent = Int((bits >> 10) & 0x1f), fraction = Float(bits & 0x3ff)
    switch exponent {
    case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)  // subnormal: f·2⁻²⁴
    case 31: return fraction == 0 ? sign * .infinity : .nan
    default: return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
    }
}

/// Fused attention of one query tile straight from the cache (``fusedAttentionBody``: online
/// softmax over tiles of ``fusedAttentionKeyTile`` keys, no score row as long as the context):
/// for row r = t·groupHeads + g, out = softmax(scale · q_r·Kᵀ over the keys it sees) · V.
/// `keys`/`values` point at position 0 of the key/value head's rows, `stride` bytes apart, of
/// `type`; tiles are converted with ``loadCached(_:type:count:into:level:)``, so any type it
/// reads works. `logSumExp` (optional, `shape.rows` floats) receives m + ln Σe^(s−m) per row, for
/// merging partial results over disjoint key ranges (``mergeAttention``). `scratch` holds
/// ``fusedAttentionScratchFloats(rows:headDim:)`` floats for `shape.rows`.
public func fusedAttention(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, values: UnsafeRawPointer, stride: Int, type: DType,
    shape: FusedAttentionShape, into out: UnsafeMutablePointer<Float>, logSumExp: UnsafeMutablePointer<Float>? = nil,
    scratch: UnsafeMutablePointer<Float>, level: KernelLevel = .current
) {
    let hd = shape.headDim
    let kernels = KernelTable.at(level)
    // f16 and f32 rows convert through the level's kernel fetched once here (a table lookup per
    // row cost more than the conversion); any other cache type goes through `loadCached`.
    let halfToFloats = kernels.halfToFloats
    kernels.fusedAttention(q, out, logSumExp, shape, scratch) { first, count, k, v in
        switch type {
        case .f16:
            for j in 0..<count {
                halfToFloats(keys + (first + j) * stride, hd, k + j * hd)
                halfToFloats(values + (first + j) * stride, hd, v + j * hd)
            }
        case .f32:
            for j in 0..<count {
                (k + j * hd).update(from: (keys + (first + j) * stride).assumingMemoryBound(to: Float.self), count: hd)
                (v + j * hd).update(from: (values + (first + j) * stride).assumingMemoryBound(to: Float.self), count: hd)
            }
        default:
            for j in 0..<count {
                loadCached(keys + (first + j) * stride, type: type, count: hd, into: k + j * hd, level: level)
                loadCached(values + (first + j) * stride, type: type, count: hd, into: v + j * hd, level: level)
            }
        }
    }
}

/// Joins `parts` partial attention results of the same `rows` over disjoint key ranges: part p's
/// normalised output row r at `outputs + (p·rows + r)·headDim`, its log-sum-exp at
/// `logSumExps[p·rows + r]`. Row r of the whole is Σ_p w_p·O_p with w_p = e^(lse_p − lse),
/// lse = ln Σ_p e^(lse_p), written to `out + (r / groupHeads)·outStride + (r % groupHeads)·headDim`.
public func mergeAttention(
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

/// Scalar reference of ``fusedAttention(_:keys:values:stride:type:shape:into:logSumExp:scratch:level:)``,
/// written from the definition: per row, every visible score in Double, the softmax in Double,
/// the weighted sum of the values in Double (f16 decoded from its bit fields). Rows that see no
/// key get zeros (and −∞ as log-sum-exp).
public func fusedAttentionReference(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, values: UnsafeRawPointer, stride: Int, type: DType,
    shape: FusedAttentionShape, into out: UnsafeMutablePointer<Float>, logSumExp: UnsafeMutablePointer<Float>? = nil
) {
    let hd = shape.headDim
    for t in 0..<shape.tokens {
        let position = shape.firstPosition + t
        var first = shape.keyStart
        if shape.window > 0 { first = max(first, position - shape.window + 1) }
        let end = min(shape.keyEnd, position + 1)
        for g in 0..<shape.groupHeads {
            let qr = q + t * shape.qStride + g * hd
            let dst = out + t * shape.outStride + g * hd
            let r = t * shape.groupHeads + g
            guard first < end else {
                for d in 0..<hd { dst[d] = 0 }
                logSumExp?[r] = -.infinity
                continue
            }
            var scores: [Double] = []
            for j in first..<end {
                var dot: Double = 0
                for d in 0..<hd { dot += Double(qr[d]) * Double(cachedElement(keys + j * stride, d, type: type)) }
                scores.append(dot * Double(shape.scale))
            }
            let top = scores.max() ?? 0
            let weights = scores.map { Foundation.exp($0 - top) }
            let total = weights.reduce(0, +)
            for d in 0..<hd {
                var sum: Double = 0
                for (i, j) in (first..<end).enumerated() {
                    sum += weights[i] * Double(cachedElement(values + j * stride, d, type: type))
                }
                dst[d] = Float(sum / total)
            }
            logSumExp?[r] = Float(top + Foundation.log(total))
        }
    }
}
