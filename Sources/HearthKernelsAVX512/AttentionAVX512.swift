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

#if arch(x86_64)
/// out = Σ_{j in first...last} s[j] · value j over quantized value records (`KVKind` `kind`,
/// layout in HearthKernelsCommon's KVBlocks.swift) `stride` bytes apart: per key, the head's
/// block scales are converted with one `vcvtph2ps` and multiplied by s[j]; each block's 32
/// quants are widened to int32, offset by the zero point, converted and added with one FMA per
/// 16 elements. headDim ≤ 512.
@inline(never)
public func hearthAttentionValuesKVAVX512(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, first: Int, last: Int, headDim n: Int, kind: Int32,
    into out: UnsafeMutablePointer<Float>
) {
    out.update(repeating: 0, count: n)
    let ro = UnsafeMutableRawPointer(out)
    let blocks = n / 32
    let scaleMask = UInt16(truncatingIfNeeded: (1 << blocks) - 1)
    let quantOffset = 2 * blocks
    for j in first...last {
        let v = values + j * stride
        let w = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(scaleMask, v)), _mm512_set1_ps(s[j]))
        for b in 0..<blocks {
            let wb = _mm512_permutexvar_ps(_mm512_set1_epi32(Int32(b)), w)
            let (lo, hi) = kvBlockFloats(v + quantOffset, block: b, kind: kind)
            let o = ro + 128 * b
            _mm512_storeu_ps(o, _mm512_fmadd_ps(lo, wb, _mm512_loadu_ps(UnsafeRawPointer(o))))
            _mm512_storeu_ps(o + 64, _mm512_fmadd_ps(hi, wb, _mm512_loadu_ps(UnsafeRawPointer(o + 64))))
        }
    }
}

/// Decodes one quantized KV record (`count` elements of `KVKind` `kind`) to Float.
@inline(never)
public func hearthDequantizeKVAVX512(_ src: UnsafeRawPointer, count: Int, kind: Int32, into out: UnsafeMutablePointer<Float>) {
    let ro = UnsafeMutableRawPointer(out)
    let blocks = count / 32
    let quantOffset = 2 * blocks
    for b in 0..<blocks {
        let d = _mm512_set1_ps(halfToFloat(src.loadUnaligned(fromByteOffset: 2 * b, as: UInt16.self)))
        let (lo, hi) = kvBlockFloats(src + quantOffset, block: b, kind: kind)
        _mm512_storeu_ps(ro + 128 * b, _mm512_mul_ps(lo, d))
        _mm512_storeu_ps(ro + 128 * b + 64, _mm512_mul_ps(hi, d))
    }
}

/// Block `b` of a quantized KV record's quants (`quants`: the record past its scales) as Floats
/// q − zero: elements 0–15 and 16–31 of the block (q8_0: bytes widened; q4_0: the low nibbles
/// of the block's 16 bytes, then the high ones).
@inline(__always)
private func kvBlockFloats(_ quants: UnsafeRawPointer, block b: Int, kind: Int32) -> (SIMD16<Float>, SIMD16<Float>) {
    let zero = _mm512_set1_epi32(KVKind.zero(kind))
    let lo: SIMD8<Int64>, hi: SIMD8<Int64>
    if kind == KVKind.q8_0 {
        let p = quants + 32 * b
        lo = _mm512_cvtepu8_epi32(p.loadUnaligned(as: SIMD2<Int64>.self))
        hi = _mm512_cvtepu8_epi32(p.loadUnaligned(fromByteOffset: 16, as: SIMD2<Int64>.self))
    } else {
        let x = _mm512_cvtepu8_epi32((quants + 16 * b).loadUnaligned(as: SIMD2<Int64>.self))
        lo = _mm512_and_si512(x, _mm512_set1_epi32(15))
        hi = _mm512_srli_epi32(x, 4)
    }
    return (_mm512_cvtepi32_ps(_mm512_sub_epi32(lo, zero)), _mm512_cvtepi32_ps(_mm512_sub_epi32(hi, zero)))
}
#endif

#if arch(x86_64)
/// y[b·ldy + r] = (row r of an f16 matrix, `rowBytes` apart) · (row b of x, `cols` floats) for
/// r in `rows` and b in 0..<batch: each weight row converted once into `row` (`cols` floats,
/// in cache), then dotted with up to four rows of x at a time. Each (r, b) has four accumulators
/// (runs of 16 columns in turn) and sums in the same order whatever `batch`: a row of a batch
/// equals the one-row product bit for bit.
@inline(never)
public func hearthDotRowsF16AVX512(
    _ w: UnsafeRawPointer, rowBytes: Int, cols: Int, x: UnsafePointer<Float>, batch: Int, rows: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int, row: UnsafeMutablePointer<Float>
) {
    for r in rows {
        hearthHalfToFloatAVX512(w + r * rowBytes, count: cols, into: row)
        var b = 0
        while b < batch {
            switch min(4, batch - b) {
            case 1: dotRowF16(row, cols, x, r, b, 1, y, ldy)
            case 2: dotRowF16(row, cols, x, r, b, 2, y, ldy)
            case 3: dotRowF16(row, cols, x, r, b, 3, y, ldy)
            default: dotRowF16(row, cols, x, r, b, 4, y, ldy)
            }
            b += 4
        }
    }
}

