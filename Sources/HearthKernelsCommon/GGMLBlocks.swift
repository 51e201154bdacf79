/// Scalar reference dequantizers for ggml's block types beyond q4_0/q4_1/q8_0, written from
/// the published block layouts (ggml-common.h's `block_q5_0` … `block_q6_K`; the element
/// order and arithmetic follow `dequantize_row_*` in ggml-quants.c and gguf-py's quants.py).
///
/// Each function reads one block at `p` (unaligned is fine) and writes `DType.blockSize`
/// floats. The float operations are done in the same order as the references, so results
/// are bit-identical to gguf-py's `gguf.quants.dequantize` (Tests/HearthKernelsTests/GGMLBlockTests.swift).
/// These are the `…Reference` twins the fast kernels are tested against, and, compiled into
/// each kernel level (`@inlinable @inline(__always)`), the dequantizers of the block types that
/// level has no dedicated kernel for.
public enum GGMLBlocks {
    /// The little-endian f16 at `offset`, as Float.
    @inlinable @inline(__always)
    public static func half(_ p: UnsafeRawPointer, _ offset: Int) -> Float {
        halfToFloat(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
    }

    /// The byte at `offset`.
    @inlinable @inline(__always)
    public static func byte(_ p: UnsafeRawPointer, _ offset: Int) -> UInt8 {
        p.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// q5_0 (22 bytes, 32 weights): f16 d, u32 high bits `qh`, 16 nibble bytes.
    /// Element i < 16 is the low nibble of byte i, element i + 16 its high nibble; bit i of
    /// `qh` is element i's fifth bit. w = d·(q − 16).
    @inlinable @inline(__always)
    public static func dequantizeQ5_0(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = half(p, 0)
        let qh = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 2, as: UInt32.self))
        for i in 0..<16 {
            let b = byte(p, 6 + i)
            let lo = Int32(b & 0x0f) | Int32((qh >> UInt32(i)) & 1) << 4
            let hi = Int32(b >> 4) | Int32((qh >> UInt32(i + 16)) & 1) << 4
            out[i] = d * Float(lo - 16)
            out[i + 16] = d * Float(hi - 16)
        }
    }

    /// q5_1 (24 bytes, 32 weights): f16 d, f16 m, u32 high bits, 16 nibble bytes (order as
    /// q5_0). w = d·q + m.
    @inlinable @inline(__always)
    public static func dequantizeQ5_1(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = half(p, 0), m = half(p, 2)
        let qh = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        for i in 0..<16 {
            let b = byte(p, 8 + i)
            let lo = UInt32(b & 0x0f) | ((qh >> UInt32(i)) & 1) << 4
            let hi = UInt32(b >> 4) | ((qh >> UInt32(i + 16)) & 1) << 4
            out[i] = d * Float(lo) + m
            out[i + 16] = d * Float(hi) + m
        }
    }

    /// q2_K (84 bytes, 256 weights): 16 bytes of 4-bit scale (low) / 4-bit min (high) per
    /// 16-weight group, 64 bytes of 2-bit quants, f16 d, f16 dmin.
    /// Element 128c + 32s + l (c < 2, s < 4, l < 32) is bits 2s…2s+1 of quant byte 32c + l;
    /// its group is element / 16. w = (d·scale)·q − dmin·min.
    @inlinable @inline(__always)
    public static func dequantizeQ2_K(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = half(p, 80), dmin = half(p, 82)
        for c in 0..<2 {
            for s in 0..<4 {
                for l in 0..<32 {
                    let e = 128 * c + 32 * s + l
                    let sc = byte(p, e / 16)
                    let dl = d * Float(sc & 0x0f), ml = dmin * Float(sc >> 4)
                    let q = (byte(p, 16 + 32 * c + l) >> UInt8(2 * s)) & 3
                    out[e] = dl * Float(q) - ml
                }
            }
        }
    }

    /// q3_K (110 bytes, 256 weights): 32 bytes of high-bit mask, 64 bytes of 2-bit quants,
    /// 12 bytes packing sixteen 6-bit scales, f16 d.
    /// Element 128c + 32s + l has low bits 2s…2s+1 of quant byte 32c + l and high bit
    /// (4c + s) of mask byte l; q = low − (high bit set ? 0 : 4). Scale j (group of 16) is
    /// the j-th nibble of bytes 0…7 (low nibbles first) with bits 2(j/4)… of byte 8 + j%4 on
    /// top, minus 32. w = (d·scale)·q.
    @inlinable @inline(__always)
    public static func dequantizeQ3_K(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = half(p, 108)
        var scales = SIMD16<Int32>()  // no heap allocation
        for j in 0..<16 {
            let low = j < 8 ? byte(p, 96 + j) & 0x0f : byte(p, 96 + j - 8) >> 4
            let high = (byte(p, 96 + 8 + j % 4) >> UInt8(2 * (j / 4))) & 3
            scales[j] = Int32(low | high << 4) - 32
        }
        for c in 0..<2 {
            for s in 0..<4 {
                for l in 0..<32 {
                    let e = 128 * c + 32 * s + l
                    let low = Int32((byte(p, 32 + 32 * c + l) >> UInt8(2 * s)) & 3)
                    let set = (byte(p, l) >> UInt8(4 * c + s)) & 1 != 0
                    let dl = d * Float(scales[e / 16])
                    out[e] = dl * Float(low - (set ? 0 : 4))
                }
            }
        }
    }

