#if HEARTH_AVX512VNNI
import _Builtin_intrinsics.intel
#endif

/// The zero point a block type's stored quants carry: q4_0 stores q+8 (as 0…15) and
/// Hearth stores q8_0 quants as q+128 (unsigned) so both feed unsigned×signed dot products.
/// The affine types (q4_1, q8_a) store q itself (0…15, 0…255) and add m·Σa instead.
@inline(__always)
func zeroPoint(_ dtype: DType) -> Float {
    switch dtype {
    case .q4_0: return 8
    case .q8_0: return 128
    default: return 0
    }
}

/// y[t·ldy + row] = W[row] · x[t] for the rows of 16-row groups `groups`, all `batch` tokens,
/// with W in the interleaved16 layout and x quantized to 8-bit blocks. Scalar reference:
/// the exact integer dot per block, then the block's scales — the twin every fast kernel is
/// tested against.
public func quantizedMatMulReference(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let blocks = w.blocksPerRow
    let zero = zeroPoint(w.dtype)
    let quantBase = w.dtype.hasMinimum ? 64 : 32
    for g in groups {
        for t in 0..<batch {
            for r in 0..<16 where g * 16 + r < w.rows {
                var acc: Float = 0
                for b in 0..<blocks {
                    let tile = w.tile(group: g, block: b)
                    let a = act.quants + t * w.cols + b * 32
                    var isum: Int32 = 0
                    switch w.dtype {
                    case .q4_0, .q4_1:
                        for k in 0..<4 {
                            for j in 0..<4 {
                                let byte = tile.load(fromByteOffset: quantBase + 64 * k + 4 * r + j, as: UInt8.self)
                                isum += Int32(byte & 0x0f) * Int32(a[4 * k + j])
                                isum += Int32(byte >> 4) * Int32(a[16 + 4 * k + j])
                            }
                        }
                    default:
                        for k in 0..<8 {
                            for j in 0..<4 {
                                let byte = tile.load(fromByteOffset: quantBase + 64 * k + 4 * r + j, as: UInt8.self)
                                isum += Int32(byte) * Int32(a[4 * k + j])
                            }
                        }
                    }
                    let d = halfToFloat(tile.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self))
                    let da = act.scales[t * blocks + b], sa = act.sums[t * blocks + b]
                    acc += d * da * (Float(isum) - zero * sa)
                    if w.dtype.hasMinimum {
                        acc += halfToFloat(tile.loadUnaligned(fromByteOffset: 32 + 2 * r, as: UInt16.self)) * da * sa
                    }
                }
                y[t * ldy + g * 16 + r] = acc
            }
        }
    }
}

