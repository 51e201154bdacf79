import Foundation
import Testing

@testable import HearthKernels

/// The reductions a sampler runs over a whole vocabulary of logits every token — each run's
/// largest value and Σ e^(x − it), and the log-sum-exp normaliser made from them — at every kernel
/// level against plain loops in Double.
@Suite struct VocabularyReductionTests {
    /// `n` pseudo-random logits in about ±30, with repeats (ties), −∞ and (when `nan`) NaN.
    static func logits(_ n: Int, seed: UInt64, nan: Bool) -> [Float] {
        var state = seed
        return (0..<n).map { i in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let r = state >> 33
            if r % 97 == 0 { return -.infinity }
            if nan, r % 89 == 0 { return .nan }
            if r % 5 == 0 { return 7.25 }  // a tie shared by many ids
            return Float(Int(r % 6000) - 3000) / 100 + Float(i % 3) * 1e-3
        }
    }

    @Test(arguments: [1, 15, 16, 17, 100, 4099, 262_144])
    func runStatisticsAtEveryLevel(count: Int) {
        let x = Self.logits(count, seed: UInt64(count), nan: true)
        let runs = (count + 15) / 16
        var expected = [Float](repeating: -.infinity, count: runs)
        for (i, v) in x.enumerated() where v > expected[i / 16] { expected[i / 16] = v }
        for level in KernelLevel.supported {
            var maxima = [Float](repeating: 0, count: runs)
            var sums = [Float](repeating: 0, count: runs)
            x.withUnsafeBufferPointer { runStatistics($0.baseAddress!, count, maxima: &maxima, sums: &sums, level: level) }
            #expect(maxima == expected, "\(level.rawValue), \(count) floats")
            var alone = [Float](repeating: 0, count: runs)
            x.withUnsafeBufferPointer { runStatistics($0.baseAddress!, count, maxima: &alone, level: level) }
            #expect(alone == expected, "\(level.rawValue), \(count) floats, maxima only")
            for r in 0..<runs {
                let run = x[(16 * r)..<min(count, 16 * r + 16)]
                if run.contains(where: \.isNaN) {
                    #expect(sums[r].isNaN, "\(level.rawValue) run \(r): a NaN must spread to its sum")
                    continue
                }
                let m = Double(expected[r])
                let exact = m == -.infinity ? 0 : run.reduce(0.0) { $0 + exp(Double($1) - m) }
                #expect(abs(Double(sums[r]) - exact) <= 1e-6 * max(1, exact), "\(level.rawValue) run \(r): \(sums[r]) vs \(exact)")
            }
        }
    }

    @Test(arguments: [1, 15, 16, 17, 100, 4099, 262_144])
    func logSumExpAtEveryLevel(count: Int) {
        let x = Self.logits(count, seed: UInt64(count) + 1, nan: false)
        let most = Double(x.max() ?? -.infinity)
        let exact = most + log(x.reduce(0.0) { $0 + exp(Double($1) - most) })
        for level in KernelLevel.supported {
            let value = x.withUnsafeBufferPointer { logSumExp($0.baseAddress!, count, level: level) }
            // A few ulp of each term and of the f32 sum over up to 262,144 terms.
            #expect(abs(Double(value) - exact) <= 2e-6 * max(1, abs(exact)), "\(level.rawValue), \(count): \(value) vs \(exact)")
        }
    }

    @Test func logSumExpEdgeCases() {
        for level in KernelLevel.supported {
            let empty: [Float] = []
            #expect(empty.withUnsafeBufferPointer { logSumExp($0.baseAddress ?? UnsafePointer(bitPattern: 8)!, 0, level: level) } == -.infinity)
            let none = [Float](repeating: -.infinity, count: 40)
            #expect(none.withUnsafeBufferPointer { logSumExp($0.baseAddress!, 40, level: level) } == -.infinity)
            var one = [Float](repeating: -.infinity, count: 33)
            one[32] = 3.5
            #expect(one.withUnsafeBufferPointer { logSumExp($0.baseAddress!, 33, level: level) } == 3.5)
            var broken = [Float](repeating: 1, count: 40)
            broken[20] = .nan
            #expect(broken.withUnsafeBufferPointer { logSumExp($0.baseAddress!, 40, level: level) }.isNaN)
        }
    }
}
