import HearthKernelsCommon

/// The rows of a weight matrix in groups of 16 (`16g ..< 16g + 16`): the unit ``matmul(_:x:batch:y:ldy:groups:pool:scratch:level:)``
/// computes, and the interleaved layout's tile of rows.
package let matmulGroupRows = 16

/// y = x · Wᵀ like ``matmul(_:x:batch:y:ldy:pool:scratch:level:)``, but only for the rows of W
/// in the 16-row `groups` (ascending, distinct indices `g` for rows `16g ..< 16g + 16`); the
/// other columns of y are left as they were. Each computed value is the one the full product
/// gives, bit for bit: the input is quantized once for the whole product as there, and every
/// group is computed by the same kernel from the same input.
///
/// For an output head under a grammar (most of a 262k vocabulary is not allowed at a JSON
/// structure's or a number's position): the head is most of a small model's weight bytes per
/// token. Float weights taken through BLAS for a batch fall back to the full product.
package func matmul(
    _ w: WeightMatrix, x: UnsafePointer<Float>, batch: Int, y: UnsafeMutablePointer<Float>, ldy: Int? = nil,
    groups: [Int32], pool: WorkerPool, scratch: MatMulScratch, level: KernelLevel = .current
) {
    let ldy = ldy ?? w.rows
    let kernels = KernelTable.at(level)
    let runs = groupRuns(groups, groupCount: (w.rows + matmulGroupRows - 1) / matmulGroupRows)
    guard !runs.isEmpty else { return }
    if w.layout == .interleaved16 && (batch == 1 || scratch.quantizedBatchPath == .integer) {
        let act = quantizedInput(w, x: x, batch: batch, pool: pool, scratch: scratch, kernels: kernels)
        let outliers = act.outliers.count > 0, slabFloats = scratch.slabRows * scratch.maxCols
        forEachRun(runs, pool: pool) { run, worker in
            kernels.quantizedMatMul(w, act, batch, run, y, ldy)
            if outliers { kernels.addOutlierProducts(w, act.outliers, batch, run, y, ldy, scratch.slab(worker), slabFloats) }
        }
        return
    }
    let rowsOf = { (run: Range<Int>) in (run.lowerBound * matmulGroupRows)..<min(w.rows, run.upperBound * matmulGroupRows) }
    if w.dtype == .f16, w.layout == .rows, batch <= smallBatch16 {
        let dotRows = kernels.dotRowsF16
        forEachRun(runs, pool: pool) { run, worker in
            dotRows(w.data, w.rowBytes, w.cols, x, batch, rowsOf(run), y, ldy, scratch.slab(worker))
        }
        return
    }
    if batch == 1 {
        forEachRun(runs, pool: pool) { run, worker in
            matvecRows(w, x: x, y: y, rows: rowsOf(run), scratch: scratch.slab(worker), kernels: kernels)
        }
        return
    }
    matmul(w, x: x, batch: batch, y: y, ldy: ldy, pool: pool, scratch: scratch, level: level)
}

/// The 16-row groups of a `vocabulary`-wide output any of whose ids `allowed` (a bit per id,
/// 64 to a word) admits, ascending.
package func allowedGroups(_ allowed: [UInt64], vocabulary: Int) -> [Int32] {
    var groups: [Int32] = []
    let count = (vocabulary + matmulGroupRows - 1) / matmulGroupRows
    groups.reserveCapacity(min(count, 4096))
    for g in 0..<count {
        let word = g >> 2
        guard word < allowed.count else { break }
        if allowed[word] >> UInt64((g & 3) * 16) & 0xFFFF != 0 { groups.append(Int32(g)) }
    }
    return groups
}

/// `groups` (ascending) as runs of consecutive groups, indices outside `0..<groupCount` dropped.
func groupRuns(_ groups: [Int32], groupCount: Int) -> [Range<Int>] {
    var runs: [Range<Int>] = []
    for g in groups.lazy.map(Int.init) where g >= 0 && g < groupCount {
        if let last = runs.last, last.upperBound == g {
            runs[runs.count - 1] = last.lowerBound..<(g + 1)
        } else if let last = runs.last, last.upperBound > g {
            continue  // out of order or repeated: already covered or skipped
        } else {
            runs.append(g..<(g + 1))
        }
    }
    return runs
}

/// Runs `body` over `runs` on the pool's workers, the runs split so that each worker gets about
/// as many groups (a run may be cut in two).
private func forEachRun(_ runs: [Range<Int>], pool: WorkerPool, _ body: (Range<Int>, Int) -> Void) {
    // Flatten to a count of groups and map each chunk of that count back onto the runs.
    var starts: [Int] = []
    var total = 0
    for run in runs {
        starts.append(total)
        total += run.count
    }
    pool.parallelChunks(total) { chunk, worker in
        // The first run holding the chunk's first group: binary search over the starts.
        var lo = 0, hi = runs.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= chunk.lowerBound { lo = mid } else { hi = mid - 1 }
        }
        var i = lo
        while i < runs.count, starts[i] < chunk.upperBound {
            let from = runs[i].lowerBound + max(0, chunk.lowerBound - starts[i])
            let to = runs[i].lowerBound + min(runs[i].count, chunk.upperBound - starts[i])
            if from < to { body(from..<to, worker) }
            i += 1
        }
    }
}
