#if canImport(Accelerate)
import Accelerate
#elseif SystemLibraries && canImport(CBLAS)
import CBLAS
#endif
import Foundation
import HearthKernelsCommon

/// The BLAS bridge: Accelerate on Apple platforms; on Linux OpenBLAS's CBLAS with the
/// `SystemLibraries` trait, else Hearth's own Swift GEMM.
/// All matrices are row-major Float.
///
/// `HEARTH_BLAS=hearth` in the environment makes a build that links a system BLAS run Hearth's
/// own GEMM instead, the code a build without the trait runs — so one build can run its tests
/// both ways (CI does: docs/PLATFORMS.md). Any other value is the default.
package enum BLAS {
    /// Whether `HEARTH_BLAS=hearth` asks for Hearth's own GEMM where a system BLAS is linked.
    package static let ownGEMMForced: Bool = ProcessInfo.processInfo.environment["HEARTH_BLAS"] == "hearth"

    /// C(m×n) = alpha · A(m×k) · op(B) + beta · C, where op(B) is B(k×n) or, with
    /// `transposeB`, Bᵀ for B stored as (n×k). `level` (default ``KernelLevel/current``) picks
    /// the kernel level of Hearth's own GEMM; a system BLAS chooses its own code.
    package static func sgemm(
        m: Int, n: Int, k: Int,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int, transposeB: Bool,
        c: UnsafeMutablePointer<Float>, ldc: Int,
        alpha: Float = 1, beta: Float = 0, level: KernelLevel = .current
    ) {
        guard m > 0, n > 0, k > 0 else { return }
        #if canImport(Accelerate) || (SystemLibraries && canImport(CBLAS))
        #if canImport(Accelerate)
        let own = ownGEMMForced
        #else
        let own = ownGEMMForced || (!systemGEMMIsWide && level >= .avx2)
        #endif
        if own {
            gemm(
                m: m, n: n, k: k, a: a, lda: lda, b: b, ldb: ldb, transposeB: transposeB, c: c, ldc: ldc, alpha: alpha,
                beta: beta, level: level)
            return
        }
        cblas_sgemm(
            CblasRowMajor, CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans,
            blasInt(m), blasInt(n), blasInt(k), alpha, a, blasInt(lda), b, blasInt(ldb), beta, c, blasInt(ldc))
        #else
        gemm(
            m: m, n: n, k: k, a: a, lda: lda, b: b, ldb: ldb, transposeB: transposeB, c: c, ldc: ldc, alpha: alpha, beta: beta,
            level: level)
        #endif
    }

    /// Whether `sgemm` calls a system BLAS (Accelerate, or OpenBLAS with the `SystemLibraries`
    /// trait, where OpenBLAS runs kernels with AVX2 and FMA or wider, or the CPU has no AVX2) rather than Hearth's own ``gemm(m:n:k:a:lda:b:ldb:transposeB:c:ldc:alpha:beta:level:)``.
    package static var isSystemLibrary: Bool {
        #if canImport(Accelerate)
        return !ownGEMMForced
        #elseif SystemLibraries && canImport(CBLAS)
        return systemGEMMUsed
        #else
        return false
        #endif
    }

    #if SystemLibraries && canImport(CBLAS) && !canImport(Accelerate)
    /// OpenBLAS's kernel sets with 256-bit FMAs or wider. OpenBLAS picks its kernels from the
    /// CPU model and falls back to a generic SSE3 set ("Prescott") for models it does not know —
    /// measured on a Xeon of family 6, model 207 with Debian's OpenBLAS 0.3.21: `hearth
    /// perplexity --prefill-path sgemm` on the default model took 27.5 s, 9.6 s with
    /// `OPENBLAS_CORETYPE=SkylakeX`. Where OpenBLAS runs anything narrower than these on a CPU
    /// with AVX2, ``sgemm(m:n:k:a:lda:b:ldb:transposeB:c:ldc:alpha:beta:level:)`` calls Hearth's
    /// own GEMM instead — unless `OPENBLAS_CORETYPE` is set (a kernel set the user chose).
    static let wideCoreNames: Set<String> = ["haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"]

    /// The kernel set OpenBLAS runs here ("unknown" if it does not say).
    static let coreName: String = openblas_get_corename().map { String(cString: $0) } ?? "unknown"

    /// Whether OpenBLAS's chosen kernels are wide (``wideCoreNames``) or chosen by the user.
    static let systemGEMMIsWide: Bool =
        ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"] != nil || wideCoreNames.contains(coreName.lowercased())

    /// Whether ``sgemm(m:n:k:a:lda:b:ldb:transposeB:c:ldc:alpha:beta:level:)`` calls OpenBLAS at
    /// the current level (`false`: Hearth's own GEMM, OpenBLAS's set being narrower than AVX2 with FMA).
    static var systemGEMMUsed: Bool { !ownGEMMForced && (systemGEMMIsWide || KernelLevel.current < .avx2) }
    #endif

    /// Which GEMM ``sgemm(m:n:k:a:lda:b:ldb:transposeB:c:ldc:alpha:beta:level:)`` runs at the
    /// current kernel level: `"accelerate"`, `"openblas <core>"`, `"hearth (openblas: <core>)"`
    /// (OpenBLAS linked but its kernels narrower than Hearth's) or `"hearth"` (built without
    /// the `SystemLibraries` trait), or `"hearth (HEARTH_BLAS=hearth)"` when the environment
    /// asks for it. `hearth bench --json` reports it.
    package static var backend: String {
        #if canImport(Accelerate) || (SystemLibraries && canImport(CBLAS))
        if ownGEMMForced { return "hearth (HEARTH_BLAS=hearth)" }
        #endif
        #if canImport(Accelerate)
        return "accelerate"
        #elseif SystemLibraries && canImport(CBLAS)
        return systemGEMMUsed ? "openblas \(coreName)" : "hearth (openblas: \(coreName))"
        #else
        return "hearth"
        #endif
    }

    /// Hearth's own GEMM (same contract as ``sgemm(m:n:k:a:lda:b:ldb:transposeB:c:ldc:alpha:beta:level:)``),
    /// single-threaded, register-tiled at each kernel level (`sgemmBody` in HearthKernelsCommon).
    package static func gemm(
        m: Int, n: Int, k: Int,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int, transposeB: Bool,
        c: UnsafeMutablePointer<Float>, ldc: Int,
        alpha: Float = 1, beta: Float = 0, level: KernelLevel = .current
    ) {
        KernelTable.at(level).sgemm(m, n, k, a, lda, b, ldb, transposeB, c, ldc, alpha, beta)
    }

    /// The scalar reference of ``gemm(m:n:k:a:lda:b:ldb:transposeB:c:ldc:alpha:beta:level:)``:
    /// every element a dot product summed in Double.
    package static func gemmReference(
        m: Int, n: Int, k: Int,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int, transposeB: Bool,
        c: UnsafeMutablePointer<Float>, ldc: Int,
        alpha: Float = 1, beta: Float = 0
    ) {
        for i in 0..<m {
            for j in 0..<n {
                var sum: Double = 0
                for p in 0..<k { sum += Double(a[i * lda + p]) * Double(transposeB ? b[j * ldb + p] : b[p * ldb + j]) }
                c[i * ldc + j] = Float(Double(alpha) * sum + (beta == 0 ? 0 : Double(beta) * Double(c[i * ldc + j])))
            }
        }
    }

    /// Asks BLAS to use one thread per call: Hearth parallelises above BLAS with its own pool.
    package static func useSingleThread() {
        #if SystemLibraries && canImport(CBLAS) && !canImport(Accelerate)
        openblas_set_num_threads(1)
        #endif
    }

    #if canImport(Accelerate)
    @inline(__always) private static func blasInt(_ v: Int) -> Int32 { Int32(v) }
    #else
    @inline(__always) private static func blasInt(_ v: Int) -> Int32 { Int32(truncatingIfNeeded: v) }
    #endif
}
