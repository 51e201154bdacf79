import HearthKernelsCommon

/// A batch of activation vectors quantized to 8- or 16-bit blocks of 32 (scale d,
/// q = round(x/d)), the second operand of the integer dot products. Buffers are sized once.
///
/// `@unchecked Sendable`: written by one thread before a matmul, read by all workers during it.
package final class QuantizedActivations: @unchecked Sendable {
    /// Rows (tokens) and columns the buffers hold at most.
    package let maxRows: Int, maxCols: Int
    /// Bits per quantized activation: 16 (`wide`, the default: the kernels' rounding stays far
    /// below the weights') or 8 (`quants`; faster with VNNI, coarser). Set before quantizing;
    /// the kernels read the buffer it names.
    package var bits: Int = 16
    /// int8 quants, `(rows, cols)` (`bits == 8`).
    package let quants: UnsafeMutablePointer<Int8>
    /// int16 quants, `(rows, cols)` (`bits == 16`).
    package let wide: UnsafeMutablePointer<Int16>
    /// Per-block scale, `(rows, cols/32)`.
    package let scales: UnsafeMutablePointer<Float>
    /// Per-block Σq as Float, `(rows, cols/32)` (for the weights' zero-point corrections).
    package let sums: UnsafeMutablePointer<Float>
    /// d·Σq per block, `(rows, cols/32)`, filled for 8-bit activations: the activation factor of
    /// the weights' offset terms, multiplied once per quantization instead of once per product
    /// (the AVX-512 VNNI K-quant kernel).
    package let scaledSums: UnsafeMutablePointer<Float>
    /// d·Σq per 16 columns (d the 32-column block's scale), `(rows, cols/16)`, filled for 8-bit
    /// activations (q6_K's zero point applies per 16-column half, each with its own scale).
    package let scaledHalfSums: UnsafeMutablePointer<Float>
    /// The 8-bit quants, scales and scaled sums of every eight tokens interleaved
    /// (``ActivationPanel``), filled with the 8-bit quants: `(maxRows / 8, cols / 32)` records.
    package let panels: UnsafeMutableRawPointer

    /// Whether an 8-bit quantization also fills the super-block form (``superQuants``): set by
    /// the matmul when its level's kernel for the weights reads that form
    /// (``KernelTable/readsSuperBlocks(_:)``: the K-quants at the `amx` level, with outlier
    /// picks), which then
    /// skips the per-token panels and scaled sums only the 32-column kernels read.
    package var superBlocks = false
    /// 8-bit quants in 256-column super-blocks, `(rows, cols)`: one scale D = max|x| / 127 per
    /// token and super-block (``superScales``), q = round(x / D) half away from zero, the
    /// outlier picks zero as in ``quants``. Filled when ``superBlocks`` is set and `cols` is a
    /// multiple of 256. (Shares memory with ``wide``, unused at 8 bits.)
    package let superQuants: UnsafeMutablePointer<Int8>
    /// D per token and super-block, `(rows, cols/256)`.
    package let superScales: UnsafeMutablePointer<Float>
    /// Σq of ``superQuants`` per 32 columns, `(rows, cols/32)` (|Σq| ≤ 32·127): the activation
    /// side of the K-quants' min terms. (Shares memory with ``scaledSums``.)
    package let superSums: UnsafeMutablePointer<Int16>
    /// Σq of ``superQuants`` per 16 columns, `(rows, cols/16)` (q6_K's zero point, per half
    /// sub-block, in the register kernel for a few tokens). (Shares memory with ``scaledHalfSums``.)
    package let superHalfSums: UnsafeMutablePointer<Int16>

    /// The most outlier channels a token can keep (``outlierChannels``).
    package static let maxOutlierChannels = 16
    /// With 8-bit activations: how many of each token's largest-magnitude values are left out
    /// of its 8-bit blocks (set to zero there, so a block's scale is computed without them) and
    /// multiplied in f32 instead (``OutlierPicks``, ``addOutlierProducts``); 0: none. Set before
    /// quantizing, at most ``maxOutlierChannels``. A token's picks depend on its own values only,
    /// never on the other tokens of its batch.
    package var outlierChannels: Int = 0 {
        didSet { outlierChannels = min(max(0, outlierChannels), Self.maxOutlierChannels) }
    }
    /// The last quantization's outlier picks (filled when ``bits`` is 8 and ``outlierChannels`` > 0).
    package let outliers: OutlierPicks

    package init(maxRows: Int, maxCols: Int) {
        self.maxRows = maxRows
        self.maxCols = maxCols
        outliers = OutlierPicks(maxRows: maxRows, maxCols: maxCols, perRow: Self.maxOutlierChannels)
        quants = .allocate(capacity: maxRows * maxCols)
        quants.initialize(repeating: 0, count: maxRows * maxCols)
        wide = .allocate(capacity: maxRows * maxCols)
        wide.initialize(repeating: 0, count: maxRows * maxCols)
        // The super-block form lives in buffers an 8-bit quantization that fills it leaves
        // unused (the 16-bit quants, the per-32 scaled sums the 32-column kernels read): no
        // memory of its own but its scales.
        superQuants = UnsafeMutablePointer<Int8>(OpaquePointer(wide))
        scales = .allocate(capacity: maxRows * maxCols / 32 + 1)
        scales.initialize(repeating: 0, count: maxRows * maxCols / 32 + 1)
        sums = .allocate(capacity: maxRows * maxCols / 32 + 1)
        sums.initialize(repeating: 0, count: maxRows * maxCols / 32 + 1)
        scaledSums = .allocate(capacity: maxRows * maxCols / 32 + 1)
        scaledSums.initialize(repeating: 0, count: maxRows * maxCols / 32 + 1)
        scaledHalfSums = .allocate(capacity: maxRows * maxCols / 16 + 1)
        scaledHalfSums.initialize(repeating: 0, count: maxRows * maxCols / 16 + 1)
        superSums = UnsafeMutablePointer<Int16>(OpaquePointer(scaledSums))
        superHalfSums = UnsafeMutablePointer<Int16>(OpaquePointer(scaledHalfSums))
        superScales = .allocate(capacity: maxRows * maxCols / 256 + 1)
        superScales.initialize(repeating: 0, count: maxRows * maxCols / 256 + 1)
        let panelBytes = (maxRows + ActivationPanel.tokens - 1) / ActivationPanel.tokens * (maxCols / 32 + 1)
            * ActivationPanel.recordBytes
        panels = .allocate(byteCount: panelBytes, alignment: 64)
        panels.initializeMemory(as: UInt8.self, repeating: 0, count: panelBytes)
    }

    deinit {
        quants.deallocate()
        wide.deallocate()
        scales.deallocate()
        sums.deallocate()
        scaledSums.deallocate()
        scaledHalfSums.deallocate()
        panels.deallocate()
        superScales.deallocate()
    }

    /// Quantized activation `index` (row-major) of the buffer `bits` names, widened.
    @inline(__always)
    package func activation(_ index: Int) -> Int32 { bits == 16 ? Int32(wide[index]) : Int32(quants[index]) }

    /// Quantizes `rows` vectors of `cols` floats (cols a multiple of 32, within capacity).
    package func quantize(_ x: UnsafePointer<Float>, rows: Int, cols: Int, level: KernelLevel = .current) {
        prepareOutliers()
        quantizeRows(x, rows: 0..<rows, cols: cols, level: level)
        if outliers.count > 0 { outliers.index(rows: rows, cols: cols) }
    }

    /// Sets ``OutlierPicks/count`` for the quantization about to run (``outlierChannels`` at 8
    /// bits, else 0). Call before ``quantizeRows(_:rows:cols:level:)`` (which workers run in
    /// parallel and which reads it), then ``OutlierPicks/index(rows:cols:)`` once all rows are done.
    package func prepareOutliers() {
        outliers.count = bits == 8 ? outlierChannels : 0
    }

    /// Quantizes rows `rows` only (workers split a batch between them) to `bits` bits (at 8 bits
    /// leaving out ``OutlierPicks/count`` values per row, as ``prepareOutliers()`` set it), with
    /// `level`'s build (default: the current level's, ``KernelTable``) of
    /// ``quantizeActivationRows16`` / ``quantizeActivationRows``.
    package func quantizeRows(_ x: UnsafePointer<Float>, rows: Range<Int>, cols: Int, level: KernelLevel = .current) {
        let kernels = KernelTable.at(level)
        if bits == 16 {
            kernels.quantizeActivations16(x, rows.lowerBound, rows.upperBound, cols, wide, scales, sums)
            return
        }
        let superRows = superBlocks && cols % 256 == 0
        if outliers.count > 0 {
            quantizeWithoutOutliers(x, rows: rows, cols: cols, kernels: kernels, superRows: superRows)
        } else {
            kernels.quantizeActivations8(x, rows.lowerBound, rows.upperBound, cols, quants, scales, sums)
            if superRows {
                for r in rows { quantizeSuperRow(x + r * cols, row: r, cols: cols, picks: outliers.columns, found: 0, kernels: kernels) }
            }
        }
        if superRows { return }
        fillScaledSums(rows: rows, cols: cols)
        fillPanels(rows: rows, cols: cols)
    }

    /// 8-bit quantization of rows `rows` with each row's ``OutlierPicks/count`` largest-magnitude
    /// values picked out (recorded in ``outliers``) and zero in its blocks: the rows are quantized
    /// whole, the picks sought only in the blocks whose scale (largest magnitude / 127) is among
    /// the row's `count` largest — no other block can hold one — and the blocks holding picks
    /// quantized again without them.
    private func quantizeWithoutOutliers(
        _ x: UnsafePointer<Float>, rows: Range<Int>, cols: Int, kernels: KernelTable, superRows: Bool
    ) {
        let k = outliers.count, blocks = cols / 32
        kernels.quantizeActivations8(x, rows.lowerBound, rows.upperBound, cols, quants, scales, sums)
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 32) { buffer in
            guard let block = buffer.baseAddress else { return }
            for r in rows {
                let src = x + r * cols, rowScales = scales + r * blocks
                let columns = outliers.columns + r * k, values = outliers.values + r * k
                let threshold = kthLargest(rowScales, count: blocks, k: min(k, blocks))
                // The k-th largest magnitude is at least the k-th largest block maximum (127 times
                // its scale, less a hair for the scale's rounding): smaller values are passed over.
                let floor = threshold.isFinite && threshold > 0 ? threshold * 127 * (1 - 1e-5) : -1
                let found = largestMagnitudes(src, cols: cols, count: k, into: columns, above: floor) {
                    !(rowScales[$0] < threshold)  // (a block holding NaN may have a NaN scale: searched)
                }
                for i in 0..<k {
                    // Placeholders (a row of fewer than k values that are not NaN) add nothing.
                    values[i] = i < found ? src[Int(columns[i])] : 0
                }
                for i in 0..<found {
                    let b = Int(columns[i]) / 32
                    if (0..<i).contains(where: { Int(columns[$0]) / 32 == b }) { continue }  // done with an earlier pick
                    block.update(from: src + 32 * b, count: 32)
                    for j in i..<found where Int(columns[j]) / 32 == b { block[Int(columns[j]) % 32] = 0 }
                    kernels.quantizeActivations8(
                        block, 0, 1, 32, quants + r * cols + 32 * b, rowScales + b, sums + r * blocks + b)
                }
                if superRows { quantizeSuperRow(src, row: r, cols: cols, picks: columns, found: found, kernels: kernels) }
            }
        }
    }

    /// Row `r`'s ``superQuants``, ``superScales`` and ``superSums`` from its floats `src`, the
    /// columns `picks[0..<found]` (its outlier picks) left out as zero.
    private func quantizeSuperRow(
        _ src: UnsafePointer<Float>, row r: Int, cols: Int, picks: UnsafePointer<Int32>, found: Int, kernels: KernelTable
    ) {
        let quants = superQuants + r * cols, scales = superScales + r * (cols / 256), sums = superSums + r * (cols / 32)
        let halfSums = superHalfSums + r * (cols / 16)
        guard found > 0 else {
            kernels.quantizeSuperBlocks8(src, cols, quants, scales, sums, halfSums)
            return
        }
        withUnsafeTemporaryAllocation(of: Float.self, capacity: cols) { buffer in
            guard let row = buffer.baseAddress else { return }
            row.update(from: src, count: cols)
            for i in 0..<found { row[Int(picks[i])] = 0 }
            kernels.quantizeSuperBlocks8(row, cols, quants, scales, sums, halfSums)
        }
    }

    /// The slots of rows `rows` in ``panels``.
    private func fillPanels(rows: Range<Int>, cols: Int) {
        let blocks = cols / 32, panelBytes = blocks * ActivationPanel.recordBytes
        for r in rows {
            let j = r % ActivationPanel.tokens
            let panel = panels + r / ActivationPanel.tokens * panelBytes
            for b in 0..<blocks {
                let record = panel + b * ActivationPanel.recordBytes
                let src = UnsafeRawPointer(quants + r * cols + 32 * b)
                for m in 0..<8 {
                    record.storeBytes(of: src.loadUnaligned(fromByteOffset: 4 * m, as: UInt32.self), toByteOffset: 32 * m + 4 * j, as: UInt32.self)
                }
                let i = r * blocks + b
                record.storeBytes(of: scales[i], toByteOffset: ActivationPanel.scales + 4 * j, as: Float.self)
                record.storeBytes(of: scaledSums[i], toByteOffset: ActivationPanel.sums + 4 * j, as: Float.self)
                for h in 0..<2 {
                    let q = quants + r * cols + 32 * b + 16 * h
                    var sum: Int32 = 0
                    for k in 0..<16 { sum &+= Int32(q[k]) }
                    record.storeBytes(of: -32 &* sum, toByteOffset: ActivationPanel.halfSums + 32 * h + 4 * j, as: Int32.self)
                }
            }
        }
    }

    /// ``scaledSums`` and ``scaledHalfSums`` (from the 8-bit quants) of rows `rows`.
    private func fillScaledSums(rows: Range<Int>, cols: Int) {
        let blocks = cols / 32
        for r in rows {
            for b in 0..<blocks {
                let i = r * blocks + b
                scaledSums[i] = scales[i] * sums[i]
                for h in 0..<2 {
                    let q = quants + r * cols + 32 * b + 16 * h
                    var sum: Int32 = 0
                    for k in 0..<16 { sum &+= Int32(q[k]) }
                    scaledHalfSums[2 * i + h] = scales[i] * Float(sum)
                }
            }
        }
    }
}
