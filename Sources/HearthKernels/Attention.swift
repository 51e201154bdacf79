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
