import Foundation
import HearthKernels

/// Rotary frequencies for one forward call, following transformers' RoPE initialisers so
/// results match the reference to float precision.
struct RoPEFrequencies {
    /// inv_freq[i] for i in 0..<rotaryDims/2.
    let inverseFrequencies: [Float]
    /// Magnitude applied to cos and sin (LongRoPE's attention factor).
    let magnitude: Float
    /// Position divisor (linear scaling).
    let positionScale: Float
    let rope: DecoderOptions.RoPE

    /// Frequencies for a call whose last position is `endPosition - 1`. LongRoPE uses the
    /// short factors while `endPosition` fits the original context, as transformers does.
    init(_ rope: DecoderOptions.RoPE, endPosition: Int) {
        self.rope = rope
        let half = rope.rotaryDims / 2
        var base = (0..<half).map { i in 1 / powf(rope.theta, Float(2 * i) / Float(rope.rotaryDims)) }
        var magnitude: Float = 1
        var positionScale: Float = 1
        switch rope.scaling {
        case .none: break
        case .linear(let factor): positionScale = 1 / factor
        case .longRoPE(let short, let long, let original, let attention):
            base = Self.divided(rope, by: endPosition > original ? long : short)
            magnitude = attention
        case .frequencyFactors(let factors):
            base = Self.divided(rope, by: factors)
        case .llama3(let factor, let low, let high, let original):
            let lowWavelength = Float(original) / low
            let highWavelength = Float(original) / high
            for i in 0..<half {
                let wavelength = 2 * Float.pi / base[i]
                if wavelength < highWavelength { continue }
                if wavelength > lowWavelength {
                    base[i] /= factor
                } else {
                    let smooth = (Float(original) / wavelength - low) / (high - low)
                    base[i] = (1 - smooth) * base[i] / factor + smooth * base[i]
                }
            }
        }
        inverseFrequencies = base
        self.magnitude = magnitude
        self.positionScale = positionScale
    }

    /// inv_freq[i] = 1 / (divisors[i] · θ^(2i/rotaryDims)): θ's frequencies each divided by
    /// its own factor (LongRoPE's short or long factors, Llama 3 GGUF files' `rope_freqs`).
    private static func divided(_ rope: DecoderOptions.RoPE, by divisors: [Float]) -> [Float] {
        (0..<rope.rotaryDims / 2).map { i in 1 / (divisors[i] * powf(rope.theta, Float(2 * i) / Float(rope.rotaryDims))) }
    }

    /// Writes cos and sin (half values each) for `position`.
    func fill(position: Int, cos: UnsafeMutablePointer<Float>, sin: UnsafeMutablePointer<Float>) {
        let p = Float(position) * positionScale
        for i in 0..<inverseFrequencies.count {
            let angle = p * inverseFrequencies[i]
            cos[i] = cosf(angle) * magnitude
            sin[i] = sinf(angle) * magnitude
        }
    }

    /// Rotates one head vector in place.
    @inline(__always)
    func apply(_ v: UnsafeMutablePointer<Float>, cos: UnsafePointer<Float>, sin: UnsafePointer<Float>) {
        switch rope.style {
        case .neox: applyRoPENeoX(v, rotaryDims: rope.rotaryDims, cos: cos, sin: sin)
        case .interleaved: applyRoPEInterleaved(v, rotaryDims: rope.rotaryDims, cos: cos, sin: sin)
        }
    }
}
