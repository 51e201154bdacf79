import HearthKernelsCommon

/// The outlier activations of an 8-bit quantization (``QuantizedActivations/outlierChannels``):
/// each token's few largest-magnitude values, left out of its 8-bit blocks and multiplied by
/// the weights in f32 (``addOutlierProducts(_:act:groups:y:ldy:level:)``).
///
/// Why: a block of 32 activations shares one 8-bit scale, so one very large value (a few hidden
/// channels of most models carry them) leaves the other 31 with coarse steps. Picked out, the
/// block's scale comes from the rest, and the picked values lose nothing (docs/ACCURACY.md,
/// "Outlier channels").
///
/// `@unchecked Sendable`: filled before a matmul's parallel region (each worker writes its own
/// rows' picks), indexed once, then only read by the workers.
package final class OutlierPicks: @unchecked Sendable {
    /// Picks per row of the last quantization (0: none; at most ``capacityPerRow``).
    package internal(set) var count = 0
    /// The most picks a row can hold.
    package let capacityPerRow: Int
    /// Column of pick i of row r, at `r·count + i` (largest magnitude first).
    package let columns: UnsafeMutablePointer<Int32>
    /// Value of pick i of row r (the activation as it was, in f32; 0 for a placeholder), at `r·count + i`.
    package let values: UnsafeMutablePointer<Float>
    /// After ``index(rows:cols:)``: the columns any row picked, ascending (``slots`` of them) —
    /// the kernels decode each one's weights once per 16 rows into a table of this order.
    package let slotColumns: UnsafeMutablePointer<Int32>
    /// After ``index(rows:cols:)``: each column's place in ``slotColumns`` (undefined for
    /// columns no row picked).
    package let columnSlots: UnsafeMutablePointer<Int32>
    /// How many columns ``slotColumns`` holds.
    package private(set) var slots = 0

    init(maxRows: Int, maxCols: Int, perRow: Int) {
        capacityPerRow = perRow
        let n = max(1, maxRows) * perRow
        columns = .allocate(capacity: n)
        columns.initialize(repeating: 0, count: n)
        values = .allocate(capacity: n)
        values.initialize(repeating: 0, count: n)
        slotColumns = .allocate(capacity: maxCols)
        slotColumns.initialize(repeating: 0, count: maxCols)
        columnSlots = .allocate(capacity: maxCols)
        columnSlots.initialize(repeating: 0, count: maxCols)
    }

    deinit {
        columns.deallocate()
        values.deallocate()
        slotColumns.deallocate()
        columnSlots.deallocate()
    }

    /// Lists the columns the picks of `rows` rows of `cols` columns use (``slotColumns``,
    /// ``columnSlots``), for the kernels that decode each once per 16 weight rows.
    package func index(rows: Int, cols: Int) {
        columnSlots.update(repeating: -1, count: cols)
        for i in 0..<(rows * count) { columnSlots[Int(columns[i])] = 0 }
        slots = 0
        for c in 0..<cols where columnSlots[c] == 0 {
            columnSlots[c] = Int32(slots)
            slotColumns[slots] = Int32(c)
            slots += 1
        }
    }
}

/// Writes the columns of the `count` largest |x[c]| of `x` (`cols` values) into `columns`,
/// largest first (the lower column first among equal magnitudes; NaN never picked), and returns
/// how many it found: fewer than `count` only when fewer values are not NaN (the rest of
/// `columns` then holds placeholder columns, which may repeat found ones). Only the 32-column
/// blocks `b` for which `searched(b)` holds are read, and only magnitudes above `minimum` kept
/// (a lower bound of the answer's smallest, when the caller knows one). `count` ≤ `cols`.
@inline(__always)
func largestMagnitudes(
    _ x: UnsafePointer<Float>, cols: Int, count: Int, into columns: UnsafeMutablePointer<Int32>, above minimum: Float = -1,
    searched: (Int) -> Bool = { _ in true }
) -> Int {
    withUnsafeTemporaryAllocation(of: Float.self, capacity: count) { buffer -> Int in
        guard let mags = buffer.baseAddress else { return 0 }
        mags.initialize(repeating: -1, count: count)
        for i in 0..<count { columns[i] = Int32(i) }
        var floor = minimum  // the smallest kept magnitude
        for b in 0..<(cols / 32) where searched(b) {
            for c in (32 * b)..<(32 * b + 32) {
                let m = abs(x[c])
                guard m > floor else { continue }
                var i = count - 1
                while i > 0 && mags[i - 1] < m {
                    mags[i] = mags[i - 1]
                    columns[i] = columns[i - 1]
                    i -= 1
                }
                mags[i] = m
                columns[i] = Int32(c)
                floor = mags[count - 1]
            }
        }
        var found = 0
        while found < count && mags[found] >= 0 { found += 1 }
        return found
    }
}

