/// A fixed orthonormal rotation of one attention head's vectors, applied to queries, keys and
/// values before a quantized (q8_0 / q4_0) KV cache stores them: H = W·D/√b per block of `b`
/// elements, D a fixed diagonal of ±1 and W the b × b Walsh–Hadamard matrix, `b` the largest
/// power of two (≤ 256) dividing the head dimension.
///
/// Why: a few key channels carry most of the magnitude (RoPE pairs with large norm weights),
/// and a 32-element block that holds one keeps coarse steps for the other 31. The rotation
/// spreads every channel over the whole block, so block maxima shrink toward the block's
/// root-mean-square and the same bits resolve more. Attention is unchanged in exact arithmetic:
/// scores are dot products, (Hq)·(Hk) = q·k, and the output Σ pᵢ·(H vᵢ) = H·o is turned back by
/// Hᵀ (``inverse(_:)``) before the output projection. Only the quantized caches use it; f16 and
/// f32 caches store keys and values as computed.
package struct HeadRotation: Sendable {
    /// Elements per head vector.
    package let headDim: Int
    /// Elements per Walsh–Hadamard block: the largest power of two dividing `headDim`, at most 256.
    package let block: Int
    /// D/√b: the signs times the normalisation, one per element of a head vector.
    private let factors: [Float]

    /// The rotation for heads of `headDim` elements (an odd count gives blocks of 1, the signs
    /// alone; zero or less, nothing to rotate).
    package init(headDim: Int) {
        self.headDim = max(0, headDim)
        var b = 1
        while b < 256 && self.headDim > 0 && self.headDim % (2 * b) == 0 { b *= 2 }
        block = b
        // Fixed signs (SplitMix64 of the element index, one bit each): the same on every run and
        // machine, so a saved cache reads back.
        let norm = 1 / Float(b).squareRoot()
        factors = (0..<self.headDim).map { i in
            var z = UInt64(i) &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return z & 1 == 0 ? norm : -norm
        }
    }

    /// x ← H·x for one head vector of `headDim` floats.
    package func forward(_ x: UnsafeMutablePointer<Float>) {
        factors.withUnsafeBufferPointer { f in
            for i in 0..<headDim { x[i] *= f[i] }
        }
        var start = 0
        while start < headDim {
            Self.walshHadamard(x + start, block)
            start += block
        }
    }

    /// x ← Hᵀ·x (the inverse: H is orthonormal).
    package func inverse(_ x: UnsafeMutablePointer<Float>) {
        var start = 0
        while start < headDim {
            Self.walshHadamard(x + start, block)
            start += block
        }
        factors.withUnsafeBufferPointer { f in
            for i in 0..<headDim { x[i] *= f[i] }
        }
    }

    /// In-place unnormalised Walsh–Hadamard transform of `n` floats (n a power of two): each
    /// 16-float chunk in registers, then butterflies between chunks at strides 16, 32, … n/2.
    @inline(__always)
    static func walshHadamard(_ x: UnsafeMutablePointer<Float>, _ n: Int) {
        guard n >= 16 else {
            var h = 1
            while h < n {
                var i = 0
                while i < n {
                    for j in i..<(i + h) {
                        let a = x[j], b = x[j + h]
                        x[j] = a + b
                        x[j + h] = a - b
                    }
                    i += 2 * h
                }
                h *= 2
            }
            return
        }
        let raw = UnsafeMutableRawPointer(x)
        var c = 0
        while c < n {
            let v = raw.loadUnaligned(fromByteOffset: 4 * c, as: SIMD16<Float>.self)
            raw.storeBytes(of: wht16(v), toByteOffset: 4 * c, as: SIMD16<Float>.self)
            c += 16
        }
        var h = 16
        while h < n {
            var i = 0
            while i < n {
                var j = i
                while j < i + h {
                    let a = raw.loadUnaligned(fromByteOffset: 4 * j, as: SIMD16<Float>.self)
                    let b = raw.loadUnaligned(fromByteOffset: 4 * (j + h), as: SIMD16<Float>.self)
                    raw.storeBytes(of: a + b, toByteOffset: 4 * j, as: SIMD16<Float>.self)
                    raw.storeBytes(of: a - b, toByteOffset: 4 * (j + h), as: SIMD16<Float>.self)
                    j += 16
                }
                i += 2 * h
            }
            h *= 2
        }
    }

    // W₂ₙ·(l, h) = (Wₙl + Wₙh, Wₙl − Wₙh), down to pairs.
    @inline(__always)
    static func wht16(_ v: SIMD16<Float>) -> SIMD16<Float> {
        let l = wht8(v.lowHalf), h = wht8(v.highHalf)
        return SIMD16(lowHalf: l + h, highHalf: l - h)
    }

    @inline(__always)
    static func wht8(_ v: SIMD8<Float>) -> SIMD8<Float> {
        let l = wht4(v.lowHalf), h = wht4(v.highHalf)
        return SIMD8(lowHalf: l + h, highHalf: l - h)
    }

    @inline(__always)
    static func wht4(_ v: SIMD4<Float>) -> SIMD4<Float> {
        let l = SIMD2(v[0] + v[1], v[0] - v[1]), h = SIMD2(v[2] + v[3], v[2] - v[3])
        return SIMD4(lowHalf: l + h, highHalf: l - h)
    }
}
