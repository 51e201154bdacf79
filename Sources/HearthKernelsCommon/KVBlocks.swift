// The quantized KV cache's record layout and the kernel bodies every level shares
// (docs/KERNELS.md, "Quantized KV cache").
//
// A record holds `count` elements (one attention head: count = headDim, a multiple of 32) as
// count/32 blocks with ggml's block semantics, scales first:
//
//   q8_0: count/32 f16 scales d, then `count` bytes q + 128 (x ≈ d·q, q in −127…127)
//   q4_0: count/32 f16 scales d, then count/32 × 16 bytes; block b's byte i holds q of element
//         32b + i in its low nibble and of element 32b + 16 + i in its high nibble (x ≈ d·(q − 8))
//
// The scales sit together so one vector load converts a head's scales at once; q8_0's quants are
// stored unsigned (+128) so they are `vpdpbusd`'s unsigned operand as they are, the offset folded
// into the accumulator's starting value (as the q8_0 weight tiles do).

/// Kinds of quantized KV records (the `kind` argument of the kernels).
public enum KVKind {
    /// 8-bit blocks: x ≈ d·q, q stored as q + 128.
    public static let q8_0: Int32 = 0
    /// 4-bit blocks: x ≈ d·(q − 8), q stored as 0…15, two to a byte.
    public static let q4_0: Int32 = 1

    /// Bytes of a record of `count` elements (a multiple of 32).
    @inlinable @inline(__always)
    public static func recordBytes(_ kind: Int32, count: Int) -> Int {
        kind == q8_0 ? count / 32 * 34 : count / 32 * 18
    }

    /// The value stored quants are offset by (q8_0: 128, q4_0: 8).
    @inlinable @inline(__always)
    public static func zero(_ kind: Int32) -> Int32 { kind == q8_0 ? 128 : 8 }
}

/// Quantizes `count` floats (a multiple of 32) into one record of `kind` at `dst`.
/// q8_0: d = max|x|/127 (rounded to f16), q = round(x/d). q4_0: the scale with the least squared
/// error among ggml's rule (d = m/−8 for the element m of largest magnitude) and eleven others
/// (m/t for t in −8.5…−6.5, each refined to the least-squares scale of its quants), so never
/// worse than ggml's; q = clamp(round(x/d) + 8, 0, 15). The quants are always computed with the
/// stored (f16-rounded) scale, so decoding sees the scale they were rounded against. A key or
/// value is stored once and read at every later step, so the search is cheap where it is paid.
@inlinable @inline(__always)
public func quantizeKVRecord(_ x: UnsafePointer<Float>, count: Int, kind: Int32, into dst: UnsafeMutableRawPointer) {
    let blocks = count / 32
    let scales = dst.assumingMemoryBound(to: UInt16.self)
    let quants = (dst + 2 * blocks).assumingMemoryBound(to: UInt8.self)
    for b in 0..<blocks {
        let src = x + 32 * b
        if kind == KVKind.q8_0 {
            var amax: Float = 0
            for i in 0..<32 { amax = max(amax, abs(src[i])) }
            let h = floatToHalf(amax / 127)
            scales[b] = h
            let d = halfToFloat(h)
            let id: Float = d != 0 ? 1 / d : 0
            for i in 0..<32 {
                let q = max(-127, min(127, (src[i] * id).rounded()))
                quants[32 * b + i] = UInt8(Int32(q) + 128)
            }
        } else {
            var extreme: Float = 0
            for i in 0..<32 where abs(src[i]) > abs(extreme) { extreme = src[i] }
            // Squared error of the block at the f16 scale `h` (quants rounded against it).
            @inline(__always) func error(_ h: UInt16) -> Float {
                let d = halfToFloat(h)
                let id: Float = d != 0 ? 1 / d : 0
                var e: Float = 0
                for i in 0..<32 {
                    let q = max(0, min(15, (src[i] * id).rounded() + 8)) - 8
                    let r = src[i] - d * q
                    e += r * r
                }
                return e
            }
            var h = floatToHalf(extreme / -8)
            var best = error(h)
            if extreme != 0 {
                for t in 0...10 {
                    // Quants at d0 = m/divisor, then the scale that fits them best: Σx·q / Σq².
                    let id0 = (-8.5 + 0.2 * Float(t)) / extreme
                    var xq: Float = 0, qq: Float = 0
                    for i in 0..<32 {
                        let q = max(0, min(15, (src[i] * id0).rounded() + 8)) - 8
                        xq += src[i] * q
                        qq += q * q
                    }
                    guard qq > 0 else { continue }
                    let candidate = floatToHalf(xq / qq)
                    let e = error(candidate)
                    if e < best {
                        best = e
                        h = candidate
                    }
                }
            }
            scales[b] = h
            let d = halfToFloat(h)
            let id: Float = d != 0 ? 1 / d : 0
            for i in 0..<16 {
                let lo = max(0, min(15, (src[i] * id).rounded() + 8))
                let hi = max(0, min(15, (src[16 + i] * id).rounded() + 8))
                quants[16 * b + i] = UInt8(lo) | UInt8(hi) << 4
            }
        }
    }
}

