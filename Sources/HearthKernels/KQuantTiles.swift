import HearthKernelsCommon

// The interleaved16 tiles of q5_0, q5_1 and the K-quants q4_K, q5_K, q6_K (layout: ``KTile``):
// the lossless repack from GGUF blocks, the row dequantizer, and the tile reader of the portable
// integer kernel (the scalar reference reads tiles on its own: TileReference.swift).

/// Where a type's quants live inside its tile.
struct KernelTileGeometry {
    /// Offset of sub-block 0's 256 nibble bytes; sub-block s is 256·s further.
    let nibbles: Int
    /// Offset of sub-block 0's high-bit plane (nil: 4-bit type); sub-block s is `planeBytes`·s further.
    let high: Int?
    /// High bits per weight (1 or 2).
    let highBits: Int
    /// 32-column sub-blocks per tile (1 or 8).
    let subBlocks: Int

    var planeBytes: Int { 64 * highBits }

    init?(_ dtype: DType) {
        switch dtype {
        case .q5_0: self.init(nibbles: KTile.q5_0Nibbles, high: KTile.q5_0High, highBits: 1, subBlocks: 1)
        case .q5_1: self.init(nibbles: KTile.q5_1Nibbles, high: KTile.q5_1High, highBits: 1, subBlocks: 1)
        case .q4_K: self.init(nibbles: KTile.kNibbles, high: nil, highBits: 0, subBlocks: 8)
        case .q5_K: self.init(nibbles: KTile.kNibbles, high: KTile.k5High, highBits: 1, subBlocks: 8)
        case .q6_K: self.init(nibbles: KTile.q6Nibbles, high: KTile.q6High, highBits: 2, subBlocks: 8)
        default: return nil
        }
    }

    private init(nibbles: Int, high: Int?, highBits: Int, subBlocks: Int) {
        self.nibbles = nibbles
        self.high = high
        self.highBits = highBits
        self.subBlocks = subBlocks
    }

    /// The stored (unsigned) quant of element `e` (< 32) of sub-block `s`, row `r`.
    @inline(__always)
    func quant(_ tile: UnsafeRawPointer, sub s: Int, row r: Int, element e: Int) -> Int32 {
        let k = (e % 16) / 4, j = e % 4
        let byte = tile.load(fromByteOffset: nibbles + 256 * s + 64 * k + 4 * r + j, as: UInt8.self)
        var q = Int32(e < 16 ? byte & 0x0f : byte >> 4)
        if let high {
            let plane = tile + high + planeBytes * s
            if highBits == 1 {
                let m = e < 16 ? k : 4 + k
                q |= Int32((plane.load(fromByteOffset: 4 * r + j, as: UInt8.self) >> UInt8(m)) & 1) << 4
            } else {
                let bits = plane.load(fromByteOffset: (e < 16 ? 0 : 64) + 4 * r + j, as: UInt8.self)
                q |= Int32((bits >> UInt8(2 * k)) & 3) << 4
            }
        }
        return q
    }

    /// Stores the 32 quants `q` (unsigned, < 64) of sub-block `s`, row `r`: whole words and
    /// bytes, every byte of the row's share of the sub-block written (no read-modify-write).
    @inline(__always)
    func placeSubBlock(_ q: UnsafePointer<UInt8>, _ tile: UnsafeMutableRawPointer, sub s: Int, row r: Int) {
        let at = tile + nibbles + 256 * s + 4 * r
        for k in 0..<4 {
            var word: UInt32 = 0
            for j in 0..<4 {
                let byte = UInt32(q[4 * k + j] & 0x0f) | UInt32(q[16 + 4 * k + j] & 0x0f) << 4
                word |= byte << UInt32(8 * j)
            }
            at.storeBytes(of: word.littleEndian, toByteOffset: 64 * k, as: UInt32.self)
        }
        guard let high else { return }
        let plane = tile + high + planeBytes * s + 4 * r
        for j in 0..<4 {
            if highBits == 1 {
                var bits: UInt8 = 0
                for k in 0..<4 {
                    bits |= ((q[4 * k + j] >> 4) & 1) << UInt8(k) | ((q[16 + 4 * k + j] >> 4) & 1) << UInt8(4 + k)
                }
                plane.storeBytes(of: bits, toByteOffset: j, as: UInt8.self)
            } else {
                var low: UInt8 = 0, upper: UInt8 = 0
                for k in 0..<4 {
                    low |= ((q[4 * k + j] >> 4) & 3) << UInt8(2 * k)
                    upper |= ((q[16 + 4 * k + j] >> 4) & 3) << UInt8(2 * k)
                }
                plane.storeBytes(of: low, toByteOffset: j, as: UInt8.self)
                plane.storeBytes(of: upper, toByteOffset: 64 + j, as: UInt8.self)
            }
        }
    }
}