/// The `k`-th largest of `count` values (1 ≤ `k` ≤ `count`; NaN counts as smallest).
@inline(__always)
func kthLargest(_ v: UnsafePointer<Float>, count: Int, k: Int) -> Float {
    withUnsafeTemporaryAllocation(of: Float.self, capacity: k) { buffer -> Float in
        guard let top = buffer.baseAddress else { return -.infinity }
        top.initialize(repeating: -.infinity, count: k)
        for j in 0..<count {
            let x = v[j]
            guard x > top[k - 1] else { continue }
            var i = k - 1
            while i > 0 && top[i - 1] < x {
                top[i] = top[i - 1]
                i -= 1
            }
            top[i] = x
        }
        return top[k - 1]
    }
}

/// y[t·ldy + row] += Σ over token t's outlier picks (c, v) of v · W[row][c], for the rows of the
/// 16-row groups `groups` and the `batch` rows of the last quantization: the f32 share of an
/// 8-bit product whose quantization picked outliers (``QuantizedActivations/outlierChannels``),
/// after the integer kernel has written y. The weights of every picked column are decoded once
/// per 16-row group into a table in `scratch` (`scratchFloats` floats: the kernel needs at
/// least 16·(``OutlierPicks/slots`` + 1) and takes groups eight at a time when it holds them);
/// then each token sums its picks' products in registers (in pick order, so a token's result
/// never depends on its batch) and adds them to its outputs once. With `level`'s kernel
/// (AVX-512 VNNI: the picked columns' weight vectors decoded in registers; below it, or with too little scratch, the
/// portable reference, ``addOutlierProductsPortable(_:picks:batch:groups:y:ldy:)``).
package func addOutlierProducts(
    _ w: WeightMatrix, act: QuantizedActivations, batch: Int, groups: Range<Int>, y: UnsafeMutablePointer<Float>, ldy: Int,
    scratch: UnsafeMutablePointer<Float>, scratchFloats: Int, level: KernelLevel = .current
) {
    guard act.outliers.count > 0 else { return }
    KernelTable.at(level).addOutlierProducts(w, act.outliers, batch, groups, y, ldy, scratch, scratchFloats)
}

/// The portable (reference) form of ``addOutlierProducts(_:act:batch:groups:y:ldy:scratch:scratchFloats:level:)``: the
/// tiles holding picked columns dequantized row by row (``dequantizeInterleaved``) into the
/// column table, then each token's picks summed in f32.
package func addOutlierProductsPortable(
    _ w: WeightMatrix, picks: OutlierPicks, batch: Int, groups: Range<Int>, y: UnsafeMutablePointer<Float>, ldy: Int
) {
    let k = picks.count, slots = picks.slots
    guard k > 0, slots > 0, w.layout == .interleaved16 else { return }
    let blockSize = w.dtype.blockSize
    withUnsafeTemporaryAllocation(of: Float.self, capacity: 16 * blockSize + 16 * slots) { buffer in
        guard let rowsBuffer = buffer.baseAddress else { return }
        let table = rowsBuffer + 16 * blockSize
        for g in groups {
            let rowsHere = min(16, w.rows - g * 16)
            var decoded = -1  // the block column in rowsBuffer
            for s in 0..<slots {
                let c = Int(picks.slotColumns[s]), b = c / blockSize
                if b != decoded {
                    for r in 0..<rowsHere {
                        dequantizeInterleaved(w.tile(group: g, block: b), dtype: w.dtype, row: r, into: rowsBuffer + r * blockSize)
                    }
                    decoded = b
                }
                for r in 0..<16 { table[16 * s + r] = r < rowsHere ? rowsBuffer[r * blockSize + c % blockSize] : 0 }
            }
            for t in 0..<batch {
                var sum = SIMD16<Float>()  // in registers: no allocation per token
                for i in 0..<k {
                    let p = t * k + i, s = Int(picks.columnSlots[Int(picks.columns[p])]), v = picks.values[p]
                    for r in 0..<16 { sum[r] += v * table[16 * s + r] }
                }
                let out = y + t * ldy + g * 16
                for r in 0..<rowsHere { out[r] += sum[r] }
            }
        }
    }
}