    /// The 6-bit scale and min of sub-block `j` (< 8) from the 12 packed bytes at `s`
    /// (shared by q4_K and q5_K): j < 4 in the low 6 bits of bytes j and j + 4; j ≥ 4 in the
    /// nibbles of byte j + 4 with their top two bits in bits 6–7 of bytes j − 4 and j.
    @inlinable @inline(__always)
    public static func scaleMinK4(_ s: UnsafeRawPointer, _ j: Int) -> (scale: UInt8, min: UInt8) {
        if j < 4 {
            return (byte(s, j) & 63, byte(s, j + 4) & 63)
        }
        let scale = (byte(s, j + 4) & 0x0f) | ((byte(s, j - 4) >> 6) << 4)
        let min = (byte(s, j + 4) >> 4) | ((byte(s, j) >> 6) << 4)
        return (scale, min)
    }

    /// q4_K (144 bytes, 256 weights): f16 d, f16 dmin, 12 bytes of 6-bit scales/mins for
    /// eight 32-weight sub-blocks, 128 nibble bytes. Element 64c + 32h + l (c < 4) is nibble h
    /// of byte 32c + l, in sub-block 2c + h. w = (d·scale)·q − dmin·min.
    @inlinable @inline(__always)
    public static func dequantizeQ4_K(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = half(p, 0), dmin = half(p, 2)
        for c in 0..<4 {
            for h in 0..<2 {
                let (sc, mn) = scaleMinK4(p + 4, 2 * c + h)
                let d1 = d * Float(sc), m1 = dmin * Float(mn)
                for l in 0..<32 {
                    let q = (byte(p, 16 + 32 * c + l) >> UInt8(4 * h)) & 0x0f
                    out[64 * c + 32 * h + l] = d1 * Float(q) - m1
                }
            }
        }
    }

    /// q5_K (176 bytes, 256 weights): f16 d, f16 dmin, 12 scale/min bytes (as q4_K), 32 bytes
    /// of high bits, 128 nibble bytes. Element e = 64c + 32h + l takes nibble h of byte
    /// 32c + l and, as fifth bit, bit e / 32 of high-bit byte l. w = (d·scale)·q − dmin·min.
    @inlinable @inline(__always)
    public static func dequantizeQ5_K(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = half(p, 0), dmin = half(p, 2)
        for c in 0..<4 {
            for h in 0..<2 {
                let j = 2 * c + h
                let (sc, mn) = scaleMinK4(p + 4, j)
                let d1 = d * Float(sc), m1 = dmin * Float(mn)
                for l in 0..<32 {
                    let low = (byte(p, 48 + 32 * c + l) >> UInt8(4 * h)) & 0x0f
                    let high = (byte(p, 16 + l) >> UInt8(j)) & 1
                    out[32 * j + l] = d1 * Float(low | high << 4) - m1
                }
            }
        }
    }

    /// q6_K (210 bytes, 256 weights): 128 bytes of low nibbles, 64 bytes of high 2-bit pairs,
    /// 16 int8 scales (one per 16 weights), f16 d. Element 128c + 64h + l (l < 64) takes
    /// nibble h of low byte 64c + l; element 128c + 32s + l (l < 32) takes bits 2s…2s+1 of
    /// high byte 32c + l. q = (low | high << 4) − 32; w = (d·scale)·q.
    @inlinable @inline(__always)
    public static func dequantizeQ6_K(_ p: UnsafeRawPointer, into out: UnsafeMutablePointer<Float>) {
        let d = half(p, 208)
        for c in 0..<2 {
            for s in 0..<4 {
                for l in 0..<32 {
                    let e = 128 * c + 32 * s + l
                    // s selects the 32-element quarter; the low-nibble byte and half follow.
                    let lowByte = byte(p, 64 * c + 32 * (s % 2) + l)
                    let low = (lowByte >> UInt8(4 * (s / 2))) & 0x0f
                    let high = (byte(p, 128 + 32 * c + l) >> UInt8(2 * s)) & 3
                    let scale = Int8(bitPattern: byte(p, 192 + e / 16))
                    let q = Int32(low | high << 4) - 32
                    out[e] = (d * Float(scale)) * Float(q)
                }
            }
        }
    }
}