extension Quantizer {
    /// Places one GGUF block of q5_0, q5_1, q4_K, q5_K or q6_K as row `r` of a tile: each
    /// 32-weight sub-block's quants are gathered, then stored whole (``KernelTileGeometry/placeSubBlock``).
    static func interleaveGGML(block p: UnsafeRawPointer, dtype: DType, row r: Int, into tile: UnsafeMutableRawPointer) {
        guard let geometry = KernelTileGeometry(dtype) else { return }
        func copyHalf(_ from: Int, _ to: Int) {
            tile.storeBytes(of: p.loadUnaligned(fromByteOffset: from, as: UInt16.self), toByteOffset: to, as: UInt16.self)
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            guard let q = buffer.baseAddress else { return }
            let bytes = p.assumingMemoryBound(to: UInt8.self)
            switch dtype {
            case .q5_0, .q5_1:
                copyHalf(0, 2 * r)
                if dtype == .q5_1 { copyHalf(2, 32 + 2 * r) }
                let header = dtype == .q5_1 ? 4 : 2
                let qh = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: header, as: UInt32.self))
                for i in 0..<16 {
                    let b = bytes[header + 4 + i]
                    q[i] = (b & 0x0f) | UInt8((qh >> UInt32(i)) & 1) << 4
                    q[i + 16] = (b >> 4) | UInt8((qh >> UInt32(i + 16)) & 1) << 4
                }
                geometry.placeSubBlock(q, tile, sub: 0, row: r)
            case .q4_K, .q5_K:
                copyHalf(0, 2 * r)
                copyHalf(2, KTile.kDmin + 2 * r)
                let nibbles = dtype == .q4_K ? 16 : 48
                for s in 0..<8 {
                    let (sc, mn) = GGMLBlocks.scaleMinK4(p + 4, s)
                    tile.storeBytes(of: sc, toByteOffset: KTile.kScales + 16 * s + r, as: UInt8.self)
                    tile.storeBytes(of: mn, toByteOffset: KTile.kMins + 16 * s + r, as: UInt8.self)
                    let c = s / 2, shift = UInt8(4 * (s % 2))
                    for l in 0..<32 {
                        q[l] = (bytes[nibbles + 32 * c + l] >> shift) & 0x0f
                        if dtype == .q5_K { q[l] |= ((bytes[16 + l] >> UInt8(s)) & 1) << 4 }
                    }
                    geometry.placeSubBlock(q, tile, sub: s, row: r)
                }
            case .q6_K:
                copyHalf(208, 2 * r)
                for g in 0..<16 {
                    tile.storeBytes(of: bytes[192 + g], toByteOffset: KTile.q6Scales + 16 * g + r, as: UInt8.self)
                }
                for c in 0..<2 {
                    for s in 0..<4 {
                        let lowShift = UInt8(4 * (s / 2)), highShift = UInt8(2 * s)
                        for l in 0..<32 {
                            let low = (bytes[64 * c + 32 * (s % 2) + l] >> lowShift) & 0x0f
                            let high = (bytes[128 + 32 * c + l] >> highShift) & 3
                            q[l] = low | high << 4
                        }
                        geometry.placeSubBlock(q, tile, sub: 4 * c + s, row: r)
                    }
                }
            default:
                break
            }
        }
    }
}

/// Dequantizes row `r` of a q5_0, q5_1, q4_K, q5_K or q6_K tile (`dtype.blockSize` floats),
/// with the float operations of ``GGMLBlocks`` in the same order, so the values are identical.
func dequantizeKernelTile(_ tile: UnsafeRawPointer, dtype: DType, row r: Int, into out: UnsafeMutablePointer<Float>) {
    guard let geometry = KernelTileGeometry(dtype) else { return }
    let d = halfToFloat(tile.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self))
    switch dtype {
    case .q5_0, .q5_1:
        let m = dtype == .q5_1 ? halfToFloat(tile.loadUnaligned(fromByteOffset: 32 + 2 * r, as: UInt16.self)) : 0
        for e in 0..<32 {
            let q = geometry.quant(tile, sub: 0, row: r, element: e)
            out[e] = dtype == .q5_1 ? d * Float(q) + m : d * Float(q - 16)
        }
    case .q4_K, .q5_K:
        let dmin = halfToFloat(tile.loadUnaligned(fromByteOffset: KTile.kDmin + 2 * r, as: UInt16.self))
        for s in 0..<8 {
            let d1 = d * Float(tile.load(fromByteOffset: KTile.kScales + 16 * s + r, as: UInt8.self))
            let m1 = dmin * Float(tile.load(fromByteOffset: KTile.kMins + 16 * s + r, as: UInt8.self))
            for e in 0..<32 { out[32 * s + e] = d1 * Float(geometry.quant(tile, sub: s, row: r, element: e)) - m1 }
        }
    case .q6_K:
        for s in 0..<8 {
            for e in 0..<32 {
                let scale = Int8(bitPattern: tile.load(fromByteOffset: KTile.q6Scales + 16 * (2 * s + e / 16) + r, as: UInt8.self))
                out[32 * s + e] = (d * Float(scale)) * Float(geometry.quant(tile, sub: s, row: r, element: e) - 32)
            }
        }
    default:
        break
    }
}

