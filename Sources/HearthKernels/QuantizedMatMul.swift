import HearthKernelsCommon

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
package func quantizedMatMulReference(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    if KernelTileGeometry(w.dtype) != nil {
        // q5_0, q5_1 and the K-quants: read from the tile layout on its own (TileReference.swift).
        tileMatMulReference(w, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
        return
    }
    let blocks = w.blocksPerRow
    let zero = zeroPoint(w.dtype)
    let quantBase = w.dtype.hasMinimum ? 64 : 32
    for g in groups {
        for t in 0..<batch {
            for r in 0..<16 where g * 16 + r < w.rows {
                var acc: Float = 0
                for b in 0..<blocks {
                    let tile = w.tile(group: g, block: b)
                    let a0 = t * w.cols + b * 32
                    @inline(__always) func a(_ i: Int) -> Int32 { act.activation(a0 + i) }
                    var isum: Int32 = 0
                    switch w.dtype {
                    case .q4_0, .q4_1:
                        for k in 0..<4 {
                            for j in 0..<4 {
                                let byte = tile.load(fromByteOffset: quantBase + 64 * k + 4 * r + j, as: UInt8.self)
                                isum += Int32(byte & 0x0f) * a(4 * k + j)
                                isum += Int32(byte >> 4) * a(16 + 4 * k + j)
                            }
                        }
                    default:
                        for k in 0..<8 {
                            for j in 0..<4 {
                                let byte = tile.load(fromByteOffset: quantBase + 64 * k + 4 * r + j, as: UInt8.self)
                                isum += Int32(byte) * a(4 * k + j)
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

/// The quantized matmul of `level` (default ``KernelLevel/current``; its ``KernelTable``) for
/// the row groups `groups`: AVX-512 VNNI (`vpdpwssd` for 16-bit activations, `vpdpbusd` for
/// 8-bit), AVX2 (`vpmaddwd` / `vpmaddubsw`, also used at the AVX-512 level) or the portable
/// kernel. A level this CPU cannot run gives the best one below it that it can
/// (``KernelTable/at(_:)``); tests pass each level in ``KernelLevel/supported`` in turn.
package func quantizedMatMul(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int, level: KernelLevel = KernelLevel.current
) {
    KernelTable.at(level).quantizedMatMul(w, act, batch, groups, y, ldy)
}

/// Which quantized kernel the current level uses (for `bench` and `inspect`).
package var quantizedKernelName: String { KernelTable.current.quantizedKernelName }

extension DType {
    /// The level modules' code for an interleaved16 tile type (``TileKind``), or nil.
    var tileKind: Int32? {
        switch self {
        case .q4_0: return TileKind.q4_0
        case .q4_1: return TileKind.q4_1
        case .q8_0: return TileKind.q8_0
        case .q8_a: return TileKind.q8_a
        case .q5_0: return TileKind.q5_0
        case .q5_1: return TileKind.q5_1
        case .q4_K: return TileKind.q4_K
        case .q5_K: return TileKind.q5_K
        case .q6_K: return TileKind.q6_K
        default: return nil
        }
    }
}

/// Portable kernel (any CPU): per tile, the 16 rows' weights are unpacked once into 16-bit
/// integers on the stack, then each token's exact integer dot products run as plain loops of
/// 16-bit multiplies summed in 32 bits, which compilers turn into the baseline's multiply-add
/// (`pmaddwd` on SSE2, `smlal` on NEON). No allocation; the SIMD kernels are the fast paths.
package func quantizedMatMulPortable(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    if act.bits == 16 {
        portableKernel(w, quants: act.wide, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
    } else {
        portableKernel(w, quants: act.quants, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
    }
}

/// ``quantizedMatMulPortable`` for one activation width (specialised for Int8 and Int16).
@inline(__always)
private func portableKernel<A: FixedWidthInteger>(
    _ w: WeightMatrix, quants: UnsafePointer<A>, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    if KernelTileGeometry(w.dtype) != nil {
        kernelTileMatMulPortable(w, quants: quants, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
        return
    }
    let blocks = w.blocksPerRow, cols = w.cols
    let zero = zeroPoint(w.dtype), affine = w.dtype.hasMinimum
    let isQ4 = w.dtype == .q4_0 || w.dtype == .q4_1
    let quantBase = affine ? 64 : 32
    withUnsafeTemporaryAllocation(of: Int16.self, capacity: 16 * 32) { buffer in
        guard let wq = buffer.baseAddress else { return }
        for g in groups {
            let rowsHere = min(16, w.rows - g * 16)
            for t in 0..<batch { (y + t * ldy + g * 16).update(repeating: 0, count: rowsHere) }
            for b in 0..<blocks {
                let tile = w.tile(group: g, block: b)
                let q = tile + quantBase
                if isQ4 {
                    for k in 0..<4 {
                        for r in 0..<16 {
                            for j in 0..<4 {
                                let byte = q.load(fromByteOffset: 64 * k + 4 * r + j, as: UInt8.self)
                                wq[r * 32 + 4 * k + j] = Int16(byte & 0x0f)
                                wq[r * 32 + 16 + 4 * k + j] = Int16(byte >> 4)
                            }
                        }
                    }
                } else {
                    for k in 0..<8 {
                        for r in 0..<16 {
                            for j in 0..<4 { wq[r * 32 + 4 * k + j] = Int16(q.load(fromByteOffset: 64 * k + 4 * r + j, as: UInt8.self)) }
                        }
                    }
                }
                for r in 0..<rowsHere {
                    let d = halfToFloat(tile.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self))
                    let m = affine ? halfToFloat(tile.loadUnaligned(fromByteOffset: 32 + 2 * r, as: UInt16.self)) : 0
                    let wr = wq + r * 32
                    for t in 0..<batch {
                        let a = quants + t * cols + b * 32
                        var isum: Int32 = 0
                        for i in 0..<32 { isum &+= Int32(wr[i]) &* Int32(a[i]) }
                        let da = act.scales[t * blocks + b], sa = act.sums[t * blocks + b]
                        y[t * ldy + g * 16 + r] += d * da * (Float(isum) - zero * sa) + m * da * sa
                    }
                }
            }
        }
    }
}
