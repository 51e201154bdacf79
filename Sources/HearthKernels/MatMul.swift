import HearthKernelsCommon

/// How batched products over quantized weights are computed.
package enum QuantizedBatchPath: String, Sendable, CaseIterable {
    /// 8-bit activations × quantized weights with integer dot products (the fast path).
    case integer
    /// Dequantize slabs of rows to Float and multiply with BLAS `sgemm`.
    case sgemm
}

/// Per-thread scratch memory for matrix products, sized once and reused every token.
///
/// `@unchecked Sendable`: worker `i` only ever touches slab `i`; the activation buffer is
/// written before a parallel region and only read inside it.
package final class MatMulScratch: @unchecked Sendable {
    /// Rows dequantized at once by one worker for a batched BLAS product.
    package let slabRows: Int
    /// Widest input dimension the scratch supports.
    package let maxCols: Int
    /// Quantized copies of the input vectors.
    package let activations: QuantizedActivations
    /// Which path batched products over quantized weights take.
    package var quantizedBatchPath: QuantizedBatchPath = .integer
    private let slabs: [UnsafeMutablePointer<Float>]

    /// Allocates `threads` slabs of `slabRows × maxCols` floats and room for `maxBatch`
    /// quantized input vectors.
    package init(threads: Int, maxCols: Int, maxBatch: Int = 1, slabRows: Int = 128) {
        self.slabRows = slabRows
        self.maxCols = maxCols
        activations = QuantizedActivations(maxRows: max(1, maxBatch), maxCols: maxCols)
        slabs = (0..<max(1, threads)).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: slabRows * maxCols)
            p.initialize(repeating: 0, count: slabRows * maxCols)
            return p
        }
    }

    deinit { for s in slabs { s.deallocate() } }

    /// The slab of worker `worker`.
    package func slab(_ worker: Int) -> UnsafeMutablePointer<Float> { slabs[worker] }
}

/// y = x · Wᵀ for a batch: `x` is `(batch, w.cols)`, `y` is `(batch, w.rows)` with rows
/// `ldy` floats apart (default `w.rows`), both row-major.
///
/// Rows of W are split across the pool's workers. Quantized weights (interleaved layout)
/// take the integer path: x is quantized once to 8-bit blocks, then every weight byte is
/// read once per token tile. Float weights use a SIMD dot for one vector and BLAS `sgemm`
/// on dequantized slabs for a batch; 16-bit float weights take the level's f16 rows kernel
/// for batches of up to 16 (each row of y then equals the one-vector product bit for bit).
///
/// `level` (default ``KernelLevel/current``) picks another level's kernels (``KernelTable``), for tests.
package func matmul(
    _ w: WeightMatrix, x: UnsafePointer<Float>, batch: Int, y: UnsafeMutablePointer<Float>, ldy: Int? = nil,
    pool: WorkerPool, scratch: MatMulScratch, level: KernelLevel = .current
) {
    let ldy = ldy ?? w.rows
    let kernels = KernelTable.at(level)
    if w.layout == .interleaved16 && (batch == 1 || scratch.quantizedBatchPath == .integer) {
        let act = quantizedInput(w, x: x, batch: batch, pool: pool, scratch: scratch, kernels: kernels)
        // With outlier picks (8-bit activations, QuantizedActivations.outlierChannels), their f32
        // products are added to the groups the worker has just written.
        let outliers = act.outliers.count > 0, slabFloats = scratch.slabRows * scratch.maxCols
        pool.parallelChunks((w.rows + 15) / 16) { groups, worker in
            kernels.quantizedMatMul(w, act, batch, groups, y, ldy)
            if outliers { kernels.addOutlierProducts(w, act.outliers, batch, groups, y, ldy, scratch.slab(worker), slabFloats) }
        }
        return
    }
    if w.dtype == .f16, w.layout == .rows, batch <= smallBatch16 {
        // One row of x or a few (a decode step of several sequences, a speculative verification):
        // each weight row converted once into the worker's scratch (in cache), then dotted with
        // every row of x — the matrix is read once, as for one row, not converted slab by slab for sgemm.
        let dotRows = kernels.dotRowsF16
        pool.parallelChunks(w.rows, granularity: 16) { rows, worker in
            dotRows(w.data, w.rowBytes, w.cols, x, batch, rows, y, ldy, scratch.slab(worker))
        }
        return
    }
    if batch == 1 {
        pool.parallelChunks(w.rows, granularity: 16) { rows, worker in
            matvecRows(w, x: x, y: y, rows: rows, scratch: scratch.slab(worker), kernels: kernels)
        }
        return
    }
    // Split rows in slabs so each worker dequantizes `slabRows` rows at most at a time.
    let toFloats = floatRowConverter(w, kernels)
    pool.run { worker in
        let per = (w.rows + pool.threadCount - 1) / pool.threadCount
        let start = min(w.rows, worker * per)
        let end = min(w.rows, start + per)
        var r = start
        while r < end {
            let n = min(scratch.slabRows, end - r)
            let b: UnsafePointer<Float>
            if w.dtype == .f32 && w.layout == .rows {
                b = w.row(r).assumingMemoryBound(to: Float.self)
            } else {
                let slab = scratch.slab(worker)
                for i in 0..<n { toFloats(r + i, slab + i * w.cols) }
                b = UnsafePointer(slab)
            }
            BLAS.sgemm(
                m: batch, n: n, k: w.cols, a: x, lda: w.cols, b: b, ldb: w.cols, transposeB: true,
                c: y + r, ldc: ldy, level: level)
            r += n
        }
    }
}