/// Four accumulators of one product: runs of 16 columns go to them in turn.
private typealias Runs = (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>)

/// Adds 64 columns from `i` of (row v) · (x at `xp`) to `acc`, one run of 16 to each accumulator.
@inline(__always)
private func addRuns(_ acc: inout Runs, _ v: Runs, _ xp: UnsafeRawPointer, _ i: Int) {
    acc.0 = _mm512_fmadd_ps(v.0, _mm512_loadu_ps(xp + 4 * i), acc.0)
    acc.1 = _mm512_fmadd_ps(v.1, _mm512_loadu_ps(xp + 4 * i + 64), acc.1)
    acc.2 = _mm512_fmadd_ps(v.2, _mm512_loadu_ps(xp + 4 * i + 128), acc.2)
    acc.3 = _mm512_fmadd_ps(v.3, _mm512_loadu_ps(xp + 4 * i + 192), acc.3)
}

/// Adds one run of 16 columns from `i` to accumulator `run` (0…2: what is left after the runs of 64).
@inline(__always)
private func addRun(_ acc: inout Runs, _ run: Int, _ v: SIMD16<Float>, _ xp: UnsafeRawPointer, _ i: Int) {
    let x = _mm512_loadu_ps(xp + 4 * i)
    switch run {
    case 0: acc.0 = _mm512_fmadd_ps(v, x, acc.0)
    case 1: acc.1 = _mm512_fmadd_ps(v, x, acc.1)
    default: acc.2 = _mm512_fmadd_ps(v, x, acc.2)
    }
}

/// y[(b + k)·ldy + r] = row · x row b + k for k < n (n ≤ 4, a constant at each inlined call, so
/// the unused accumulators fold away). Four accumulators per product, so one row of x is bound
/// by the FMA throughput, not its latency; the same order for every n.
@inline(__always)
private func dotRowF16(
    _ row: UnsafeMutablePointer<Float>, _ cols: Int, _ x: UnsafePointer<Float>, _ r: Int, _ b: Int, _ n: Int,
    _ y: UnsafeMutablePointer<Float>, _ ldy: Int
) {
    let rw = UnsafeRawPointer(row)
    let x0 = UnsafeRawPointer(x) + 4 * b * cols
    let x1 = x0 + 4 * cols * min(1, n - 1), x2 = x0 + 4 * cols * min(2, n - 1), x3 = x0 + 4 * cols * min(3, n - 1)
    let zero = SIMD16<Float>()
    var a0: Runs = (zero, zero, zero, zero), a1 = a0, a2 = a0, a3 = a0
    var i = 0
    while i + 64 <= cols {
        let v: Runs = (
            _mm512_loadu_ps(rw + 4 * i), _mm512_loadu_ps(rw + 4 * i + 64), _mm512_loadu_ps(rw + 4 * i + 128),
            _mm512_loadu_ps(rw + 4 * i + 192)
        )
        addRuns(&a0, v, x0, i)
        if n > 1 { addRuns(&a1, v, x1, i) }
        if n > 2 { addRuns(&a2, v, x2, i) }
        if n > 3 { addRuns(&a3, v, x3, i) }
        i += 64
    }
    var run = 0
    while i + 16 <= cols {
        let v = _mm512_loadu_ps(rw + 4 * i)
        addRun(&a0, run, v, x0, i)
        if n > 1 { addRun(&a1, run, v, x1, i) }
        if n > 2 { addRun(&a2, run, v, x2, i) }
        if n > 3 { addRun(&a3, run, v, x3, i) }
        run += 1
        i += 16
    }
    let body = i
    func store(_ k: Int, _ acc: Runs) {
        var sum = ((acc.0 + acc.1) + (acc.2 + acc.3)).sum()
        let xk = x + (b + k) * cols
        for j in body..<cols { sum += row[j] * xk[j] }
        y[(b + k) * ldy + r] = sum
    }
    store(0, a0)
    if n > 1 { store(1, a1) }
    if n > 2 { store(2, a2) }
    if n > 3 { store(3, a3) }
}
#endif
