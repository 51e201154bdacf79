import Foundation
import Testing

@testable import HearthKernels

/// The vectorised SiLU and tanh-GELU against the formulas in Double.
@Suite struct ActivationTests {
    static let inputs: [Float] = (-2000...2000).map { Float($0) / 100 } + [-100, -90, -88, 0, 88, 90, 100, 1e-8, -1e-8]

    @Test(arguments: [false, true])
    func matchesLibm(silu: Bool) {
        // The common body as compiled for the baseline, then every level's kernel in this process.
        for level in [nil] + KernelLevel.supported {
            var x = Self.inputs
            if let level {
                applyActivation(&x, x.count, gelu: !silu, tanhApproximation: true, level: level)
            } else {
                sigmoidActivation(&x, x.count, silu: silu)
            }
            for (i, v) in Self.inputs.enumerated() {
                let d = Double(v)
                // 0.5·x·(1 + tanh u) = x / (1 + e^(−2u)); the second form does not cancel in the
                // far negative tail (where 1 + tanh u loses every digit even in Double).
                let u = 0.797_884_560_802_865_4 * (d + 0.044715 * d * d * d)
                let exact = silu ? d / (1 + exp(-d)) : (u > -10 ? 0.5 * d * (1 + tanh(u)) : d / (1 + exp(-2 * u)))
                let expected = Float(exact)
                // A few ulp, plus the f32 rounding of the exponent's argument (relative error
                // ≈ |argument|·2⁻²³ in e^argument, as with libm's expf on the same argument).
                let argument = silu ? abs(d) : abs(2 * u)
                let tolerance = Float(4e-6 + 2.4e-7 * argument) * abs(expected) + 1e-35  // below: the clamped tail, zero for any purpose
                #expect(x[i].isFinite, "\(v) at \(level?.rawValue ?? "body")")
                #expect(abs(x[i] - expected) <= tolerance, "silu \(silu) \(level?.rawValue ?? "body") x \(v): \(x[i]) vs \(expected)")
            }
        }
    }

    @Test func exponentialWithinAFewUlp() {
        for v in stride(from: Float(-87), through: 87, by: 0.0137) {
            let e = exp8(SIMD8(repeating: v))[0]
            #expect(abs(e - expf(v)) <= 4e-7 * expf(v), "exp(\(v)) = \(e), expf \(expf(v))")
        }
    }
}
