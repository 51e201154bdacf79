import Foundation

/// out = x / sqrt(mean(x²) + eps) · weight, over `dim` elements. `out` may alias `x`.
package func rmsNorm(
    _ x: UnsafePointer<Float>, weight: UnsafePointer<Float>, eps: Float, dim: Int, out: UnsafeMutablePointer<Float>
) {
    var ss: Float = 0
    for i in 0..<dim { ss += x[i] * x[i] }
    let scale = 1 / (ss / Float(dim) + eps).squareRoot()
    for i in 0..<dim { out[i] = x[i] * scale * weight[i] }
}

/// out = (x - mean) / sqrt(var + eps) · weight + bias, over `dim` elements. `out` may alias `x`.
package func layerNorm(
    _ x: UnsafePointer<Float>, weight: UnsafePointer<Float>, bias: UnsafePointer<Float>?, eps: Float, dim: Int,
    out: UnsafeMutablePointer<Float>
) {
    var mean: Float = 0
    for i in 0..<dim { mean += x[i] }
    mean /= Float(dim)
    var variance: Float = 0
    for i in 0..<dim {
        let d = x[i] - mean
        variance += d * d
    }
    let scale = 1 / (variance / Float(dim) + eps).squareRoot()
    for i in 0..<dim { out[i] = (x[i] - mean) * scale * weight[i] + (bias?[i] ?? 0) }
}

/// In-place numerically stable softmax over `n` elements.
package func softmax(_ x: UnsafeMutablePointer<Float>, _ n: Int) {
    guard n > 0 else { return }
    var maxValue = x[0]
    for i in 1..<n where x[i] > maxValue { maxValue = x[i] }
    var sum: Float = 0
    for i in 0..<n {
        let e = expf(x[i] - maxValue)
        x[i] = e
        sum += e
    }
    let inv = 1 / sum
    for i in 0..<n { x[i] *= inv }
}

/// Rotates the first `rotaryDims` of a head vector with the "half-split" (GPT-NeoX) layout:
/// element i pairs with element i + rotaryDims/2. `cos`/`sin` hold rotaryDims/2 values.
@inline(__always)
package func applyRoPENeoX(
    _ v: UnsafeMutablePointer<Float>, rotaryDims: Int, cos: UnsafePointer<Float>, sin: UnsafePointer<Float>
) {
    let half = rotaryDims / 2
    for i in 0..<half {
        let a = v[i], b = v[i + half]
        v[i] = a * cos[i] - b * sin[i]
        v[i + half] = b * cos[i] + a * sin[i]
    }
}

/// x[i] += y[i].
@inline(__always)
package func addInPlace(_ x: UnsafeMutablePointer<Float>, _ y: UnsafePointer<Float>, _ n: Int) {
    for i in 0..<n { x[i] += y[i] }
}

/// Natural-log softmax normaliser: log(Σ exp(x)) over `n` elements, with `level`'s kernels
/// (default: the current level's): one pass for ``runStatistics(_:_:maxima:sums:level:)``, then
/// the runs combined. −∞ when `n` is 0 or every element is −∞; NaN when one is NaN.
package func logSumExp(_ x: UnsafePointer<Float>, _ n: Int, level: KernelLevel = .current) -> Float {
    guard n > 0 else { return -.infinity }
    let runs = (n + 15) / 16
    return withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * runs) { buffer in
        let maxima = buffer.baseAddress.unsafelyUnwrapped
        runStatistics(x, n, maxima: maxima, sums: maxima + runs, level: level)
        return logSumExp(runMaxima: maxima, sums: maxima + runs, runs: runs, level: level)
    }
}

/// log(Σ exp) of a vector from its ``runStatistics(_:_:maxima:sums:level:)``: the largest run
/// maximum M plus log Σ sums[r]·e^(maxima[r] − M).
package func logSumExp(
    runMaxima maxima: UnsafePointer<Float>, sums: UnsafePointer<Float>, runs: Int, level: KernelLevel = .current
) -> Float {
    let (most, sum) = KernelTable.at(level).maxAndSumExp(maxima, runs, sums)
    return most + logf(sum)
}

/// For each run of 16 of the `n` floats of `x` (the last may be shorter): its largest value into
/// `maxima[r]` (NaN counts as −∞) and, when `sums` is given, Σ e^(x − that) into `sums[r]`, for
/// r in 0..<(n + 15) / 16, in one pass with `level`'s kernels (default: the current level's).
package func runStatistics(
    _ x: UnsafePointer<Float>, _ n: Int, maxima: UnsafeMutablePointer<Float>, sums: UnsafeMutablePointer<Float>? = nil,
    level: KernelLevel = .current
) {
    KernelTable.at(level).runStatistics16(x, n, maxima, sums)
}

/// Rotates the first `rotaryDims` of a head vector with the interleaved (GPT-J) layout:
/// element 2i pairs with 2i + 1.
@inline(__always)
package func applyRoPEInterleaved(
    _ v: UnsafeMutablePointer<Float>, rotaryDims: Int, cos: UnsafePointer<Float>, sin: UnsafePointer<Float>
) {
    for i in 0..<(rotaryDims / 2) {
        let a = v[2 * i], b = v[2 * i + 1]
        v[2 * i] = a * cos[i] - b * sin[i]
        v[2 * i + 1] = b * cos[i] + a * sin[i]
    }
}

/// x[i] = act(x[i]) for the MLP activations (SiLU, GELU, tanh-GELU), with `level`'s kernels
/// (default: the current level's).
package func applyActivation(
    _ x: UnsafeMutablePointer<Float>, _ n: Int, gelu: Bool, tanhApproximation: Bool, level: KernelLevel = .current
) {
    if !gelu || tanhApproximation {
        // SiLU and tanh-GELU are both x·σ(·): one vectorised exp per element.
        KernelTable.at(level).sigmoidActivation(x, n, !gelu)
    } else {
        for i in 0..<n { x[i] = 0.5 * x[i] * (1 + erff(x[i] * 0.707_106_78)) }
    }
}
