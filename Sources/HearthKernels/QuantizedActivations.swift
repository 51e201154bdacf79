import HearthKernelsCommon

/// A batch of activation vectors quantized to 8- or 16-bit blocks of 32 (scale d,
/// q = round(x/d)), the second operand of the integer dot products. Buffers are sized once.
///
/// `@unchecked Sendable`: written by one thread before a matmul, read by all workers during it.
public final class QuantizedActivations: @unchecked Sendable {
    /// Rows (tokens) and columns the buffers hold at most.
    public let maxRows: Int, maxCols: Int
    /// Bits per quantized activation: 16 (`wide`, the default: the kernels' rounding stays far
    /// below the weights') or 8 (`quants`; faster with VNNI, coarser). Set before quantizing;
    /// the kernels read the buffer it names.
    public var bits: Int = 16
    /// int8 quants, `(rows, cols)` (`bits == 8`).
    public let quants: UnsafeMutablePointer<Int8>
    /// int16 quants, `(rows, cols)` (`bits == 16`).
    public let wide: UnsafeMutablePointer<Int16>
    /// Per-block scale, `(rows, cols/32)`.
    public let scales: UnsafeMutablePointer<Float>
    /// Per-block Σq as Float, `(rows, cols/32)` (for the weights' zero-point corrections).
    public let sums: UnsafeMutablePointer<Float>
    /// Σq per 16 columns as Float, `(rows, cols/16)`, filled for 8-bit activations (q6_K's
    /// zero point applies per 16-column half, each with its own scale).
    public let halfSums: UnsafeMutablePointer<Float>

    public init(maxRows: Int, maxCols: Int) {
        self.maxRows = maxRows
        self.maxCols = maxCols
        quants = .allocate(capacity: maxRows * maxCols)
        quants.initialize(repeating: 0, count: maxRows * maxCols)
        wide = .allocate(capacity: maxRows * maxCols)
        wide.initialize(repeating: 0, count: maxRows * maxCols)
        scales = .allocate(capacity: maxRows * maxCols / 32 + 1)
        scales.initialize(repeating: 0, count: maxRows * maxCols / 32 + 1)
        sums = .allocate(capacity: maxRows * maxCols / 32 + 1)
        sums.initialize(repeating: 0, count: maxRows * maxCols / 32 + 1)
        halfSums = .allocate(capacity: maxRows * maxCols / 16 + 1)
        halfSums.initialize(repeating: 0, count: maxRows * maxCols / 16 + 1)
    }

    deinit {
        quants.deallocate()
        wide.deallocate()
        scales.deallocate()
        sums.deallocate()
        halfSums.deallocate()
    }

    /// Quantized activation `index` (row-major) of the buffer `bits` names, widened.
    @inline(__always)
    public func activation(_ index: Int) -> Int32 { bits == 16 ? Int32(wide[index]) : Int32(quants[index]) }

    /// Quantizes `rows` vectors of `cols` floats (cols a multiple of 32, within capacity).
    public func quantize(_ x: UnsafePointer<Float>, rows: Int, cols: Int, level: KernelLevel = .current) {
        quantizeRows(x, rows: 0..<rows, cols: cols, level: level)
    }

    /// Quantizes rows `rows` only (workers split a batch between them) to `bits` bits, with
    /// `level`'s build (default: the current level's, ``KernelTable``) of
    /// ``quantizeActivationRows16`` / ``quantizeActivationRows``.
    public func quantizeRows(_ x: UnsafePointer<Float>, rows: Range<Int>, cols: Int, level: KernelLevel = .current) {
        let kernels = KernelTable.at(level)
        if bits == 16 {
            kernels.quantizeActivations16(x, rows.lowerBound, rows.upperBound, cols, wide, scales, sums)
            return
        }
        kernels.quantizeActivations8(x, rows.lowerBound, rows.upperBound, cols, quants, scales, sums)
        fillHalfSums(rows: rows, cols: cols)
    }

    /// ``halfSums`` of rows `rows` from the 8-bit quants.
    private func fillHalfSums(rows: Range<Int>, cols: Int) {
        for r in rows {
            for h in 0..<(cols / 16) {
                let q = quants + r * cols + 16 * h
                var sum: Int32 = 0
                for i in 0..<16 { sum &+= Int32(q[i]) }
                halfSums[r * (cols / 16) + h] = Float(sum)
            }
        }
    }
}
