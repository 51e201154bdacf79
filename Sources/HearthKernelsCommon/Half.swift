/// IEEE 754 binary16 and bfloat16 conversions written with integer arithmetic, so they work
/// on every platform (Swift's `Float16` is unavailable on macOS x86_64).
///
/// The f16 decode follows the exponent-rebias method: shift the 15 payload bits into
/// float position, add the exponent bias difference, and fix up infinities/NaNs and
/// subnormals separately.
@inlinable @inline(__always)
public func halfToFloat(_ h: UInt16) -> Float {
    let sign = UInt32(h & 0x8000) << 16
    let shifted = UInt32(h & 0x7fff) << 13
    let exponent = shifted & 0x0f80_0000
    let magnitude: Float
    if exponent == 0x0f80_0000 {
        // Inf/NaN: rebias the exponent all the way to 255.
        magnitude = Float(bitPattern: shifted + 0x7000_0000)
    } else if exponent == 0 {
        // Zero or subnormal: let the FPU normalise by subtracting the implicit one.
        magnitude = Float(bitPattern: shifted + 0x3880_0000) - Float(bitPattern: 0x3880_0000)
    } else {
        magnitude = Float(bitPattern: shifted + 0x3800_0000)
    }
    return Float(bitPattern: sign | magnitude.bitPattern)
}

/// Converts a Float to IEEE binary16 with round-to-nearest-even; overflow goes to infinity.
@inlinable @inline(__always)
public func floatToHalf(_ f: Float) -> UInt16 {
    let bits = f.bitPattern
    let sign = UInt16((bits >> 16) & 0x8000)
    let absBits = bits & 0x7fff_ffff
    if absBits >= 0x7f80_0000 {  // Inf or NaN
        return sign | (absBits > 0x7f80_0000 ? 0x7e00 : 0x7c00)
    }
    if absBits >= 0x4780_0000 {  // too large: rounds to infinity (>= 65536)
        return sign | 0x7c00
    }
    if absBits < 0x3880_0000 {  // subnormal half or zero (< 2^-14)
        // Add 0.5 in float space so the FPU rounds the bits we keep.
        let value = Float(bitPattern: absBits) + 0.5
        return sign | UInt16(truncatingIfNeeded: value.bitPattern - Float(0.5).bitPattern)
    }
    let mantissaOdd = (absBits >> 13) & 1
    var rounded = absBits &+ 0xc800_0fff  // rebias exponent (-112 << 23) and add rounding bias
    rounded &+= mantissaOdd
    return sign | UInt16(truncatingIfNeeded: rounded >> 13)
}

/// Decodes a bfloat16 (the top 16 bits of a Float).
@inlinable @inline(__always)
public func bfloat16ToFloat(_ b: UInt16) -> Float {
    Float(bitPattern: UInt32(b) << 16)
}

/// Encodes a Float as bfloat16 with round-to-nearest-even (NaN stays NaN).
@inlinable @inline(__always)
public func floatToBFloat16(_ f: Float) -> UInt16 {
    let bits = f.bitPattern
    if bits & 0x7fff_ffff > 0x7f80_0000 { return UInt16(truncatingIfNeeded: bits >> 16) | 0x40 }
    let rounding = 0x7fff + ((bits >> 16) & 1)
    return UInt16(truncatingIfNeeded: (bits &+ rounding) >> 16)
}
