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
    /// w = d·(q − 16), q 0…31: q4_0's nibbles plus a plane of fifth bits (``KTile``).
    public static let q5_0: Int32 = 4
    /// w = d·q + m, q 0…31.
    public static let q5_1: Int32 = 5
    /// 256-column super-block tiles: w = (d·sc)·q − dmin·m, 6-bit sc and m per 32 columns.
    public static let q4_K: Int32 = 6
    /// As q4_K with q 0…31 (a plane of fifth bits).
    public static let q5_K: Int32 = 7
    /// 256-column super-block tiles: w = d·sc·(q − 32), q 0…63, int8 sc per 16 columns.
    public static let q6_K: Int32 = 8
}

/// Calls `body` once, with `kind` as the constant of its case, so that a kernel body inlined into
/// `body` is compiled once per tile kind with the kind folded (the 16-bit kernels' entry points
/// of the AVX2 and AVX-512 VNNI levels dispatch through this).
@_transparent
public func withConstantTileKind(_ kind: Int32, _ body: (Int32) -> Void) {
    switch kind {
    case TileKind.q4_0: body(TileKind.q4_0)
    case TileKind.q4_1: body(TileKind.q4_1)
    case TileKind.q8_0: body(TileKind.q8_0)
    case TileKind.q8_a: body(TileKind.q8_a)
    case TileKind.q5_0: body(TileKind.q5_0)
    case TileKind.q5_1: body(TileKind.q5_1)
    case TileKind.q4_K: body(TileKind.q4_K)
    case TileKind.q5_K: body(TileKind.q5_K)
    default: body(TileKind.q6_K)
    }
}

/// Byte offsets inside the interleaved16 tiles of the 5-bit and K-quant types (docs/KERNELS.md).
///
/// Every 32-column sub-block keeps q4_0's nibble arrangement (256 bytes: chunk k, byte 4r + j
/// holds element 4k + j of row r in its low nibble and element 16 + 4k + j in its high nibble),
/// so after masking one 32-byte half is four weights of each of eight rows. "Vector" m (0…7) of
/// a sub-block is chunk m's low nibbles for m < 4 and chunk m − 4's high nibbles for m ≥ 4.
/// - fifth-bit plane (q5_0, q5_1, q5_K): 64 bytes per sub-block; bit m of byte 4r + j is the
///   fifth bit of vector m's weight at that byte.
/// - 2-bit plane (q6_K): 128 bytes per sub-block; bits 2k…2k+1 of byte 4r + j of the first
///   64 bytes are the top bits of vector k's weight (k < 4), of the second 64 bytes vector 4 + k's.
/// K-quant tiles cover 16 rows × 256 columns (one super-block per row) with the per-row
/// super-block scales as f16 and the sub-block scales unpacked to one byte each.
public enum KTile {
    /// q5_0 (352 bytes): 16 f16 d, the fifth-bit plane, the nibbles.
    public static let q5_0High = 32, q5_0Nibbles = 96
    /// q5_1 (384 bytes): 16 f16 d, 16 f16 m, the fifth-bit plane, the nibbles.
    public static let q5_1High = 64, q5_1Nibbles = 128
    /// q4_K and q5_K: 16 f16 d at 0, 16 f16 dmin at `dmin`, then 8 × 16 scale bytes (sub-block s,
    /// row r at `scales + 16s + r`), 8 × 16 min bytes, 8 × 256 nibble bytes, and for q5_K
    /// 8 × 64 bytes of fifth-bit planes. 2368 / 2880 bytes.
    public static let kDmin = 32, kScales = 64, kMins = 192, kNibbles = 320, k5High = 2368
    /// q6_K (3360 bytes): 16 f16 d, 16 × 16 int8 scales (16-column group s, row r at
    /// `q6Scales + 16s + r`), 8 × 256 nibble bytes, 8 × 128 bytes of 2-bit planes.
    public static let q6Scales = 32, q6Nibbles = 288, q6High = 2336
}

