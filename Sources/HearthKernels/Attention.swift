import HearthKernelsCommon
import HearthKernelsCommon
#if arch(x86_64)
import HearthKernelsAVX2
import HearthKernelsAVX512
#endif

/// Attention over the KV cache for one query head: scores against a range of cached keys,
/// and the score-weighted sum of the cached values. Keys and values are rows `stride` bytes
/// apart (position j at `base + j·stride`), stored as f16 or f32. The AVX-512 level converts
/// f16 sixteen lanes at a time; other levels use the portable loops below.

/// s[j] = scale · (q · key j) for j in `positions`.
public func attentionScores(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    scale: Float, type: DType, into s: UnsafeMutablePointer<Float>
) {
    #if arch(x86_64)
    if type == .f16 && KernelLevel.current >= .avx512 {
        hearthAttentionScoresF16AVX512(
            q, keys: keys, stride: stride, first: positions.lowerBound, last: positions.upperBound, headDim: headDim,
            scale: scale, into: s)
        return
    }
    if type == .f16 && KernelLevel.current >= .avx2 {
        hearthAttentionScoresF16AVX2(
            q, keys: keys, stride: stride, first: positions.lowerBound, last: positions.upperBound, headDim: headDim,
            scale: scale, into: s)
        return
    }
    #endif
    if type == .f16 {
        attentionScoresF16(q, keys: keys, stride: stride, positions: positions, headDim: headDim, scale: scale, into: s)
        return
    }
    for j in positions { s[j] = dotCached(q, keys + j * stride, headDim, type: type) * scale }
}

/// out = Σ_{j in positions} s[j] · value j (`headDim` floats, overwritten).
public func attentionValues(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim: Int,
    type: DType, into out: UnsafeMutablePointer<Float>
) {
    #if arch(x86_64)
    if type == .f16 && KernelLevel.current >= .avx512 {
        hearthAttentionValuesF16AVX512(
            s, values: values, stride: stride, first: positions.lowerBound, last: positions.upperBound, headDim: headDim,
            into: out)
        return
    }
    if type == .f16 && KernelLevel.current >= .avx2 {
        hearthAttentionValuesF16AVX2(
            s, values: values, stride: stride, first: positions.lowerBound, last: positions.upperBound, headDim: headDim,
            into: out)
        return
    }
    #endif
    if type == .f16 {
        attentionValuesF16(s, values: values, stride: stride, positions: positions, headDim: headDim, into: out)
        return
    }
    out.update(repeating: 0, count: headDim)
    for j in positions { accumulateCached(out, values + j * stride, weight: s[j], headDim, type: type) }
}

/// Dot product of a Float query with one cached key stored as `type` (f32 or f16); portable.
@inline(__always)
public func dotCached(_ q: UnsafePointer<Float>, _ k: UnsafeRawPointer, _ n: Int, type: DType) -> Float {
    if type == .f32 { return dotF32(q, k.assumingMemoryBound(to: Float.self), n) }
    let h = k.assumingMemoryBound(to: UInt16.self)
    var sum: Float = 0
    for i in 0..<n { sum += q[i] * halfToFloat(h[i]) }
    return sum
}

/// out[i] += weight · v[i] for a cached value vector stored as `type`; portable.
@inline(__always)
public func accumulateCached(_ out: UnsafeMutablePointer<Float>, _ v: UnsafeRawPointer, weight: Float, _ n: Int, type: DType) {
    if type == .f32 {
        let f = v.assumingMemoryBound(to: Float.self)
        for i in 0..<n { out[i] += weight * f[i] }
    } else {
        let h = v.assumingMemoryBound(to: UInt16.self)
        for i in 0..<n { out[i] += weight * halfToFloat(h[i]) }
    }
}

/// Converts `count` cached elements of `type` to Float.
public func loadCached(_ src: UnsafeRawPointer, type: DType, count: Int, into out: UnsafeMutablePointer<Float>) {
    if type == .f32 {
        out.update(from: src.assumingMemoryBound(to: Float.self), count: count)
        return
    }
    #if arch(x86_64)
    if KernelLevel.current >= .avx512 {
        hearthHalfToFloatAVX512(src, count: count, into: out)
        return
    }
    #endif
    let h = src.assumingMemoryBound(to: UInt16.self)
    for i in 0..<count { out[i] = halfToFloat(h[i]) }
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
