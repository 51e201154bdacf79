#if HEARTH_AVX512
import _Builtin_intrinsics.intel
#endif

/// Dot product of a Float query with one cached key stored as `type` (f32 or f16).
@inline(__always)
public func dotCached(_ q: UnsafePointer<Float>, _ k: UnsafeRawPointer, _ n: Int, type: DType) -> Float {
    if type == .f32 { return dotF32(q, k.assumingMemoryBound(to: Float.self), n) }
    #if HEARTH_AVX512
    var acc = SIMD16<Float>()
    var i = 0
    let rq = UnsafeRawPointer(q)
    while i + 16 <= n {
        let kv = _mm512_cvtph_ps(k.loadUnaligned(fromByteOffset: 2 * i, as: SIMD4<Int64>.self))
        acc = _mm512_fmadd_ps(rq.loadUnaligned(fromByteOffset: 4 * i, as: SIMD16<Float>.self), kv, acc)
        i += 16
    }
    var sum = acc.sum()
    #else
    var sum: Float = 0
    var i = 0
    #endif
    let h = k.assumingMemoryBound(to: UInt16.self)
    while i < n {
        sum += q[i] * halfToFloat(h[i])
        i += 1
    }
    return sum
}

/// out[i] += weight · v[i] for a cached value vector stored as `type`.
@inline(__always)
public func accumulateCached(_ out: UnsafeMutablePointer<Float>, _ v: UnsafeRawPointer, weight: Float, _ n: Int, type: DType) {
    var i = 0
    #if HEARTH_AVX512
    let w = SIMD16<Float>(repeating: weight)
    let ro = UnsafeMutableRawPointer(out)
    while i + 16 <= n {
        let value: SIMD16<Float> =
            type == .f32
            ? v.loadUnaligned(fromByteOffset: 4 * i, as: SIMD16<Float>.self)
            : _mm512_cvtph_ps(v.loadUnaligned(fromByteOffset: 2 * i, as: SIMD4<Int64>.self))
        let o = ro.loadUnaligned(fromByteOffset: 4 * i, as: SIMD16<Float>.self)
        ro.storeBytes(of: _mm512_fmadd_ps(value, w, o), toByteOffset: 4 * i, as: SIMD16<Float>.self)
        i += 16
    }
    #endif
    if type == .f32 {
        let f = v.assumingMemoryBound(to: Float.self)
        while i < n {
            out[i] += weight * f[i]
            i += 1
        }
    } else {
        let h = v.assumingMemoryBound(to: UInt16.self)
        while i < n {
            out[i] += weight * halfToFloat(h[i])
            i += 1
        }
    }
}

/// Converts `count` cached elements of `type` to Float.
@inline(__always)
public func loadCached(_ src: UnsafeRawPointer, type: DType, count: Int, into out: UnsafeMutablePointer<Float>) {
    if type == .f32 {
        out.update(from: src.assumingMemoryBound(to: Float.self), count: count)
        return
    }
    var i = 0
    #if HEARTH_AVX512
    let ro = UnsafeMutableRawPointer(out)
    while i + 16 <= count {
        ro.storeBytes(
            of: _mm512_cvtph_ps(src.loadUnaligned(fromByteOffset: 2 * i, as: SIMD4<Int64>.self)), toByteOffset: 4 * i,
            as: SIMD16<Float>.self)
        i += 16
    }
    #endif
    let h = src.assumingMemoryBound(to: UInt16.self)
    while i < count {
        out[i] = halfToFloat(h[i])
        i += 1
    }
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
