import HearthKernelsCommon
#if arch(x86_64)
import HearthKernelsAVX2
import HearthKernelsAVX512
#endif

/// A batch of activation vectors quantized to 8-bit blocks of 32 (scale d, q = round(x/d)),
/// the second operand of the integer dot products. Buffers are sized once.
///
/// `@unchecked Sendable`: written by one thread before a matmul, read by all workers during it.
public final class QuantizedActivations: @unchecked Sendable {
    /// Rows (tokens) and columns the buffers hold at most.
    public let maxRows: Int, maxCols: Int
    /// int8 quants, `(rows, cols)`.
    public let quants: UnsafeMutablePointer<Int8>
    /// Per-block scale, `(rows, cols/32)`.
    public let scales: UnsafeMutablePointer<Float>
    /// Per-block Σq as Float, `(rows, cols/32)` (for the weights' zero-point corrections).
    public let sums: UnsafeMutablePointer<Float>

    public init(maxRows: Int, maxCols: Int) {
        self.maxRows = maxRows
        self.maxCols = maxCols
        quants = .allocate(capacity: maxRows * maxCols)
        quants.initialize(repeating: 0, count: maxRows * maxCols)
        scales = .allocate(capacity: maxRows * maxCols / 32 + 1)
        scales.initialize(repeating: 0, count: maxRows * maxCols / 32 + 1)
        sums = .allocate(capacity: maxRows * maxCols / 32 + 1)
        sums.initialize(repeating: 0, count: maxRows * maxCols / 32 + 1)
    }

    deinit {
        quants.deallocate()
        scales.deallocate()
        sums.deallocate()
    }

    /// Quantizes `rows` vectors of `cols` floats (cols a multiple of 32, within capacity).
    public func quantize(_ x: UnsafePointer<Float>, rows: Int, cols: Int) {
        quantizeRows(x, rows: 0..<rows, cols: cols)
    }

    /// Quantizes rows `rows` only (workers split a batch between them), with the current
    /// kernel level's build of ``quantizeActivationRows``.
    public func quantizeRows(_ x: UnsafePointer<Float>, rows: Range<Int>, cols: Int) {
        #if arch(x86_64)
        switch KernelLevel.current {
        case .avx512, .avx512vnni:
            hearthQuantizeActivationsAVX512(
                x, rowStart: rows.lowerBound, rowEnd: rows.upperBound, cols: cols, quants: quants, scales: scales, sums: sums)
            return
        case .avx2:
            hearthQuantizeActivationsAVX2(
                x, rowStart: rows.lowerBound, rowEnd: rows.upperBound, cols: cols, quants: quants, scales: scales, sums: sums)
            return
        case .portable: break
        }
        #endif
        quantizeActivationRows(x, rows: rows, cols: cols, quants: quants, scales: scales, sums: sums)
    }
}