/// The 8-bit activations of eight consecutive tokens interleaved per 32-column block, the
/// operand of the AVX-512 VNNI register kernels for a batch (HearthKernels'
/// `QuantizedActivations.panels`): panel P holds tokens 8P…8P + 7, one record per block of 32
/// columns, so a kernel reaches every token's bytes, scale and offset sums of a block from one
/// pointer at fixed displacements. Record (384 bytes), token j of the panel:
/// - byte 32m + 4j + i (m < 8, i < 4): the quant of column 4m + i;
/// - Float at `scales` + 4j: the block's scale d; at `sums` + 4j: d·Σq;
/// - Int32 at `halfSums` + 4j and `halfSums` + 32 + 4j: −32·Σq over columns 0–15 and 16–31 (q6_K's
///   zero point times the half's quant sum, negated: the start of its integer dots, so they end
///   on the signed products; |32·Σq| ≤ 32·16·127).
/// Slots past the batch's last token hold whatever was there (their results are dropped).
public enum ActivationPanel {
    /// Tokens per panel.
    public static let tokens = 8
    /// Bytes per 32-column record, and the offsets of its float fields.
    public static let recordBytes = 384, scales = 256, sums = 288, halfSums = 320
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
                // NaN (a NaN in the block makes the scale NaN) and out-of-range values would trap.
                let v = (src[i] * id).rounded()
                let q = v.isNaN ? 0 : Int8(max(-127, min(127, v)))
                dst[i] = q
                sum += Int32(q)
            }
            scales[r * blocks + b] = d
            sums[r * blocks + b] = Float(sum)
        }
    }
}

/// Quantizes rows `rows` of `x` (`cols` floats each, a multiple of 32) to 16-bit blocks of 32:
/// d = max|x| / 32767, q = round(x / d) (half away from zero), and Σq per block (exact in a
/// Float: |Σq| ≤ 32·32767 < 2²⁴).
@inlinable @inline(__always)
public func quantizeActivationRows16(
    _ x: UnsafePointer<Float>, rows: Range<Int>, cols: Int, quants: UnsafeMutablePointer<Int16>,
    scales: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>
) {
    let blocks = cols / 32
    for r in rows {
        for b in 0..<blocks {
            let src = x + r * cols + b * 32
            var amax: Float = 0
            for i in 0..<32 { amax = max(amax, abs(src[i])) }
            let d = amax / 32767
            let id: Float = d != 0 ? 1 / d : 0
            let dst = quants + r * cols + b * 32
            var sum: Int32 = 0
            for i in 0..<32 {
                let q = Int16(max(-32767, min(32767, (src[i] * id).rounded())))
                dst[i] = q
                sum += Int32(q)
            }
            scales[r * blocks + b] = d
            sums[r * blocks + b] = Float(sum)
        }
    }
}

/// ggml's block types beyond q4_0/q4_1/q8_0, as the level modules' entry points take them.
/// The first three are the ones the AVX-512 level decodes in registers.
public enum GGMLKind {
    /// q5_0: 22 bytes, 32 weights.
    public static let q5_0: Int32 = 0
    /// q4_K: 144 bytes, 256 weights.
    public static let q4_K: Int32 = 1
    /// q6_K: 210 bytes, 256 weights.
    public static let q6_K: Int32 = 2
    /// q5_1: 24 bytes, 32 weights.
    public static let q5_1: Int32 = 3
    /// q2_K: 84 bytes, 256 weights.
    public static let q2_K: Int32 = 4
    /// q3_K: 110 bytes, 256 weights.
    public static let q3_K: Int32 = 5
    /// q5_K: 176 bytes, 256 weights.
    public static let q5_K: Int32 = 6

    /// Bytes and weights of one block of `kind`.
    @inlinable @inline(__always)
    public static func layout(_ kind: Int32) -> (bytes: Int, weights: Int) {
        switch kind {
        case q5_0: return (22, 32)
        case q4_K: return (144, 256)
        case q6_K: return (210, 256)
        case q5_1: return (24, 32)
        case q2_K: return (84, 256)
        case q3_K: return (110, 256)
        default: return (176, 256)
        }
    }

