#if arch(x86_64)
import HearthKernelsCommon
import _Builtin_intrinsics.intel

// Attention over an f16 KV cache, built for AVX-512 (see GGMLBlocksAVX512.swift).

/// s[j] = scale · (q · key j) for j in `first...last`, key j at `keys + j·stride` as `headDim` f16.
@inline(never)
public func hearthAttentionScoresF16AVX512(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, first: Int, last: Int, headDim n: Int,
    scale: Float, into s: UnsafeMutablePointer<Float>
) {
    let rq = UnsafeRawPointer(q)
    for j in first...last {
        let k = keys + j * stride
        var acc = SIMD16<Float>()
        var i = 0
        while i + 16 <= n {
            let kv = _mm512_cvtph_ps(k.loadUnaligned(fromByteOffset: 2 * i, as: SIMD4<Int64>.self))
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(rq + 4 * i), kv, acc)
            i += 16
        }
        var sum = horizontalSum(acc)
        while i < n {
            sum += q[i] * halfToFloat(k.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
            i += 1
        }
        s[j] = sum * scale
    }
}

/// out = Σ_{j in first...last} s[j] · value j, value j at `values + j·stride` as `headDim` f16.
@inline(never)
public func hearthAttentionValuesF16AVX512(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, first: Int, last: Int, headDim n: Int,
    into out: UnsafeMutablePointer<Float>
) {
    out.update(repeating: 0, count: n)
    let ro = UnsafeMutableRawPointer(out)
    for j in first...last {
        let v = values + j * stride
        let w = SIMD16<Float>(repeating: s[j])
        var i = 0
        while i + 16 <= n {
            let value = _mm512_cvtph_ps(v.loadUnaligned(fromByteOffset: 2 * i, as: SIMD4<Int64>.self))
            let o = _mm512_loadu_ps(UnsafeRawPointer(ro + 4 * i))
            _mm512_storeu_ps(ro + 4 * i, _mm512_fmadd_ps(value, w, o))
            i += 16
        }
        while i < n {
            out[i] += s[j] * halfToFloat(v.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
            i += 1
        }
    }
}

/// Converts `count` f16 values at `src` to Float.
@inline(never)
public func hearthHalfToFloatAVX512(_ src: UnsafeRawPointer, count: Int, into out: UnsafeMutablePointer<Float>) {
    let ro = UnsafeMutableRawPointer(out)
    var i = 0
    while i + 16 <= count {
        _mm512_storeu_ps(ro + 4 * i, _mm512_cvtph_ps(src.loadUnaligned(fromByteOffset: 2 * i, as: SIMD4<Int64>.self)))
        i += 16
    }
    while i < count {
        out[i] = halfToFloat(src.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
        i += 1
    }
}
#endif
