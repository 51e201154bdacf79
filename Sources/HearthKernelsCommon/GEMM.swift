/// Hearth's single-threaded float GEMM, the body every kernel level compiles:
/// C(m×n) = alpha · A(m×k) · op(B) + beta · C, row-major, op(B) = B (k×n) or, with
/// `transposeB`, Bᵀ for B stored (n×k). What the callers of `BLAS.sgemm` get in builds without
/// OpenBLAS (docs/KERNELS.md, "Swift GEMM").
///
/// Register tiling: a 6 × 16 block of C lives in six 16-lane accumulators (six zmm registers at
/// the AVX-512 levels, twelve ymm at AVX2) while k runs; each step loads one 16-column vector of
/// op(B) and broadcasts one element of each of the six rows of A. k goes in blocks of
/// ``gemmDepthBlock`` so a panel of op(B) stays in L1 while every row block of A passes over it;
/// op(B) is read in place when it is B (rows are contiguous) and packed per panel, on the stack,
/// into `panel` (``gemmPanelFloats`` floats the caller provides) when it is Bᵀ or the panel is
/// narrower than 16 columns.
///
/// `fused`: accumulate with `addProduct` (one FMA per vector where the level has FMA). The
/// baseline has no FMA instruction, and there `SIMD16.addProduct` becomes sixteen calls to
/// `fmaf`, so the portable level passes false (a multiply, then an add).
@inlinable @inline(__always)
public func sgemmBody(
    m: Int, n: Int, k: Int,
    a: UnsafePointer<Float>, lda: Int,
    b: UnsafePointer<Float>, ldb: Int, transposeB: Bool,
    c: UnsafeMutablePointer<Float>, ldc: Int,
    alpha: Float, beta: Float, panel: UnsafeMutablePointer<Float>, fused: Bool
) {
    guard m > 0, n > 0 else { return }
    guard k > 0 else {
        for i in 0..<m { for j in 0..<n { c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j] } }
        return
    }
    do {
        var kb = 0
        while kb < k {
            let kc = min(gemmDepthBlock, k - kb)
            // The first depth block applies beta; later ones add to what is in C.
            let scaleC: Float = kb == 0 ? beta : 1
            var jb = 0
            while jb < n {
                let nr = min(16, n - jb)
                let bPanel: UnsafePointer<Float>
                let bStride: Int
                if transposeB || nr < 16 {
                    for p in 0..<kc {
                        let row = panel + p * 16
                        if transposeB {
                            for jj in 0..<nr { row[jj] = b[(jb + jj) * ldb + kb + p] }
                        } else {
                            for jj in 0..<nr { row[jj] = b[(kb + p) * ldb + jb + jj] }
                        }
                        for jj in nr..<16 { row[jj] = 0 }
                    }
                    bPanel = UnsafePointer(panel)
                    bStride = 16
                } else {
                    bPanel = b + kb * ldb + jb
                    bStride = ldb
                }
                var ib = 0
                while ib < m {
                    let mr = min(6, m - ib)
                    sgemmTile(
                        a: a + ib * lda + kb, lda: lda, rows: mr, b: bPanel, ldb: bStride, depth: kc,
                        c: c + ib * ldc + jb, ldc: ldc, columns: nr, alpha: alpha, beta: scaleC, fused: fused)
                    ib += 6
                }
                jb += 16
            }
            kb += kc
        }
    }
}

/// Depth (k) of one block of ``sgemmBody``: a 16-column panel of op(B) is 16 KiB.
public let gemmDepthBlock = 256

/// The floats of the panel buffer ``sgemmBody`` needs.
public let gemmPanelFloats = gemmDepthBlock * 16

/// One 6 × 16 block of C (`rows` ≤ 6 and `columns` ≤ 16 of it stored):
/// C = alpha · A · B + beta · C over `depth`, B given as 16-float rows `ldb` apart.
@inlinable @inline(__always)
public func sgemmTile(
    a: UnsafePointer<Float>, lda: Int, rows: Int, b: UnsafePointer<Float>, ldb: Int, depth: Int,
    c: UnsafeMutablePointer<Float>, ldc: Int, columns: Int, alpha: Float, beta: Float, fused: Bool
) {
    // Rows past the end repeat the last row (computed, never stored).
    let a0 = a, a1 = a + min(1, rows - 1) * lda, a2 = a + min(2, rows - 1) * lda
    let a3 = a + min(3, rows - 1) * lda, a4 = a + min(4, rows - 1) * lda, a5 = a + min(5, rows - 1) * lda
    var c0 = SIMD16<Float>(), c1 = SIMD16<Float>(), c2 = SIMD16<Float>()
    var c3 = SIMD16<Float>(), c4 = SIMD16<Float>(), c5 = SIMD16<Float>()
    let rb = UnsafeRawPointer(b)
    for p in 0..<depth {
        let v = rb.loadUnaligned(fromByteOffset: p * ldb * 4, as: SIMD16<Float>.self)
        if fused {
            c0.addProduct(a0[p], v)
            c1.addProduct(a1[p], v)
            c2.addProduct(a2[p], v)
            c3.addProduct(a3[p], v)
            c4.addProduct(a4[p], v)
            c5.addProduct(a5[p], v)
        } else {
            c0 += v * a0[p]
            c1 += v * a1[p]
            c2 += v * a2[p]
            c3 += v * a3[p]
            c4 += v * a4[p]
            c5 += v * a5[p]
        }
    }
    @inline(__always)
    func store(_ acc: SIMD16<Float>, _ row: Int) {
        let out = c + row * ldc
        if columns == 16 {
            let raw = UnsafeMutableRawPointer(out)
            var result = acc * alpha
            if beta != 0 { result += raw.loadUnaligned(as: SIMD16<Float>.self) * beta }
            raw.storeBytes(of: result, as: SIMD16<Float>.self)
        } else {
            for j in 0..<columns { out[j] = alpha * acc[j] + (beta == 0 ? 0 : beta * out[j]) }
        }
    }
    store(c0, 0)
    if rows > 1 { store(c1, 1) }
    if rows > 2 { store(c2, 2) }
    if rows > 3 { store(c3, 3) }
    if rows > 4 { store(c4, 4) }
    if rows > 5 { store(c5, 5) }
}