/// Unpacks sub-block `s` of a q5_0, q5_1, q4_K, q5_K or q6_K tile into exact integer weights
/// and per-row factors: w[r][e] = `scale[r]`·`values[32r + e]` + `minimum[r]`, with the
/// integer sub-block scales of the K-quants folded into the values (|value| ≤ 127·32).
/// The portable integer kernel reads tiles through this.
func unpackKernelTile(
    _ tile: UnsafeRawPointer, dtype: DType, sub s: Int, values: UnsafeMutablePointer<Int16>,
    scale: UnsafeMutablePointer<Float>, minimum: UnsafeMutablePointer<Float>
) {
    guard let geometry = KernelTileGeometry(dtype) else { return }
    for r in 0..<16 {
        let d = halfToFloat(tile.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self))
        scale[r] = d
        switch dtype {
        case .q5_0, .q5_1:
            minimum[r] = dtype == .q5_1 ? halfToFloat(tile.loadUnaligned(fromByteOffset: 32 + 2 * r, as: UInt16.self)) : 0
            let zero: Int32 = dtype == .q5_0 ? 16 : 0
            for e in 0..<32 { values[32 * r + e] = Int16(geometry.quant(tile, sub: 0, row: r, element: e) - zero) }
        case .q4_K, .q5_K:
            let dmin = halfToFloat(tile.loadUnaligned(fromByteOffset: KTile.kDmin + 2 * r, as: UInt16.self))
            minimum[r] = -dmin * Float(tile.load(fromByteOffset: KTile.kMins + 16 * s + r, as: UInt8.self))
            let sc = Int32(tile.load(fromByteOffset: KTile.kScales + 16 * s + r, as: UInt8.self))
            for e in 0..<32 { values[32 * r + e] = Int16(sc * geometry.quant(tile, sub: s, row: r, element: e)) }
        case .q6_K:
            minimum[r] = 0
            for e in 0..<32 {
                let sc = Int32(Int8(bitPattern: tile.load(fromByteOffset: KTile.q6Scales + 16 * (2 * s + e / 16) + r, as: UInt8.self)))
                values[32 * r + e] = Int16(sc * (geometry.quant(tile, sub: s, row: r, element: e) - 32))
            }
        default:
            break
        }
    }
}

/// The integer matmul over q5_0, q5_1, q4_K, q5_K or q6_K tiles with plain loops (the portable
/// level's kernel for these types; its reference is `tileMatMulReference`): per sub-block,
/// the exact integer dot of the unpacked weights with the 8-bit activations, then
/// y += scale·d_a·Σ + minimum·d_a·Σa. No allocation (stack buffers).
@inline(__always)
func kernelTileMatMulPortable<A: FixedWidthInteger>(
    _ w: WeightMatrix, quants: UnsafePointer<A>, act: QuantizedActivations, batch: Int, groups: Range<Int>,
    y: UnsafeMutablePointer<Float>, ldy: Int
) {
    guard let geometry = KernelTileGeometry(w.dtype) else { return }
    let blocks = w.blocksPerRow, cols = w.cols, actBlocks = cols / 32
    withUnsafeTemporaryAllocation(of: Int16.self, capacity: 16 * 32) { valuesBuffer in
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 32) { factors in
            guard let values = valuesBuffer.baseAddress, let scale = factors.baseAddress else { return }
            let minimum = scale + 16
            for g in groups {
                let rowsHere = min(16, w.rows - g * 16)
                for t in 0..<batch { (y + t * ldy + g * 16).update(repeating: 0, count: rowsHere) }
                for b in 0..<blocks {
                    let tile = w.tile(group: g, block: b)
                    for s in 0..<geometry.subBlocks {
                        unpackKernelTile(tile, dtype: w.dtype, sub: s, values: values, scale: scale, minimum: minimum)
                        let ab = b * geometry.subBlocks + s
                        for r in 0..<rowsHere {
                            let wr = values + 32 * r
                            for t in 0..<batch {
                                let a = quants + t * cols + 32 * ab
                                var isum: Int32 = 0
                                for i in 0..<32 { isum &+= Int32(wr[i]) &* Int32(a[i]) }
                                let da = act.scales[t * actBlocks + ab], sa = act.sums[t * actBlocks + ab]
                                y[t * ldy + g * 16 + r] += scale[r] * da * Float(isum) + minimum[r] * da * sa
                            }
                        }
                    }
                }
            }
        }
    }
}
