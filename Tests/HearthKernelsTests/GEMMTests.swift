import Testing

@testable import HearthKernels

/// Hearth's Swift GEMM (the BLAS products of builds without OpenBLAS) against its scalar
/// reference, at every kernel level this CPU runs, over shapes that hit every edge of the
/// 6 × 16 register tile and of the 256-deep blocks.
@Suite struct GEMMTests {
    static func values(_ count: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 2_000_000) / 1_000_000 - 1
        }
    }

    struct Shape: CustomTestStringConvertible, Sendable {
        var m: Int, n: Int, k: Int, transposeB: Bool, alpha: Float, beta: Float
        var testDescription: String { "\(m)×\(n)×\(k)\(transposeB ? " Bᵀ" : "") α\(alpha) β\(beta)" }
    }

    static let shapes: [Shape] = {
        var shapes: [Shape] = []
        for (m, n, k) in [(1, 1, 1), (6, 16, 8), (7, 17, 3), (5, 15, 255), (13, 40, 256), (12, 32, 257), (1, 100, 600),
                          (33, 9, 64), (64, 64, 513)] {
            for transposeB in [false, true] {
                shapes.append(Shape(m: m, n: n, k: k, transposeB: transposeB, alpha: 1, beta: 0))
            }
        }
        shapes.append(Shape(m: 8, n: 20, k: 300, transposeB: true, alpha: 0.125, beta: 0))
        shapes.append(Shape(m: 9, n: 33, k: 270, transposeB: false, alpha: -2, beta: 0.5))
        shapes.append(Shape(m: 7, n: 16, k: 40, transposeB: true, alpha: 1, beta: 1))
        return shapes
    }()

    @Test(arguments: shapes)
    func gemmMatchesReferenceAtEveryLevel(_ s: Shape) {
        // Leading dimensions wider than the matrices, as the attention and slab call sites use.
        let lda = s.k + 3, ldb = (s.transposeB ? s.k : s.n) + 5, ldc = s.n + 2
        let a = Self.values(s.m * lda, seed: 1), b = Self.values((s.transposeB ? s.n : s.k) * ldb, seed: 2)
        let initial = s.beta == 0 ? [Float](repeating: .nan, count: s.m * ldc) : Self.values(s.m * ldc, seed: 3)
        var reference = initial
        BLAS.gemmReference(
            m: s.m, n: s.n, k: s.k, a: a, lda: lda, b: b, ldb: ldb, transposeB: s.transposeB, c: &reference, ldc: ldc,
            alpha: s.alpha, beta: s.beta)
        // |error| ≤ 1e-5 · Σ|a·b| + 1e-6 (Float accumulation over k terms in a different order).
        var bound = [Float](repeating: 0, count: s.m * s.n)
        for i in 0..<s.m { for j in 0..<s.n {
            var sum: Float = 0
            for p in 0..<s.k { sum += abs(a[i * lda + p] * (s.transposeB ? b[j * ldb + p] : b[p * ldb + j])) }
            bound[i * s.n + j] = 1e-5 * (abs(s.alpha) * sum + abs(s.beta)) + 1e-6
        } }
        for level in KernelLevel.supported {
            var c = initial
            BLAS.gemm(
                m: s.m, n: s.n, k: s.k, a: a, lda: lda, b: b, ldb: ldb, transposeB: s.transposeB, c: &c, ldc: ldc,
                alpha: s.alpha, beta: s.beta, level: level)
            var worst: Float = 0
            for i in 0..<s.m { for j in 0..<s.n {
                let d = abs(c[i * ldc + j] - reference[i * ldc + j])
                if !(d <= bound[i * s.n + j]) { worst = max(worst, d.isNaN ? .infinity : d) }
            } }
            #expect(worst == 0, "\(level): an element is \(worst) from the reference")
            // Padding columns of C are never written.
            for i in 0..<s.m { for j in s.n..<ldc {
                #expect(c[i * ldc + j].bitPattern == initial[i * ldc + j].bitPattern, "\(level) wrote padding")
            } }
        }
    }
}