/// `x` quantized once for a product with interleaved weights `w` (into the scratch's
/// activations, which it returns): one row, or a batch's rows in parallel with their outlier picks
/// indexed.
func quantizedInput(
    _ w: WeightMatrix, x: UnsafePointer<Float>, batch: Int, pool: WorkerPool, scratch: MatMulScratch, kernels: KernelTable
) -> QuantizedActivations {
    let act = scratch.activations, level = kernels.level
    // Super-blocks only with outlier picks (the default path): without them the one scale per
    // 256 columns is set by the largest channel, and Gemma 3's perplexity moved by 2.5%.
    act.superBlocks = act.bits == 8 && act.outlierChannels > 0 && kernels.readsSuperBlocks(w)
    if batch == 1 {
        act.quantize(x, rows: 1, cols: w.cols, level: level)
    } else {
        act.prepareOutliers()
        pool.parallelFor(batch) { rows in
            act.quantizeRows(x, rows: rows, cols: w.cols, level: level)
        }
        if act.outliers.count > 0 { act.outliers.index(rows: batch, cols: w.cols) }
    }
    return act
}

/// Converts row r of `w` to floats with `kernels` (fetched once: a per-row table lookup costs
/// more than converting a short row).
private func floatRowConverter(_ w: WeightMatrix, _ kernels: KernelTable) -> (Int, UnsafeMutablePointer<Float>) -> Void {
    if w.dtype == .f16 && w.layout == .rows {
        let halfToFloats = kernels.halfToFloats
        return { r, out in halfToFloats(w.row(r), w.cols, out) }
    }
    let level = kernels.level
    return { r, out in w.dequantizeRow(r, into: out, level: level) }
}

/// The most rows of x for which 16-bit float weights are multiplied row by row (each weight row
/// converted once, then dotted with every row of x) rather than converted in slabs for `sgemm`.
let smallBatch16 = 16

/// Matrix–vector product for a range of rows with the kernels of one level: y[r] = W[r] · x.
@inline(__always)
func matvecRows(
    _ w: WeightMatrix, x: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>, rows: Range<Int>,
    scratch: UnsafeMutablePointer<Float>, kernels: KernelTable
) {
    switch w.dtype {
    case .f32:
        for r in rows { y[r] = kernels.dotFloats(w.row(r).assumingMemoryBound(to: Float.self), x, w.cols) }
    case .f16:
        // The level's f16 rows kernel (what `matmul` runs for row-layout f16 weights).
        kernels.dotRowsF16(w.data, w.rowBytes, w.cols, x, 1, rows, y, w.rows, scratch)
    case .bf16:
        for r in rows { y[r] = dotBF16(w.row(r).assumingMemoryBound(to: UInt16.self), x, w.cols) }
    case .q4_0, .q4_1, .q8_0, .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .q8_a:
        // ggml block types (most of a K-quant GGUF file): fused or dequantize-then-dot per level.
        if let kind = w.dtype.ggmlKind {
            kernels.dotRowsGGML(w, kind, x, rows, y, scratch)
            return
        }
        // Row-layout block types without an integer kernel: dequantize each row into the
        // worker's scratch (at least `cols` floats), then a SIMD dot.
        for r in rows {
            w.dequantizeRow(r, into: scratch, level: kernels.level)
            y[r] = kernels.dotFloats(scratch, x, w.cols)
        }
    }
}

/// Dot product of two Float vectors with `level`'s build of ``dotFloats`` (default: the current level's).
@inline(__always)
package func dotF32(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int, level: KernelLevel = .current) -> Float {
    KernelTable.at(level).dotFloats(a, b, n)
}

@inline(__always)
func dotBF16(_ a: UnsafePointer<UInt16>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
    var acc = SIMD8<Float>()
    var i = 0
    while i + 8 <= n {
        let raw = UnsafeRawPointer(a + i).loadUnaligned(as: SIMD8<UInt16>.self)
        let bits = SIMD8<UInt32>(truncatingIfNeeded: raw) &<< 16
        acc += unsafeBitCast(bits, to: SIMD8<Float>.self) * UnsafeRawPointer(b + i).loadUnaligned(as: SIMD8<Float>.self)
        i += 8
    }
    var sum = acc.sum()
    while i < n {
        sum += bfloat16ToFloat(a[i]) * b[i]
        i += 1
    }
    return sum
}
