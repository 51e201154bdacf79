/// A read-only 2-D weight matrix `(rows, cols)` in row-major order, stored in any `DType`,
/// usually pointing into a memory-mapped model file.
///
/// `@unchecked Sendable`: the bytes are immutable for the matrix's lifetime, and `owner`
/// keeps the mapping (or buffer) that holds them alive.
public struct WeightMatrix: @unchecked Sendable {
    /// Output features (one row per output).
    public let rows: Int
    /// Input features.
    public let cols: Int
    /// How the elements are stored.
    public let dtype: DType
    /// The first byte of row 0.
    public let data: UnsafeRawPointer
    /// Keeps the storage alive.
    public let owner: AnyObject?

    /// Wraps existing storage. The caller has validated that `data` holds
    /// `dtype.byteCount(elements: rows * cols)` bytes.
    public init(rows: Int, cols: Int, dtype: DType, data: UnsafeRawPointer, owner: AnyObject?) {
        self.rows = rows
        self.cols = cols
        self.dtype = dtype
        self.data = data
        self.owner = owner
    }

    /// Bytes in one row.
    public var rowBytes: Int { cols / dtype.blockSize * dtype.bytesPerBlock }

    /// Total bytes of the matrix.
    public var byteCount: Int { rowBytes * rows }

    /// Pointer to the start of row `r`.
    @inline(__always)
    public func row(_ r: Int) -> UnsafeRawPointer { data + r * rowBytes }

    /// Writes row `r` as Float into `out` (`cols` elements).
    @inline(__always)
    public func dequantizeRow(_ r: Int, into out: UnsafeMutablePointer<Float>) {
        dequantize(row(r), dtype: dtype, count: cols, into: out)
    }
}

/// Converts `count` elements stored as `dtype` at `src` to Float.
public func dequantize(_ src: UnsafeRawPointer, dtype: DType, count: Int, into out: UnsafeMutablePointer<Float>) {
    switch dtype {
    case .f32:
        out.update(from: src.assumingMemoryBound(to: Float.self), count: count)
    case .f16:
        let h = src.assumingMemoryBound(to: UInt16.self)
        for i in 0..<count { out[i] = halfToFloat(UInt16(littleEndian: h[i])) }
    case .bf16:
        let b = src.assumingMemoryBound(to: UInt16.self)
        for i in 0..<count { out[i] = bfloat16ToFloat(UInt16(littleEndian: b[i])) }
    }
}

/// A matrix owned in memory (used for weights that must be fixed at load time).
public final class OwnedBuffer: @unchecked Sendable {
    /// The bytes; immutable after the initialiser returns.
    public let pointer: UnsafeMutableRawPointer
    /// Size in bytes.
    public let count: Int

    /// Allocates `count` zeroed bytes aligned to 64.
    public init(count: Int) {
        self.count = count
        pointer = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 64)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
    }

    deinit { pointer.deallocate() }
}