    /// Dequantizes `blocks` consecutive blocks of `kind` at `src` with the scalar references
    /// (``GGMLBlocks``), which the level's compiler vectorises as far as it can.
    @inlinable @inline(__always)
    public static func dequantize(_ src: UnsafeRawPointer, kind: Int32, blocks: Int, into out: UnsafeMutablePointer<Float>) {
        let (bytes, weights) = layout(kind)
        for b in 0..<blocks {
            let p = src + b * bytes, o = out + b * weights
            switch kind {
            case q5_0: GGMLBlocks.dequantizeQ5_0(p, into: o)
            case q4_K: GGMLBlocks.dequantizeQ4_K(p, into: o)
            case q6_K: GGMLBlocks.dequantizeQ6_K(p, into: o)
            case q5_1: GGMLBlocks.dequantizeQ5_1(p, into: o)
            case q2_K: GGMLBlocks.dequantizeQ2_K(p, into: o)
            case q3_K: GGMLBlocks.dequantizeQ3_K(p, into: o)
            default: GGMLBlocks.dequantizeQ5_K(p, into: o)
            }
        }
    }
}

/// Dot product of two Float vectors (two 8-lane accumulators).
@inlinable @inline(__always)
public func dotFloats(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
    var acc0 = SIMD8<Float>(), acc1 = SIMD8<Float>()
    var i = 0
    let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b)
    while i + 16 <= n {
        acc0 += ra.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            * rb.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
        acc1 += ra.loadUnaligned(fromByteOffset: i * 4 + 32, as: SIMD8<Float>.self)
            * rb.loadUnaligned(fromByteOffset: i * 4 + 32, as: SIMD8<Float>.self)
        i += 16
    }
    var sum = (acc0 + acc1).sum()
    while i < n {
        sum += a[i] * b[i]
        i += 1
    }
    return sum
}

/// y[r] = row r · x for rows `rows` of a row-major matrix of ggml blocks of `kind` (`rowBytes`
/// apart, `blocks` per row): each row is dequantized into `scratch` (`blocks` × the block's
/// weights floats), then dotted.
@inlinable @inline(__always)
public func dotRowsDequantizing(
    _ matrix: UnsafeRawPointer, kind: Int32, rowBytes: Int, blocks: Int, x: UnsafePointer<Float>, rows: Range<Int>,
    y: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>
) {
    let n = blocks * GGMLKind.layout(kind).weights
    for r in rows {
        GGMLKind.dequantize(matrix + r * rowBytes, kind: kind, blocks: blocks, into: scratch)
        y[r] = dotFloats(scratch, x, n)
    }
}

/// s[j] = scale · (q · key j) for j in `positions`, key j at `keys + j·stride` as `n` f16.
@inlinable @inline(__always)
public func attentionScoresF16(
    _ q: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim n: Int,
    scale: Float, into s: UnsafeMutablePointer<Float>
) {
    for j in positions {
        let k = (keys + j * stride).assumingMemoryBound(to: UInt16.self)
        var sum: Float = 0
        for i in 0..<n { sum += q[i] * halfToFloat(k[i]) }
        s[j] = sum * scale
    }
}

/// out = Σ_{j in positions} s[j] · value j, value j at `values + j·stride` as `n` f16.
@inlinable @inline(__always)
public func attentionValuesF16(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, positions: ClosedRange<Int>, headDim n: Int,
    into out: UnsafeMutablePointer<Float>
) {
    out.update(repeating: 0, count: n)
    for j in positions {
        let v = (values + j * stride).assumingMemoryBound(to: UInt16.self)
        let w = s[j]
        for i in 0..<n { out[i] += w * halfToFloat(v[i]) }
    }
}

