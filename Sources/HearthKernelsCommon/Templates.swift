/// Kernel bodies written once and compiled at every instruction-set level.
///
/// Each level module (`HearthKernelsAVX2`, `HearthKernelsAVX512`, …) is built for its own target
/// CPU and wraps these `@inline(__always)` bodies in a non-generic `@inline(never)` entry point,
/// so the same source becomes AVX2, AVX-512 or baseline machine code and no wide instruction
/// leaks into code that runs on every CPU. This module itself is built for the baseline and
/// holds no hot loop of its own. See docs/KERNELS.md.

/// The tile kinds of the interleaved16 layout, as the level modules' entry points take them.
public enum TileKind {
    /// w = d·(q − 8), q stored as 0…15.
    public static let q4_0: Int32 = 0
    /// w = d·q + m, q 0…15.
    public static let q4_1: Int32 = 1
    /// w = d·q, q stored as q + 128.
    public static let q8_0: Int32 = 2
    /// w = d·q + m, q 0…255.
    public static let q8_a: Int32 = 3
}

/// Quantizes rows `rows` of `x` (`cols` floats each, a multiple of 32) to 8-bit blocks of 32:
/// d = max|x| / 127, q = round(x / d) (half away from zero), and Σq per block — the second
/// operand of the integer dot products.
@inlinable @inline(__always)
public func quantizeActivationRows(
    _ x: UnsafePointer<Float>, rows: Range<Int>, cols: Int, quants: UnsafeMutablePointer<Int8>,
    scales: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>
) {
    let blocks = cols / 32
    for r in rows {
        for b in 0..<blocks {
            let src = x + r * cols + b * 32
            var amax: Float = 0
            for i in 0..<32 { amax = max(amax, abs(src[i])) }
            let d = amax / 127
            let id: Float = d != 0 ? 1 / d : 0
            let dst = quants + r * cols + b * 32
            var sum: Int32 = 0
            for i in 0..<32 {
                let q = Int8((src[i] * id).rounded())
                dst[i] = q
                sum += Int32(q)
            }
            scales[r * blocks + b] = d
            sums[r * blocks + b] = Float(sum)
        }
    }
}

/// Field readers of ggml's block layouts, shared by the scalar references and the SIMD kernels.
public enum GGMLFields {
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

    /// Scale and minimum of q4_K/q5_K sub-block `j` (0…7) from the 12 packed 6-bit bytes at `s`
    /// (`get_scale_min_k4` in ggml-quants.c).
    @inlinable @inline(__always)
    public static func scaleMinK4(_ s: UnsafeRawPointer, _ j: Int) -> (scale: UInt8, min: UInt8) {
        if j < 4 {
            return (byte(s, j) & 63, byte(s, j + 4) & 63)
        }
        let scale = (byte(s, j + 4) & 0x0f) | ((byte(s, j - 4) >> 6) << 4)
        let min = (byte(s, j + 4) >> 4) | ((byte(s, j) >> 6) << 4)
        return (scale, min)
    }
}

/// The ggml block types the AVX-512 level decodes in registers, as its entry points take them.
public enum GGMLKind {
    /// q5_0: 22 bytes, 32 weights.
    public static let q5_0: Int32 = 0
    /// q4_K: 144 bytes, 256 weights.
    public static let q4_K: Int32 = 1
    /// q6_K: 210 bytes, 256 weights.
    public static let q6_K: Int32 = 2

    /// Bytes and weights of one block of `kind`.
    @inlinable
    public static func layout(_ kind: Int32) -> (bytes: Int, weights: Int) {
        kind == q5_0 ? (22, 32) : kind == q4_K ? (144, 256) : (210, 256)
    }
}
