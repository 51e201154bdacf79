import Foundation

/// Rotary frequencies for one forward call, following transformers' RoPE initialisers so
/// results match the reference to float precision.
struct RoPEFrequencies {
    /// inv_freq[i] for i in 0..<rotaryDims/2.
    let inverseFrequencies: [Float]
    /// Magnitude applied to cos and sin (LongRoPE's attention factor).
    let magnitude: Float
    /// Position divisor (linear scaling).
    let positionScale: Float

    /// Frequencies for a call whose last position is `endPosition - 1`. LongRoPE uses the
    /// short factors while `endPosition` fits the original context, as transformers does.
    init(_ rope: DecoderOptions.RoPE, endPosition: Int) {
        let half = rope.rotaryDims / 2
        var divisors = [Float](repeating: 1, count: half)
        var magnitude: Float = 1
        var positionScale: Float = 1
        switch rope.scaling {
        case .none: break
        case .linear(let factor): positionScale = 1 / factor
        case .longRoPE(let short, let long, let original, let attention):
            divisors = endPosition > original ? long : short
            magnitude = attention
        }
        inverseFrequencies = (0..<half).map { i in
            let exponent = Float(2 * i) / Float(rope.rotaryDims)
            return 1 / (divisors[i] * powf(rope.theta, exponent))
        }
        self.magnitude = magnitude
        self.positionScale = positionScale
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
}