/// e^x for eight lanes: x = n·ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 split in two parts so r is exact
/// to f32 rounding), e^r by its degree-6 Taylor polynomial (truncation error below 2⁻²⁴ on that
/// interval), and 2^n put straight into the exponent bits. Inputs are clamped to ±87.3 so the
/// result stays finite and normal; relative error within a few ulp of `expf`.
@_transparent  // forced inline: an out-of-line copy would run baseline code inside a level's kernel
public func exp8(_ x: SIMD8<Float>) -> SIMD8<Float> {
    // Clamped with lane selects (the generic `clamped` is not always inlined into level modules).
    var clamped = x
    clamped.replace(with: -87.3, where: clamped .< -87.3)
    clamped.replace(with: 87.3, where: clamped .> 87.3)
    let n = (clamped * 1.442_695_04).rounded(.toNearestOrEven)
    let r = clamped - n * 0.693_359_375 + n * 2.121_944_4e-4
    var p = SIMD8<Float>(repeating: 1.0 / 720)
    p = p * r + 1.0 / 120
    p = p * r + 1.0 / 24
    p = p * r + 1.0 / 6
    p = p * r + 0.5
    p = p * r + 1
    p = p * r + 1
    // n (an integer in ±126) to int32 without a lane-by-lane conversion: adding 1.5·2²³ puts
    // it in the low mantissa bits of 0x4B40_0000.
    let biased = unsafeBitCast(n + 12_582_912, to: SIMD8<Int32>.self) &- (0x4B40_0000 - 127)
    let bits = biased &<< 23
    return p * unsafeBitCast(bits, to: SIMD8<Float>.self)
}

/// Sixteen lanes added by halves, not with the generic `sum()`: its specialisation is emitted out
/// of line, and one compiled for a wide level must not be what baseline code links to.
@inlinable @inline(__always)
func laneSum(_ v: SIMD16<Float>) -> Float {
    let eight = v.lowHalf + v.highHalf
    let four = eight.lowHalf + eight.highHalf
    return (four[0] + four[1]) + (four[2] + four[3])
}

/// The parts of log Σ wᵢ·e^(xᵢ) over `n` floats: the largest value m and Σ wᵢ·e^(xᵢ − m), with
/// wᵢ = 1 when `weights` is nil — sixteen lanes at a time (``exp16``: values more than 87 below m
/// add nothing; the tail is padded with −∞). m is −∞ (and the sum 0) when `n` is 0 or every
/// value is −∞; a NaN among the values or the weights makes the sum NaN. With the maxima and
/// sums of ``runStatistics16(_:_:maxima:sums:)`` as `x` and `weights` it combines the runs into
/// the normaliser of the whole vector.
@inlinable @inline(__always)
public func maxAndSumExp(_ x: UnsafePointer<Float>, _ n: Int, weights: UnsafePointer<Float>?) -> (max: Float, sum: Float) {
    @inline(__always) func load(_ p: UnsafePointer<Float>, _ i: Int, pad: Float) -> SIMD16<Float> {
        if i + 16 <= n { return UnsafeRawPointer(p).loadUnaligned(fromByteOffset: 4 * i, as: SIMD16<Float>.self) }
        var tail = SIMD16<Float>(repeating: pad)
        for j in i..<n { tail[j - i] = p[j] }
        return tail
    }
    var most = SIMD16<Float>(repeating: -.infinity)
    var i = 0
    while i < n {
        let v = load(x, i, pad: -.infinity)
        most.replace(with: v, where: v .> most)
        i += 16
    }
    var m = -Float.infinity
    for j in 0..<16 where most[j] > m { m = most[j] }
    guard m > -.infinity else { return (-.infinity, 0) }
    let shift = SIMD16<Float>(repeating: m)
    var sum = SIMD16<Float>()
    i = 0
    while i < n {
        // A NaN value stays NaN through exp16 (its comparisons are false), so the sum turns NaN.
        let e = exp16(load(x, i, pad: -.infinity) - shift)
        if let weights { sum += e * load(weights, i, pad: 0) } else { sum += e }
        i += 16
    }
    return (m, laneSum(sum))
}