/// The fastest quantized matmul this build has for the row groups `groups`.
@inline(__always)
public func quantizedMatMul(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    #if HEARTH_AVX512VNNI
    quantizedMatMulAVX512VNNI(w, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
    #elseif HEARTH_AVX2
    quantizedMatMulAVX2(w, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
    #else
    quantizedMatMulPortable(w, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
    #endif
}

/// Which quantized kernel this build uses (for `bench` and `inspect`).
public var quantizedKernelName: String {
    #if HEARTH_AVX512VNNI
    return "avx512-vnni"
    #elseif HEARTH_AVX2
    return "avx2"
    #else
    return "portable"
    #endif
}

/// Portable kernel: dequantizes each tile row to Float and dots it with the dequantized
/// activations. Correct everywhere; the SIMD kernels are the fast paths.
public func quantizedMatMulPortable(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let blocks = w.blocksPerRow
    var weights = [Float](repeating: 0, count: 32)
    weights.withUnsafeMutableBufferPointer { wbuf in
        let wp = wbuf.baseAddress!
        for g in groups {
            for r in 0..<16 where g * 16 + r < w.rows {
                for t in 0..<batch { y[t * ldy + g * 16 + r] = 0 }
                for b in 0..<blocks {
                    dequantizeInterleaved(w.tile(group: g, block: b), dtype: w.dtype, row: r, into: wp)
                    for t in 0..<batch {
                        let a = act.quants + t * w.cols + b * 32
                        var sum: Float = 0
                        for i in 0..<32 { sum += wp[i] * Float(a[i]) }
                        y[t * ldy + g * 16 + r] += sum * act.scales[t * blocks + b]
                    }
                }
            }
        }
    }
}

#if HEARTH_AVX512VNNI
/// The 8 weight vectors of one tile: vector m holds weights 4m…4m+3 of each of the 16 rows,
/// as unsigned bytes, ready for `vpdpbusd` against activation bytes 4m…4m+3 broadcast.
typealias TileWeights = (
    SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>, SIMD8<Int64>
)

@inline(__always)
func loadTile(_ tile: UnsafeRawPointer, dtype: DType) -> TileWeights {
    if dtype == .q8_0 || dtype == .q8_a {
        let q = tile + (dtype == .q8_a ? 64 : 32)
        return (
            q.loadUnaligned(as: SIMD8<Int64>.self), q.loadUnaligned(fromByteOffset: 64, as: SIMD8<Int64>.self),
            q.loadUnaligned(fromByteOffset: 128, as: SIMD8<Int64>.self),
            q.loadUnaligned(fromByteOffset: 192, as: SIMD8<Int64>.self),
            q.loadUnaligned(fromByteOffset: 256, as: SIMD8<Int64>.self),
            q.loadUnaligned(fromByteOffset: 320, as: SIMD8<Int64>.self),
            q.loadUnaligned(fromByteOffset: 384, as: SIMD8<Int64>.self),
            q.loadUnaligned(fromByteOffset: 448, as: SIMD8<Int64>.self))
    }
    let q = tile + (dtype == .q4_1 ? 64 : 32)
    let mask = _mm512_set1_epi8(0x0f)
    let z0 = q.loadUnaligned(as: SIMD8<Int64>.self)
    let z1 = q.loadUnaligned(fromByteOffset: 64, as: SIMD8<Int64>.self)
    let z2 = q.loadUnaligned(fromByteOffset: 128, as: SIMD8<Int64>.self)
    let z3 = q.loadUnaligned(fromByteOffset: 192, as: SIMD8<Int64>.self)
    return (
        _mm512_and_si512(z0, mask), _mm512_and_si512(z1, mask), _mm512_and_si512(z2, mask),
        _mm512_and_si512(z3, mask),
        _mm512_and_si512(_mm512_srli_epi64(z0, 4), mask), _mm512_and_si512(_mm512_srli_epi64(z1, 4), mask),
        _mm512_and_si512(_mm512_srli_epi64(z2, 4), mask), _mm512_and_si512(_mm512_srli_epi64(z3, 4), mask))
}

/// Σ over one block of w[r]·a for the 16 rows, as 16 int32 lanes (two chains for latency).
@inline(__always)
func dotTile(_ v: TileWeights, _ a: UnsafeRawPointer) -> SIMD16<Float> {
    let zero = _mm512_setzero_si512()
    @inline(__always) func b(_ m: Int) -> SIMD8<Int64> { _mm512_set1_epi32(a.loadUnaligned(fromByteOffset: 4 * m, as: Int32.self)) }
    var i0 = _mm512_dpbusd_epi32(zero, v.0, b(0))
    var i1 = _mm512_dpbusd_epi32(zero, v.4, b(4))
    i0 = _mm512_dpbusd_epi32(i0, v.1, b(1))
    i1 = _mm512_dpbusd_epi32(i1, v.5, b(5))
    i0 = _mm512_dpbusd_epi32(i0, v.2, b(2))
    i1 = _mm512_dpbusd_epi32(i1, v.6, b(6))
    i0 = _mm512_dpbusd_epi32(i0, v.3, b(3))
    i1 = _mm512_dpbusd_epi32(i1, v.7, b(7))
    return _mm512_cvtepi32_ps(_mm512_add_epi32(i0, i1))
}

/// AVX-512 VNNI kernel: for each row group, tokens in tiles of four share the unpacked
/// weights held in registers (register tiling), so prefill is compute-bound on `vpdpbusd`
/// and decode streams each weight byte once.
public func quantizedMatMulAVX512VNNI(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let blocks = w.blocksPerRow
    let dtype = w.dtype
    let zero = SIMD16<Float>(repeating: zeroPoint(dtype))
    let affine = dtype.hasMinimum
    let cols = w.cols

    @inline(__always) func store(_ f: SIMD16<Float>, token t: Int, group g: Int) {
        let out = y + t * ldy + g * 16
        let valid = min(16, w.rows - g * 16)
        if valid == 16 {
            UnsafeMutableRawPointer(out).storeBytes(of: f, as: SIMD16<Float>.self)
        } else {
            for r in 0..<valid { out[r] = f[r] }
        }
    }

    for g in groups {
        var t0 = 0
        while t0 + 4 <= batch {
            var f0 = SIMD16<Float>(), f1 = SIMD16<Float>(), f2 = SIMD16<Float>(), f3 = SIMD16<Float>()
            for b in 0..<blocks {
                let tile = w.tile(group: g, block: b)
                let dw = _mm512_cvtph_ps(tile.loadUnaligned(as: SIMD4<Int64>.self))
                let v = loadTile(tile, dtype: dtype)
                let mw = affine ? _mm512_cvtph_ps(tile.loadUnaligned(fromByteOffset: 32, as: SIMD4<Int64>.self)) : dw
                @inline(__always) func step(_ f: inout SIMD16<Float>, _ t: Int) {
                    let a = UnsafeRawPointer(act.quants + t * cols + b * 32)
                    let s = dotTile(v, a)
                    let da = SIMD16<Float>(repeating: act.scales[t * blocks + b])
                    let sa = SIMD16<Float>(repeating: act.sums[t * blocks + b])
                    if affine {
                        f = _mm512_fmadd_ps(dw * da, s, _mm512_fmadd_ps(mw * da, sa, f))
                    } else {
                        f = _mm512_fmadd_ps(dw * da, s - zero * sa, f)
                    }
                }
                step(&f0, t0)
                step(&f1, t0 + 1)
                step(&f2, t0 + 2)
                step(&f3, t0 + 3)
            }
            store(f0, token: t0, group: g)
            store(f1, token: t0 + 1, group: g)
            store(f2, token: t0 + 2, group: g)
            store(f3, token: t0 + 3, group: g)
            t0 += 4
        }
        while t0 < batch {
            var f = SIMD16<Float>()
            let a0 = UnsafeRawPointer(act.quants + t0 * cols)
            for b in 0..<blocks {
                let tile = w.tile(group: g, block: b)
                let dw = _mm512_cvtph_ps(tile.loadUnaligned(as: SIMD4<Int64>.self))
                let s = dotTile(loadTile(tile, dtype: dtype), a0 + b * 32)
                let da = SIMD16<Float>(repeating: act.scales[t0 * blocks + b])
                let sa = SIMD16<Float>(repeating: act.sums[t0 * blocks + b])
                if affine {
                    let mw = _mm512_cvtph_ps(tile.loadUnaligned(fromByteOffset: 32, as: SIMD4<Int64>.self))
                    f = _mm512_fmadd_ps(dw * da, s, _mm512_fmadd_ps(mw * da, sa, f))
                } else {
                    f = _mm512_fmadd_ps(dw * da, s - zero * sa, f)
                }
            }
            store(f, token: t0, group: g)
            t0 += 1
        }
    }
}
#endif
