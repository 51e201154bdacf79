import HearthKernelsCommon
#if arch(x86_64)
import HearthKernelsAVX2
import HearthKernelsAVX512
#endif

/// Attention over the KV cache for one query head: scores against a range of cached keys,
/// and the score-weighted sum of the cached values. Keys and values are rows `stride` bytes
/// apart (position j at `base + j·stride`), stored as f16 or f32. f16 goes through the level's
/// build of the kernel (AVX-512: sixteen lanes with `vcvtph2ps`; AVX2 and portable: the
/// HearthKernelsCommon loops compiled for each); f32 through the float dot.

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
    for j in positions { s[j] = dotF32(q, (keys + j * stride).assumingMemoryBound(to: Float.self), headDim) * scale }
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
    for j in positions {
        let v = (values + j * stride).assumingMemoryBound(to: Float.self)
        for i in 0..<headDim { out[i] += s[j] * v[i] }
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