/// For each run of 16 floats of `x` (`n` floats; the last run may be shorter): its largest value
/// into `maxima[r]` (NaN counts as −∞) and, when `sums` is given, Σ e^(x − that) into `sums[r]`
/// (0 for a run of −∞; NaN when the run holds a NaN or +∞) — one pass. The maxima let a sampler
/// skip the runs of a vocabulary that cannot hold its pick; with the sums,
/// ``maxAndSumExp(_:_:weights:)`` over the runs gives the log-probability normaliser.
@inlinable @inline(__always)
public func runStatistics16(
    _ x: UnsafePointer<Float>, _ n: Int, maxima: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>?
) {
    let raw = UnsafeRawPointer(x)
    var i = 0
    while i < n {
        var v: SIMD16<Float>
        if i + 16 <= n {
            v = raw.loadUnaligned(fromByteOffset: 4 * i, as: SIMD16<Float>.self)
        } else {
            v = SIMD16<Float>(repeating: -.infinity)
            for j in i..<n { v[j - i] = x[j] }
        }
        var clean = v
        clean.replace(with: -.infinity, where: v .!= v)
        var half = clean.lowHalf
        half.replace(with: clean.highHalf, where: clean.highHalf .> half)
        var quarter = half.lowHalf
        quarter.replace(with: half.highHalf, where: half.highHalf .> quarter)
        var m = quarter[0]
        for j in 1..<4 where quarter[j] > m { m = quarter[j] }
        maxima[i / 16] = m
        if let sums {
            // Every lane −∞ (or NaN): nothing to add, unless a NaN is there to spread.
            sums[i / 16] = m > -.infinity ? laneSum(exp16(v - SIMD16(repeating: m))) : any(v .!= v) ? .nan : 0
        }
        i += 16
    }
}

/// x ← GELU(x) with the tanh approximation, written as x·σ(2u) = x / (1 + e^(−2u)),
/// u = √(2/π)·(x + 0.044715·x³) — the same function as 0.5·x·(1 + tanh u) — or, `silu`,
/// x ← x / (1 + e^(−x)); eight lanes at a time, the tail one by one.
@inlinable @inline(__always)
public func sigmoidActivation(_ x: UnsafeMutablePointer<Float>, _ n: Int, silu: Bool) {
    @inline(__always) func apply(_ v: SIMD8<Float>) -> SIMD8<Float> {
        let t = silu ? -v : -1.595_769_12 * (v + 0.044715 * v * v * v)
        return v / (1 + exp8(t))
    }
    var i = 0
    let raw = UnsafeMutableRawPointer(x)
    while i + 8 <= n {
        raw.storeBytes(of: apply(raw.loadUnaligned(fromByteOffset: 4 * i, as: SIMD8<Float>.self)), toByteOffset: 4 * i, as: SIMD8<Float>.self)
        i += 8
    }
    if i < n {
        var tail = SIMD8<Float>()
        for j in i..<n { tail[j - i] = x[j] }
        let out = apply(tail)
        for j in i..<n { x[j] = out[j - i] }
    }
}

/// Quantizes one row of `x` (`cols` floats, a multiple of 256) to 8-bit super-blocks of 256:
/// D = max|x| / 127 per super-block (`scales`), q = x·(1/D) rounded half away from zero
/// (exactly, as t + trunc(2·(s − t)) with t = trunc(s); NaN gives −127, as the vector
/// conversion's integer indefinite clamped), and Σq per 32 columns (`sums`) and per 16
/// (`halfSums`) — the activations
/// of the `amx` level's K-quant product (HearthKernels' `QuantizedActivations.superQuants`).
@inlinable @inline(__always)
public func quantizeSuperBlockRow(
    _ x: UnsafePointer<Float>, cols: Int, quants: UnsafeMutablePointer<Int8>, scales: UnsafeMutablePointer<Float>,
    sums: UnsafeMutablePointer<Int16>, halfSums: UnsafeMutablePointer<Int16>
) {
    for sb in 0..<(cols / 256) {
        let src = x + 256 * sb
        var amax: Float = 0
        for i in 0..<256 { amax = max(amax, abs(src[i])) }
        let d = amax / 127
        let id: Float = d != 0 ? 1 / d : 0
        for j in 0..<16 {
            var sum: Int32 = 0
            for i in (16 * j)..<(16 * j + 16) {
                let s = src[i] * id
                var q: Int32 = -127
                if !s.isNaN && abs(s) < 2_147_483_520 {
                    let t = Int32(s)
                    q = max(-127, min(127, t + Int32(2 * (s - Float(t)))))
                }
                quants[256 * sb + i] = Int8(truncatingIfNeeded: q)
                sum += q
            }
            halfSums[16 * sb + j] = Int16(truncatingIfNeeded: sum)
        }
        for j in 0..<8 {
            sums[8 * sb + j] = halfSums[16 * sb + 2 * j] &+ halfSums[16 * sb + 2 * j + 1]
        }
        scales[sb] = d
    }
}
