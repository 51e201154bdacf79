import HearthKernelsCommon

// The scalar reference of the integer matmul over the q5_0, q5_1, q4_K, q5_K and q6_K tiles,
// written from the tile layout as docs/KERNELS.md and ``KTile`` state it and sharing no code with
// the kernels (not ``KernelTileGeometry``, not `unpackKernelTile`): the portable level's kernel is
// one of the kernels it checks, so it must not be its own reference.

/// Weight (row `r`, element `e` < 32 of 32-column sub-block `s`) of a q5_0, q5_1, q4_K, q5_K or
/// q6_K tile as w = `factor`·`integer` + `offset`, with the K-quants' integer sub-block scale
/// folded into `integer`, read straight from the layout:
/// - nibble: element e of row r sits in chunk (e mod 16)/4 at byte 4r + e mod 4, low nibble for
///   e < 16, high for e ≥ 16; it is bit-vector v = (e < 16 ? 0 : 4) + (e mod 16)/4;
/// - fifth bit (q5_0, q5_1, q5_K): bit v of plane byte 4r + e mod 4;
/// - q6_K's top two bits: bits 2·((e mod 16)/4)… of byte (e < 16 ? 0 : 64) + 4r + e mod 4.
func tileWeightReference(
    _ tile: UnsafeRawPointer, dtype: DType, row r: Int, sub s: Int, element e: Int
) -> (integer: Int32, factor: Float, offset: Float) {
    func u8(_ offset: Int) -> UInt8 { tile.load(fromByteOffset: offset, as: UInt8.self) }
    func f16(_ offset: Int) -> Float { halfToFloat(tile.loadUnaligned(fromByteOffset: offset, as: UInt16.self)) }
    let chunk = (e % 16) / 4, lane = 4 * r + e % 4, highHalf = e >= 16
    let vector = (highHalf ? 4 : 0) + chunk
    func nibble(_ base: Int) -> Int32 {
        let byte = u8(base + 256 * s + 64 * chunk + lane)
        return Int32(highHalf ? byte >> 4 : byte & 0x0f)
    }
    func fifthBit(_ plane: Int) -> Int32 { Int32((u8(plane + 64 * s + lane) >> UInt8(vector)) & 1) }
    let d = f16(2 * r)
    switch dtype {
    case .q5_0:
        return (nibble(KTile.q5_0Nibbles) + 16 * fifthBit(KTile.q5_0High) - 16, d, 0)
    case .q5_1:
        return (nibble(KTile.q5_1Nibbles) + 16 * fifthBit(KTile.q5_1High), d, f16(32 + 2 * r))
    case .q4_K, .q5_K:
        let q = nibble(KTile.kNibbles) + (dtype == .q5_K ? 16 * fifthBit(KTile.k5High) : 0)
        let scale = Int32(u8(KTile.kScales + 16 * s + r)), minimum = Float(u8(KTile.kMins + 16 * s + r))
        return (scale * q, d, -f16(KTile.kDmin + 2 * r) * minimum)
    case .q6_K:
        let top = Int32((u8(KTile.q6High + 128 * s + (highHalf ? 64 : 0) + lane) >> UInt8(2 * chunk)) & 3)
        let scale = Int32(Int8(bitPattern: u8(KTile.q6Scales + 16 * (2 * s + e / 16) + r)))
        return (scale * (nibble(KTile.q6Nibbles) + 16 * top - 32), d, 0)
    default:
        return (0, 0, 0)
    }
}

/// ``quantizedMatMulReference(_:act:batch:groups:y:ldy:)`` for the q5_0, q5_1 and K-quant tiles:
/// per 32-column sub-block the exact integer dot Σ integer·a, then
/// y += factor·d_a·Σ + offset·d_a·Σa, accumulated in Double over the row.
func tileMatMulReference(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>, y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let subBlocks = w.dtype.blockSize / 32, actBlocks = w.cols / 32
    for g in groups {
        for r in 0..<16 where g * 16 + r < w.rows {
            for t in 0..<batch {
                var acc: Double = 0
                for b in 0..<w.blocksPerRow {
                    let tile = w.tile(group: g, block: b)
                    for s in 0..<subBlocks {
                        let unit = b * subBlocks + s
                        var isum: Int64 = 0
                        var factor: Float = 0, offset: Float = 0
                        for e in 0..<32 {
                            let weight = tileWeightReference(tile, dtype: w.dtype, row: r, sub: s, element: e)
                            isum += Int64(weight.integer) * Int64(act.activation(t * w.cols + 32 * unit + e))
                            (factor, offset) = (weight.factor, weight.offset)
                        }
                        let da = Double(act.scales[t * actBlocks + unit]), sa = Double(act.sums[t * actBlocks + unit])
                        acc += Double(factor) * da * Double(isum) + Double(offset) * da * sa
                    }
                }
                y[t * ldy + g * 16 + r] = Float(acc)
            }
        }
    }
}

/// The scalar reference of the `amx` level's K-quant product over 256-column super-blocks
/// (HearthKernelsAVX512VNNI's AMXSuperBlocks.swift), from ``QuantizedActivations/superQuants``:
/// per token, row and super-block the exact integer sums S = Σ integer·a (the sub-block scale
/// folded into `integer`, ``tileWeightReference``) and, for q4_K and q5_K, M = Σ_j m_j·A_j (A_j
/// the quants' sum over sub-block j), then the kernel's float steps in its order:
/// v = d·float(S); v = v − dmin·float(M) (one rounding); y = y + v·D (one rounding).
package func superBlockMatMulReference(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>, y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let superBlocks = w.cols / 256
    for g in groups {
        for r in 0..<16 where g * 16 + r < w.rows {
            for t in 0..<batch {
                var acc: Float = 0
                for b in 0..<superBlocks {
                    let tile = w.tile(group: g, block: b)
                    var s: Int64 = 0, m: Int64 = 0
                    var d: Float = 0, dmin: Float = 0
                    for sub in 0..<8 {
                        var blockSum: Int64 = 0
                        for e in 0..<32 {
                            let a = Int64(act.superQuants[t * w.cols + 256 * b + 32 * sub + e])
                            let weight = tileWeightReference(tile, dtype: w.dtype, row: r, sub: sub, element: e)
                            s += Int64(weight.integer) * a
                            blockSum += a
                            d = weight.factor
                        }
                        if w.dtype != .q6_K {
                            m += Int64(tile.load(fromByteOffset: KTile.kMins + 16 * sub + r, as: UInt8.self)) * blockSum
                            dmin = halfToFloat(tile.loadUnaligned(fromByteOffset: KTile.kDmin + 2 * r, as: UInt16.self))
                        }
                    }
                    var v = d * Float(s)
                    v = v.addingProduct(-dmin, Float(m))
                    acc = acc.addingProduct(v, act.superScales[t * superBlocks + b])
                }
                y[t * ldy + g * 16 + r] = acc
            }
        }
    }
}