/// Decodes one record of `count` elements of `kind` at `src` to Float.
@inlinable @inline(__always)
public func dequantizeKVRecord(_ src: UnsafeRawPointer, count: Int, kind: Int32, into out: UnsafeMutablePointer<Float>) {
    let blocks = count / 32
    let quants = (src + 2 * blocks).assumingMemoryBound(to: UInt8.self)
    for b in 0..<blocks {
        let d = halfToFloat(src.loadUnaligned(fromByteOffset: 2 * b, as: UInt16.self))
        let o = out + 32 * b
        if kind == KVKind.q8_0 {
            for i in 0..<32 { o[i] = d * Float(Int32(quants[32 * b + i]) - 128) }
        } else {
            for i in 0..<16 {
                let byte = quants[16 * b + i]
                o[i] = d * Float(Int32(byte & 15) - 8)
                o[16 + i] = d * Float(Int32(byte >> 4) - 8)
            }
        }
    }
}

/// Quantizes a query head (`count` floats, a multiple of 32) to 8-bit blocks for the integer key
/// dots: d = max|q|/127, quants round(q/d). `quants` gets `count` bytes, `scales` count/32 floats.
@inlinable @inline(__always)
public func quantizeKVQuery(
    _ q: UnsafePointer<Float>, count: Int, quants: UnsafeMutablePointer<Int8>, scales: UnsafeMutablePointer<Float>
) {
    for b in 0..<count / 32 {
        var amax: Float = 0
        for i in 0..<32 { amax = max(amax, abs(q[32 * b + i])) }
        let d = amax / 127
        let id: Float = d != 0 ? 1 / d : 0
        for i in 0..<32 { quants[32 * b + i] = Int8(max(-127, min(127, (q[32 * b + i] * id).rounded()))) }
        scales[b] = d
    }
}

/// s[j] = scale · Σ_b dq_b·dk_b·Σ_i q_i·(k_i − zero) for j in `positions`: a quantized query
/// (``quantizeKVQuery``) against quantized key records `stride` bytes apart; the block sums
/// are exact integers.
@inlinable @inline(__always)
public func attentionScoresKV(
    _ qQuants: UnsafePointer<Int8>, _ qScales: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int,
    positions: ClosedRange<Int>, headDim n: Int, scale: Float, kind: Int32, into s: UnsafeMutablePointer<Float>
) {
    let blocks = n / 32
    let zero = KVKind.zero(kind)
    for j in positions {
        let k = keys + j * stride
        let quants = (k + 2 * blocks).assumingMemoryBound(to: UInt8.self)
        var sum: Float = 0
        for b in 0..<blocks {
            let qb = qQuants + 32 * b
            var dot: Int32 = 0
            if kind == KVKind.q8_0 {
                let kb = quants + 32 * b
                for i in 0..<32 { dot &+= Int32(qb[i]) &* (Int32(kb[i]) &- zero) }
            } else {
                let kb = quants + 16 * b
                for i in 0..<16 {
                    dot &+= Int32(qb[i]) &* (Int32(kb[i] & 15) &- zero)
                    dot &+= Int32(qb[16 + i]) &* (Int32(kb[i] >> 4) &- zero)
                }
            }
            let dk = halfToFloat(k.loadUnaligned(fromByteOffset: 2 * b, as: UInt16.self))
            sum += Float(dot) * (dk * qScales[b])
        }
        s[j] = sum * scale
    }
}

/// out = Σ_{j in positions} s[j] · value j over quantized value records `stride` bytes apart
/// (each block's scale folded into the weight: out_i += (s[j]·d_b)·(q_i − zero)).
@inlinable @inline(__always)
public func attentionValuesKV(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim n: Int,
    kind: Int32, into out: UnsafeMutablePointer<Float>
) {
    out.update(repeating: 0, count: n)
    let blocks = n / 32
    for j in positions {
        let v = values + j * stride
        let quants = (v + 2 * blocks).assumingMemoryBound(to: UInt8.self)
        for b in 0..<blocks {
            let w = s[j] * halfToFloat(v.loadUnaligned(fromByteOffset: 2 * b, as: UInt16.self))
            let o = out + 32 * b
            if kind == KVKind.q8_0 {
                let vb = quants + 32 * b
                for i in 0..<32 { o[i] += w * Float(Int32(vb[i]) - 128) }
            } else {
                let vb = quants + 16 * b
                for i in 0..<16 {
                    o[i] += w * Float(Int32(vb[i] & 15) - 8)
                    o[16 + i] += w * Float(Int32(vb[i] >> 4) - 8)
                }
            }
        }
    }
}
