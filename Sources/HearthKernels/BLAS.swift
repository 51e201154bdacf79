#if canImport(Accelerate)
import Accelerate
#elseif canImport(CBLAS)
import CBLAS
#endif

/// The BLAS bridge: OpenBLAS's CBLAS on Linux, Accelerate on Apple platforms.
/// All matrices are row-major Float.
public enum BLAS {
    /// C(m×n) = alpha · A(m×k) · op(B) + beta · C, where op(B) is B(k×n) or, with
    /// `transposeB`, Bᵀ for B stored as (n×k).
    public static func sgemm(
        m: Int, n: Int, k: Int,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int, transposeB: Bool,
        c: UnsafeMutablePointer<Float>, ldc: Int,
        alpha: Float = 1, beta: Float = 0
    ) {
        guard m > 0, n > 0, k > 0 else { return }
        #if canImport(Accelerate) || canImport(CBLAS)
        cblas_sgemm(
            CblasRowMajor, CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans,
            blasInt(m), blasInt(n), blasInt(k), alpha, a, blasInt(lda), b, blasInt(ldb), beta, c, blasInt(ldc))
        #else
        for i in 0..<m {
            for j in 0..<n {
                var sum: Float = 0
                for p in 0..<k { sum += a[i * lda + p] * (transposeB ? b[j * ldb + p] : b[p * ldb + j]) }
                c[i * ldc + j] = alpha * sum + (beta == 0 ? 0 : beta * c[i * ldc + j])
            }
        }
        #endif
    }

    /// Asks BLAS to use one thread per call: Hearth parallelises above BLAS with its own pool.
    public static func useSingleThread() {
        #if canImport(CBLAS) && !canImport(Accelerate)
        openblas_set_num_threads(1)
        #endif
    }

    #if canImport(Accelerate)
    @inline(__always) private static func blasInt(_ v: Int) -> Int32 { Int32(v) }
    #else
    @inline(__always) private static func blasInt(_ v: Int) -> Int32 { Int32(truncatingIfNeeded: v) }
    #endif
}
